package dev.pushservice.segments;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.segments.Filter.Condition;
import dev.pushservice.segments.Filter.Group;
import dev.pushservice.segments.Filter.Operator;
import java.math.BigDecimal;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/**
 * Turns a {@link Filter} into parameterised SQL over a device row {@code d} ({@code devices}): a
 * predicate, plus the {@code LEFT JOIN}s it reads. The one place that knows how filters map to
 * SQL: segment estimates and notification audiences both embed its output, so they always agree.
 *
 * <p>Only fixed SQL text comes from here; every user-supplied value (tag keys, tag values, event
 * names, timestamps, list values) is a named parameter. Callers embed the output like this, with
 * Spring's named parameters ({@code JdbcClient} or {@code NamedParameterJdbcTemplate}: list
 * parameters expand to {@code IN} lists):
 *
 * <pre>{@code
 * Compiled c = compiler.compile(appId, filter);
 * // in the statement's transaction:
 * jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
 * jdbc.sql("select count(*) from devices d " + c.joins()
 *          + " where d.app_id = :app and d.enabled and d.invalidated_at is null and (" + c.predicate() + ")")
 *     .param("app", appId).params(c.params()).query(Long.class).single();
 * }</pre>
 *
 * <p>The predicate selects a device when the filter is true for it; it must only be used that way
 * (in a {@code WHERE} clause, never negated), which is what lets the forms below treat "unknown"
 * like "false". A device without a user never matches.
 *
 * <p>How each part reads the other tables, and why (measured on 1,000,000 devices, bench/README.md):
 * <ul>
 * <li>Events: one {@code LEFT JOIN} of {@code device_event_last} per event key and day window, the
 * window inside the join condition, so PostgreSQL reads only the rows in the window once, into a
 * parallel hash shared by its workers. Its primary key makes each join match at most one row per
 * device. {@code exists}/{@code within_days} test that the join found a row, {@code not_exists} and
 * {@code not_within_days} that it found none.
 * <li>The device's user (tags, and locale or time zone when the device has none): the set of the
 * app's users that satisfy the condition, {@code d.user_id in (select …)}. Uncorrelated, so
 * PostgreSQL hashes the set once per process and probes it only for the devices that reach the
 * condition: under an {@code any}, a branch that already failed on a device column costs nothing
 * more, where a join would be probed for every device. Under an {@code all} at the top, PostgreSQL
 * turns the same text into a semi-join. PostgreSQL hashes a set only when it expects it to fit in
 * work_mem (else it would re-read the set for every device), hence {@link #WORK_MEM}; when
 * {@code users} holds more than {@value #HASHED_USERS_LIMIT} rows (planner statistics), each set is
 * a {@code LEFT JOIN} instead, which PostgreSQL can spill to disk ({@link UserSets}).
 * <li>An {@code any} group is {@code coalesce((… or …), false)}: PostgreSQL would otherwise copy the
 * device-column parts of the branches into the device scan as an extra filter, evaluating them and
 * building the hashed sets twice.
 * </ul>
 *
 * <p>Day windows ({@code within_days}) are resolved to an instant when compiling (start of the day
 * N days ago in the app's time zone), so run the query soon after compiling. To combine several
 * filters in one statement, give each a different prefix: it prefixes parameter names and aliases.
 * Thread-safe.
 */
@Component
public class FilterCompiler {

    /**
     * Compiled SQL. {@code joins} (possibly empty) goes after {@code devices d}, the {@code predicate}
     * into the {@code WHERE} clause, in parentheses; both refer to {@code d}.
     */
    public record Compiled(String joins, String predicate, Map<String, Object> params) {
        public Compiled {
            params = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(params));
        }
    }

    /** How conditions on the device's user reach {@code users}. */
    enum UserSets {
        /** {@code d.user_id in (select …)}: hashed in memory, probed only where needed (see the class comment) */
        HASHED,
        /** {@code LEFT JOIN (select …)}: probed for every device, but a hash join can spill to disk */
        JOINED,
        /**
         * {@code exists (select … where id = d.user_id …)}: one primary-key probe per device tested, no
         * set built over the app's users; for statements that test a bounded batch of devices
         */
        PROBED
    }

    /**
     * The {@code work_mem} to run compiled SQL with ({@code set local}), a constant: the hash joins
     * over a million devices stay in memory (measured: several times faster than spilling), and a
     * hashed user set of {@value #HASHED_USERS_LIMIT} users fits with room to spare.
     */
    public static final String WORK_MEM = "64MB";

    /**
     * Above this many rows in {@code users} (all apps), user sets are joined rather than hashed. The
     * planner counts about 40 bytes per user in a hashed set and hashes it while it fits in twice
     * {@link #WORK_MEM} (3 million users); each parallel worker builds its own.
     */
    static final long HASHED_USERS_LIMIT = 1_000_000;

    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9_]{0,20}");

    private final AppSettingsService settings;
    private final SegmentRepository segments;
    private final JsonMapper json;
    private final Clock clock;

    FilterCompiler(AppSettingsService settings, SegmentRepository segments, JsonMapper json, Clock clock) {
        this.clock = clock;
        this.settings = settings;
        this.segments = segments;
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
        UserSets userSets = usesUsers(filter) && segments.estimatedUsers() > HASHED_USERS_LIMIT ? UserSets.JOINED : UserSets.HASHED;
        return compile(appId, filter, prefix, userSets);
    }

    /**
     * {@link #compile(UUID, Filter, String)} for a statement that tests only a bounded set of devices (a
     * batch of users, say): each condition on the device's user is a probe of that user's row, so the
     * statement's cost follows the devices it tests, never the app's number of users.
     */
    public Compiled compileForFew(UUID appId, Filter filter, String prefix) {
        return compile(appId, filter, prefix, UserSets.PROBED);
    }

    /** {@link #compile(UUID, Filter, String)} with the user-set form chosen by the caller (tests run both). */
    Compiled compile(UUID appId, Filter filter, String prefix, UserSets userSets) {
        if (!PREFIX.matcher(prefix).matches()) throw new IllegalArgumentException("bad parameter prefix: " + prefix);
        ZoneId zone = needsZone(filter) ? settings.timeZone(appId) : ZoneOffset.UTC;
        Builder b = new Builder(prefix, appId, zone, clock.instant(), json, userSets);
        String predicate = "d.user_id is not null and " + b.filter(filter);
        return new Compiled(String.join(" ", b.joins), predicate, b.params);
    }

    /**
     * Rough per-row cost rank of evaluating a filter, for ordering the children of a group: a test
     * on a joined event row, then device columns, then user sets (a hash probe, the set built on first use).
     */
    private static int cost(Filter f) {
        return switch (f) {
            case Condition c -> switch (c.field().kind()) {
                case PLATFORM, ENABLED, CREATED_AT, LAST_SEEN_AT, EVENT, CUSTOM_EVENT -> 0;
                case APP_VERSION -> 1;
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

    private static boolean usesUsers(Filter f) {
        return switch (f) {
            case Condition c -> switch (c.field().kind()) {
                case TAG, LOCALE, TIMEZONE -> true;
                default -> false;
            };
            case Group g -> g.children().stream().anyMatch(FilterCompiler::usesUsers);
        };
    }

    /** The same text as {@code segment_tag_number} reads as a number (V6__segments.sql), or null. */
    private static final Pattern NUMBER = Pattern.compile("-?[0-9]{1,30}(\\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?");

    static BigDecimal number(String s) {
        return NUMBER.matcher(s).matches() ? new BigDecimal(s) : null;
    }

    /** One join of {@code device_event_last}: an event key, and the start of its window (null: any time). */
    private record EventJoin(String key, Instant since) {
    }

    private static final class Builder {
        final String prefix;
        final UUID appId;
        final ZoneId zone;
        final Instant now;
        final JsonMapper json;
        final UserSets userSets;
        final Map<String, Object> params = new LinkedHashMap<>();
        final List<String> joins = new ArrayList<>();
        /** one join per event key and window however often the filter names them */
        final Map<EventJoin, String> eventJoins = new LinkedHashMap<>();
        int userSetCount;
        String appParam;

        Builder(String prefix, UUID appId, ZoneId zone, Instant now, JsonMapper json, UserSets userSets) {
            this.prefix = prefix;
            this.appId = appId;
            this.zone = zone;
            this.now = now;
            this.json = json;
            this.userSets = userSets;
        }

        /** Adds a parameter and returns its placeholder. */
        String param(Object value) {
            String name = prefix + "_" + (params.size() + 1);
            params.put(name, value instanceof List<?> list ? list.stream().map(Builder::jdbc).toList() : jdbc(value));
            return ":" + name;
        }

        private static Object jdbc(Object value) {
            return value instanceof Instant i ? OffsetDateTime.ofInstant(i, ZoneOffset.UTC) : value;
        }

        String filter(Filter f) {
            return switch (f) {
                // PostgreSQL evaluates the and/or inside one expression in the order written, stopping early
                case Group g -> {
                    String children = g.children().stream().sorted(Comparator.comparingInt(FilterCompiler::cost))
                            .map(this::filter).collect(Collectors.joining(g.all() ? " and " : " or "));
                    // null is false here (the predicate is only ever a WHERE condition): see the class comment
                    yield g.all() ? "(" + children + ")" : "coalesce((" + children + "), false)";
                }
                case Condition c -> condition(c);
            };
        }

        String condition(Condition c) {
            Operator op = c.operator();
            return switch (c.field().kind()) {
                case PLATFORM -> compare("d.platform", op, c.value(), true);
                case LOCALE -> deviceOrUser("locale", op, c.value());
                case TIMEZONE -> deviceOrUser("timezone", op, c.value());
                case ENABLED -> op == Operator.CONTAINS
                        ? contains("cast(d.enabled as text)", c.value())
                        : compare("d.enabled", op, c.value(), false);
                case CREATED_AT -> timestamp("d.created_at", op, c.value());
                case LAST_SEEN_AT -> timestamp("d.last_seen_at", op, c.value());
                // app_version_key is segment_version_key(app_version), stored: a regex per row costs seconds per million
                case APP_VERSION -> op.isRange() && FilterParser.isVersion((String) c.value())
                        ? "d.app_version_key " + sqlOperator(op) + " segment_version_key(cast(" + param(c.value()) + " as text))"
                        : compare("d.app_version", op, c.value(), true);
                case TAG -> userSet(u -> tag(u, c.field().key(), op, c.value()));
                case EVENT -> event(c.field().key(), op, c.value());
                case CUSTOM_EVENT -> event("custom:" + c.field().key(), op, c.value());
            };
        }

        /**
         * {@code neq} and {@code not_in} are the exact negations of {@code eq} and {@code in}: a missing
         * value matches them. {@code text}: the ordering operators compare text by code point
         * ({@code collate "C"}), the same on every database whatever its locale.
         */
        String compare(String expr, Operator op, Object value, boolean text) {
            return switch (op) {
                case EQ -> expr + " = " + param(value);
                case NEQ -> expr + " is distinct from " + param(value);
                case IN -> expr + " in (" + param(value) + ")";
                case NOT_IN -> "(" + expr + " is null or " + expr + " not in (" + param(value) + "))";
                case CONTAINS -> contains(expr, value);
                case GT, GTE, LT, LTE -> text
                        ? expr + " collate \"C\" " + sqlOperator(op) + " cast(" + param(value) + " as text)"
                        : expr + " " + sqlOperator(op) + " " + param(value);
                case EXISTS -> expr + " is not null";
                case NOT_EXISTS -> expr + " is null";
                case WITHIN_DAYS, NOT_WITHIN_DAYS -> throw new IllegalStateException(op + " on a non-event field");
            };
        }

        String contains(String expr, Object value) {
            return "strpos(" + expr + ", cast(" + param(value) + " as text)) > 0";
        }

        /** Timestamps compare as instants; {@code contains} tests their text, ISO 8601 in UTC with microseconds. */
        String timestamp(String column, Operator op, Object value) {
            if (op == Operator.CONTAINS) {
                return contains("to_char(" + column + " at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')", value);
            }
            return compare(column, op, value, false);
        }

        /**
         * {@code coalesce(d.<column>, <user's column>) <op> value}: the device's own value decides when it
         * has one, so only devices without one read the user set.
         */
        String deviceOrUser(String column, Operator op, Object value) {
            return "case when d." + column + " is not null then " + compare("d." + column, op, value, true)
                    + " else " + userSet(u -> compare(u + "." + column, op, value, true)) + " end";
        }

        /**
         * True when the device's user is one of the app's users for whom {@code predicate} (over the
         * alias it is given) is true. Only the app's users: a device's user always belongs to its app.
         */
        String userSet(Function<String, String> predicate) {
            int n = ++userSetCount;
            String u = prefix + "_u" + n;
            if (appParam == null) appParam = param(appId);
            String set = "select " + u + ".id from users " + u + " where " + u + ".app_id = " + appParam + " and " + predicate.apply(u);
            return switch (userSets) {
                case HASHED -> "d.user_id in (" + set + ")";
                case PROBED -> "exists (" + set + " and " + u + ".id = d.user_id)";
                case JOINED -> {
                    String s = prefix + "_s" + n;
                    joins.add("left join (" + set + ") " + s + " on " + s + ".id = d.user_id");
                    yield s + ".id is not null";
                }
            };
        }

        String tag(String u, String key, Operator op, Object value) {
            if (op == Operator.EQ) {
                // containment of a constant is what the GIN index on users.tags (jsonb_path_ops) answers;
                // the document is built by Jackson from the key and value, and bound as one parameter
                return u + ".tags @> cast(" + param(json.writeValueAsString(Map.of(key, value))) + " as jsonb)";
            }
            String expr = "(" + u + ".tags ->> cast(" + param(key) + " as text))";
            if (!op.isRange()) return compare(expr, op, value, true);
            // numerically when both the tag and the value read as numbers, else as text
            String text = expr + " collate \"C\" " + sqlOperator(op) + " cast(" + param(value) + " as text)";
            BigDecimal number = number((String) value);
            if (number == null) return text;
            return "(case when segment_tag_number" + expr + " is not null then segment_tag_number" + expr + " "
                    + sqlOperator(op) + " " + param(number) + " else " + text + " end)";
        }

        /**
         * Tests the join of the event key's row within the window: {@code within_days} and
         * {@code not_within_days} share one (key, window) join, as do {@code exists} and {@code not_exists}.
         */
        String event(String key, Operator op, Object value) {
            Instant since = switch (op) {
                case EXISTS, NOT_EXISTS -> null;
                case WITHIN_DAYS, NOT_WITHIN_DAYS -> since((Integer) value);
                default -> throw new IllegalStateException(op + " on an event field");
            };
            String e = eventJoins.computeIfAbsent(new EventJoin(key, since), this::eventJoin);
            return e + (op == Operator.EXISTS || op == Operator.WITHIN_DAYS ? ".device_id is not null" : ".device_id is null");
        }

        String eventJoin(EventJoin j) {
            String e = prefix + "_e" + (eventJoins.size() + 1);
            joins.add("left join device_event_last " + e + " on " + e + ".app_id = d.app_id and " + e + ".event_key = " + param(j.key())
                    + " and " + e + ".device_id = d.id" + (j.since() == null ? "" : " and " + e + ".last_at >= " + param(j.since())));
            return e;
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
