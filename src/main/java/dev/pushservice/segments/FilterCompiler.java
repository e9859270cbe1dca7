package dev.pushservice.segments;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.segments.Filter.Condition;
import dev.pushservice.segments.Filter.Group;
import dev.pushservice.segments.Filter.Operator;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/**
 * Turns a {@link Filter} into parameterised SQL over a device row {@code d} ({@code devices}) and
 * its user {@code u} ({@code users}): a predicate, plus one {@code LEFT JOIN} of
 * {@code device_event_last} per event kind the filter names (its primary key makes each join match
 * at most one row per device, so no device is counted twice). The one place that knows how
 * filters map to SQL: segment estimates and notification audiences both embed its output, so they
 * always agree.
 *
 * <p>Only fixed SQL text comes from here; every user-supplied value (tag keys, tag values, event
 * names, timestamps, list values) is a named parameter. Callers embed the output like this, with
 * Spring's named parameters ({@code JdbcClient} or {@code NamedParameterJdbcTemplate}: list
 * parameters expand to {@code IN} lists):
 *
 * <pre>{@code
 * Compiled c = compiler.compile(appId, filter);
 * jdbc.sql("select count(*) from devices d join users u on u.id = d.user_id " + c.joins()
 *          + " where d.app_id = :app and d.enabled and d.invalidated_at is null and (" + c.predicate() + ")")
 *     .param("app", appId).params(c.params()).query(Long.class).single();
 * }</pre>
 *
 * <p>When {@link Compiled#usesUser()} is false the predicate does not mention {@code u}, and the
 * join to {@code users} may be replaced by {@code d.user_id is not null} (every active device has a
 * user), which saves a hash join over all users. Why joins rather than {@code EXISTS}: under an
 * {@code any} group PostgreSQL runs a correlated {@code EXISTS} once per device, serially; a hash
 * join reads the event rows once, in parallel.
 *
 * <p>Day windows ({@code within_days}) are resolved to an instant when compiling (start of the day
 * N days ago in the app's time zone), so run the query soon after compiling. To combine several
 * filters in one statement, give each a different prefix: it prefixes parameter names and join
 * aliases. Thread-safe.
 */
@Component
public class FilterCompiler {

    /**
     * Compiled SQL. {@code joins} (possibly empty) goes after the devices/users join, the
     * {@code predicate} into the {@code WHERE} clause, in parentheses; both refer to {@code d} and {@code u}.
     *
     * @param usesUser whether the predicate reads {@code u} (tags, locale or time zone fallback)
     */
    public record Compiled(String joins, String predicate, Map<String, Object> params, boolean usesUser) {
        public Compiled {
            params = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(params));
        }
    }

    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9_]{0,20}");

    private final AppSettingsService settings;
    private final JsonMapper json;

    FilterCompiler(AppSettingsService settings, JsonMapper json) {
        this.settings = settings;
        this.json = json;
    }

    /** Compiles with the parameter prefix {@code sf}. */
    public Compiled compile(UUID appId, Filter filter) {
        return compile(appId, filter, "sf");
    }

    /**
     * Compiles {@code filter} for the app {@code appId} (whose time zone counts days); parameter names
     * are {@code <prefix>_<n>}. {@code prefix} is code, not input: lower-case letters, digits, {@code _}.
     */
    public Compiled compile(UUID appId, Filter filter, String prefix) {
        if (!PREFIX.matcher(prefix).matches()) throw new IllegalArgumentException("bad parameter prefix: " + prefix);
        ZoneId zone = needsZone(filter) ? ZoneId.of(settings.read(appId).timezone()) : ZoneOffset.UTC;
        Builder b = new Builder(prefix, zone, Instant.now(), json);
        String predicate = b.filter(filter);
        String joins = b.eventJoins.entrySet().stream()
                .map(e -> "left join device_event_last " + e.getValue() + " on " + e.getValue() + ".app_id = d.app_id and "
                        + e.getValue() + ".event_key = " + b.param(e.getKey()) + " and " + e.getValue() + ".device_id = d.id")
                .collect(Collectors.joining(" "));
        return new Compiled(joins, predicate, b.params, b.usesUser);
    }

    /** Rough per-row cost rank of evaluating a filter, for ordering the children of a group. */
    private static int cost(Filter f) {
        return switch (f) {
            case Condition c -> switch (c.field().kind()) {
                case PLATFORM, ENABLED, CREATED_AT, LAST_SEEN_AT, APP_VERSION -> 0;
                case EVENT, CUSTOM_EVENT -> 1;
                case LOCALE, TIMEZONE -> 2;
                case TAG -> 3;
            };
            case Group g -> g.children().stream().mapToInt(FilterCompiler::cost).max().orElse(0);
        };
    }

    private static boolean needsZone(Filter f) {
        return switch (f) {
            case Condition c -> c.operator() == Operator.WITHIN_DAYS || c.operator() == Operator.NOT_WITHIN_DAYS;
            case Group g -> g.children().stream().anyMatch(FilterCompiler::needsZone);
        };
    }

    private static final class Builder {
        final String prefix;
        final ZoneId zone;
        final Instant now;
        final JsonMapper json;
        final Map<String, Object> params = new LinkedHashMap<>();
        /** event key → join alias, one join per key however often the filter names it */
        final Map<String, String> eventJoins = new LinkedHashMap<>();
        boolean usesUser;

        Builder(String prefix, ZoneId zone, Instant now, JsonMapper json) {
            this.prefix = prefix;
            this.zone = zone;
            this.now = now;
            this.json = json;
        }

        /** Adds a parameter and returns its placeholder. */
        String param(Object value) {
            String name = prefix + "_" + (params.size() + 1);
            params.put(name, value instanceof Instant i ? OffsetDateTime.ofInstant(i, ZoneOffset.UTC) : value);
            return ":" + name;
        }

        String filter(Filter f) {
            return switch (f) {
                // PostgreSQL evaluates the and/or inside one expression in the order written, stopping
                // early: cheap device columns first, user tags (a jsonb test per row) last
                case Group g -> g.children().stream().sorted(java.util.Comparator.comparingInt(FilterCompiler::cost))
                        .map(this::filter).collect(Collectors.joining(g.all() ? " and " : " or ", "(", ")"));
                case Condition c -> condition(c);
            };
        }

        String condition(Condition c) {
            Operator op = c.operator();
            return switch (c.field().kind()) {
                case PLATFORM -> compare("d.platform", op, c.value());
                case LOCALE -> user(compare("coalesce(d.locale, u.locale)", op, c.value()));
                case TIMEZONE -> user(compare("coalesce(d.timezone, u.timezone)", op, c.value()));
                case ENABLED -> compare("d.enabled", op, c.value());
                case CREATED_AT -> compare("d.created_at", op, c.value());
                case LAST_SEEN_AT -> compare("d.last_seen_at", op, c.value());
                // app_version_key is segment_version_key(app_version), stored: a regex per row costs seconds per million
                case APP_VERSION -> op.isRange()
                        ? "d.app_version_key " + sqlOperator(op) + " segment_version_key(cast(" + param(c.value()) + " as text))"
                        : compare("d.app_version", op, c.value());
                case TAG -> user(tag(c.field().key(), op, c.value()));
                case EVENT -> event(c.field().key(), op, c.value());
                case CUSTOM_EVENT -> event("custom:" + c.field().key(), op, c.value());
            };
        }

        /** {@code neq} and {@code not_in} are the exact negations of {@code eq} and {@code in}: a missing value matches them. */
        String compare(String expr, Operator op, Object value) {
            return switch (op) {
                case EQ -> expr + " = " + param(value);
                case NEQ -> expr + " is distinct from " + param(value);
                case IN -> expr + " in (" + param(value) + ")";
                case NOT_IN -> "(" + expr + " is null or " + expr + " not in (" + param(value) + "))";
                case CONTAINS -> "strpos(" + expr + ", cast(" + param(value) + " as text)) > 0";
                case GT, GTE, LT, LTE -> expr + " " + sqlOperator(op) + " " + param(value);
                case EXISTS -> expr + " is not null";
                case NOT_EXISTS -> expr + " is null";
                case WITHIN_DAYS, NOT_WITHIN_DAYS -> throw new IllegalStateException(op + " on a non-event field");
            };
        }

        String user(String sql) {
            usesUser = true;
            return sql;
        }

        String tag(String key, Operator op, Object value) {
            if (op == Operator.EQ) {
                // containment of a constant is what the GIN index on users.tags (jsonb_path_ops) answers;
                // the document is built by Jackson from the key and value, and bound as one parameter
                return "u.tags @> cast(" + param(json.writeValueAsString(Map.of(key, value))) + " as jsonb)";
            }
            String expr = "(u.tags ->> cast(" + param(key) + " as text))";
            return switch (op) {
                case GT, GTE, LT, LTE -> "segment_tag_number" + expr + " " + sqlOperator(op) + " " + param(value);
                default -> compare(expr, op, value);
            };
        }

        /** Conditions on the event kind's joined row: null when the device never had that event. */
        String event(String key, Operator op, Object value) {
            String e = eventJoins.computeIfAbsent(key, k -> prefix + "_e" + (eventJoins.size() + 1));
            return switch (op) {
                case EXISTS -> e + ".device_id is not null";
                case NOT_EXISTS -> e + ".device_id is null";
                case WITHIN_DAYS -> e + ".last_at >= " + param(since((Integer) value));
                case NOT_WITHIN_DAYS -> "(" + e + ".last_at is null or " + e + ".last_at < " + param(since((Integer) value)) + ")";
                default -> throw new IllegalStateException(op + " on an event field");
            };
        }

        /** Start of the day {@code days} days before today, in the app's time zone: 0 means "today". */
        Instant since(int days) {
            return now.atZone(zone).toLocalDate().minusDays(days).atStartOfDay(zone).toInstant();
        }

        static String sqlOperator(Operator op) {
            return switch (op) {
                case GT -> ">";
                case GTE -> ">=";
                case LT -> "<";
                case LTE -> "<=";
                default -> throw new IllegalStateException(op + " is not a comparison");
            };
        }
    }
}
