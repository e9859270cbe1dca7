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

/**
 * Turns a {@link Filter} into one parameterised SQL predicate over a device row {@code d}
 * ({@code devices}) and its user {@code u} ({@code users}); event conditions become
 * {@code EXISTS} probes of {@code device_event_last}. The one place that knows how filters map to
 * SQL: segment estimates and notification audiences both embed its output, so they always agree.
 *
 * <p>Only fixed SQL text comes from here; every user-supplied value (tag keys, tag values, event
 * names, timestamps, list values) is a named parameter. Callers embed the predicate like this,
 * with Spring's named parameters ({@code JdbcClient} or {@code NamedParameterJdbcTemplate}: list
 * parameters expand to {@code IN} lists):
 *
 * <pre>{@code
 * Compiled c = compiler.compile(appId, filter);
 * jdbc.sql("select count(*) from devices d join users u on u.id = d.user_id"
 *          + " where d.app_id = :app and d.enabled and d.invalidated_at is null and (" + c.sql() + ")")
 *     .param("app", appId).params(c.params()).query(Long.class).single();
 * }</pre>
 *
 * <p>Day windows ({@code within_days}) are resolved to an instant when compiling (start of the day
 * N days ago in the app's time zone), so run the query soon after compiling. To combine several
 * filters in one statement, give each a different parameter prefix. Thread-safe.
 */
@Component
public class FilterCompiler {

    /** The SQL and its named parameters. The SQL refers to {@code d} (devices) and {@code u} (users). */
    public record Compiled(String sql, Map<String, Object> params) {
        public Compiled {
            params = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(params));
        }
    }

    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9_]{0,20}");

    private final AppSettingsService settings;

    FilterCompiler(AppSettingsService settings) {
        this.settings = settings;
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
        Builder b = new Builder(prefix, zone, Instant.now());
        String sql = b.filter(filter);
        return new Compiled(sql, b.params);
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
        final Map<String, Object> params = new LinkedHashMap<>();

        Builder(String prefix, ZoneId zone, Instant now) {
            this.prefix = prefix;
            this.zone = zone;
            this.now = now;
        }

        /** Adds a parameter and returns its placeholder. */
        String param(Object value) {
            String name = prefix + "_" + (params.size() + 1);
            params.put(name, value instanceof Instant i ? OffsetDateTime.ofInstant(i, ZoneOffset.UTC) : value);
            return ":" + name;
        }

        String filter(Filter f) {
            return switch (f) {
                case Group g -> g.children().stream().map(this::filter)
                        .collect(Collectors.joining(g.all() ? " and " : " or ", "(", ")"));
                case Condition c -> condition(c);
            };
        }

        String condition(Condition c) {
            Operator op = c.operator();
            return switch (c.field().kind()) {
                case PLATFORM -> compare("d.platform", op, c.value());
                case LOCALE -> compare("coalesce(d.locale, u.locale)", op, c.value());
                case TIMEZONE -> compare("coalesce(d.timezone, u.timezone)", op, c.value());
                case ENABLED -> compare("d.enabled", op, c.value());
                case CREATED_AT -> compare("d.created_at", op, c.value());
                case LAST_SEEN_AT -> compare("d.last_seen_at", op, c.value());
                case APP_VERSION -> op.isRange()
                        ? "segment_version_key(d.app_version) " + sqlOperator(op)
                          + " segment_version_key(cast(" + param(c.value()) + " as text))"
                        : compare("d.app_version", op, c.value());
                case TAG -> tag(c.field().key(), op, c.value());
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

        String tag(String key, Operator op, Object value) {
            String k = "cast(" + param(key) + " as text)";
            String expr = "(u.tags ->> " + k + ")";
            return switch (op) {
                // containment is what the GIN index on users.tags (jsonb_path_ops) answers
                case EQ -> "u.tags @> jsonb_build_object(" + k + ", cast(" + param(value) + " as text))";
                case GT, GTE, LT, LTE -> "segment_tag_number" + expr + " " + sqlOperator(op) + " " + param(value);
                default -> compare(expr, op, value);
            };
        }

        String event(String key, Operator op, Object value) {
            String probe = "select 1 from device_event_last sf_e where sf_e.app_id = d.app_id and sf_e.event_key = "
                    + param(key) + " and sf_e.device_id = d.id";
            return switch (op) {
                case EXISTS -> "exists (" + probe + ")";
                case NOT_EXISTS -> "not exists (" + probe + ")";
                case WITHIN_DAYS -> "exists (" + probe + " and sf_e.last_at >= " + param(since((Integer) value)) + ")";
                case NOT_WITHIN_DAYS -> "not exists (" + probe + " and sf_e.last_at >= " + param(since((Integer) value)) + ")";
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
