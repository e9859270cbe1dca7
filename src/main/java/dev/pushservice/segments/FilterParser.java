package dev.pushservice.segments;

import dev.pushservice.events.EventType;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.rules.EventNames;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.Timestamps;
import dev.pushservice.segments.Filter.Condition;
import dev.pushservice.segments.Filter.Field;
import dev.pushservice.segments.Filter.Group;
import dev.pushservice.segments.Filter.Kind;
import dev.pushservice.segments.Filter.Operator;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Checks a filter written in JSON against the grammar and turns it into a {@link Filter}. Every
 * problem is reported with its place in the filter ({@code filter.all[2].any[0].operator}), all of
 * them at once (up to {@value #MAX_ERRORS}). Stateless and thread-safe.
 *
 * <p>Nothing is coerced: {@code "7"} is not a day count, {@code 7.5} is not an integer, {@code "true"}
 * is not a boolean. Unknown keys inside conditions and groups are ignored, as everywhere in the API.
 */
public final class FilterParser {

    /** Event types a filter may name as {@code event.<type>}: all but {@code custom} (that is {@code custom_event.<name>}). */
    public static final List<String> EVENT_TYPES = Arrays.stream(EventType.values())
            .filter(t -> t != EventType.CUSTOM).map(EventType::value).toList();
    /** Longest string value: the tag value limit, since values compare against stored tags. */
    static final int MAX_STRING = Limits.TAG_VALUE;
    static final int MAX_ERRORS = 50;

    private static final Pattern VERSION = Pattern.compile("[0-9]{1,9}(\\.[0-9]{1,9}){0,9}");
    private static final String FIELDS = "platform, locale, timezone, app_version, enabled, created_at, last_seen_at, "
            + "tag.<key>, event.<type>, custom_event.<name>";

    private FilterParser() {
    }

    /** True when {@code s} is a version of dot-separated numbers ({@code app_version} then compares as versions). */
    static boolean isVersion(String s) {
        return VERSION.matcher(s).matches();
    }

    /** Parses {@code node}, naming problems under {@code path} (e.g. {@code "filter"}); throws a 422 listing them. */
    public static Filter parse(JsonNode node, String path) {
        List<Violation> errors = new ArrayList<>();
        Filter f = parse(node, path, errors);
        if (!errors.isEmpty()) throw new InvalidInput("Invalid filter", errors);
        return f;
    }

    /** Parses {@code node}, adding problems to {@code errors}; null when there were any. */
    public static Filter parse(JsonNode node, String path, List<Violation> errors) {
        Walk walk = new Walk(errors);
        int before = errors.size();
        Filter f = walk.node(node, path, 0);
        if (walk.leaves > Limits.FILTER_CONDITIONS) {
            walk.reject(path, "a filter has at most " + Limits.FILTER_CONDITIONS + " conditions in all; this one has " + walk.leaves);
        }
        return errors.size() == before ? f : null;
    }

    /** The canonical JSON form of a filter: only {@code field}/{@code operator}/{@code value} and {@code all}/{@code any}. */
    public static JsonNode toJson(Filter filter) {
        JsonNodeFactory nodes = JsonNodeFactory.instance;
        return switch (filter) {
            case Condition c -> {
                ObjectNode o = nodes.objectNode();
                o.put("field", c.field().name());
                o.put("operator", c.operator().wire());
                if (c.json() != null) o.set("value", c.json());
                yield o;
            }
            case Group g -> {
                ObjectNode o = nodes.objectNode();
                ArrayNode children = o.putArray(g.all() ? "all" : "any");
                g.children().forEach(child -> children.add(toJson(child)));
                yield o;
            }
        };
    }

    private static final class Walk {
        final List<Violation> errors;
        int leaves;

        Walk(List<Violation> errors) {
            this.errors = errors;
        }

        void reject(String where, String message) {
            if (errors.size() < MAX_ERRORS) errors.add(new Violation(where, message));
        }

        /** {@code depth} is the number of groups around this node. */
        Filter node(JsonNode node, String path, int depth) {
            if (node == null || node.isNull()) {
                reject(path, "is required: a condition (field, operator, value) or a group (all or any)");
                return null;
            }
            if (!node.isObject()) {
                reject(path, "must be an object: a condition (field, operator, value) or a group (all or any)");
                return null;
            }
            boolean isCondition = node.has("field") || node.has("operator") || node.has("value");
            boolean hasAll = node.has("all");
            boolean hasAny = node.has("any");
            if (isCondition && (hasAll || hasAny)) {
                reject(path, "must be either a condition (field, operator, value) or a group (all or any), not both");
                return null;
            }
            if (hasAll && hasAny) {
                reject(path, "a group has either all or any, not both: nest one group inside the other");
                return null;
            }
            if (hasAll || hasAny) return group(node, path, depth, hasAll);
            if (isCondition) return condition(node, path);
            reject(path, "must be a condition (field, operator, value) or a group (all or any)");
            return null;
        }

        Filter group(JsonNode node, String path, int depth, boolean all) {
            String key = all ? "all" : "any";
            String where = path + "." + key;
            if (depth + 1 > Limits.FILTER_DEPTH) {
                reject(path, "groups nest at most " + Limits.FILTER_DEPTH + " levels deep; this group is at level " + (depth + 1));
                leaves += countLeaves(node, 0);
                return null;
            }
            JsonNode children = node.get(key);
            if (children == null || !children.isArray()) {
                reject(where, "must be a non-empty array of conditions or groups");
                return null;
            }
            if (children.isEmpty()) {
                reject(where, "must not be empty");
                return null;
            }
            List<Filter> parsed = new ArrayList<>(children.size());
            boolean ok = true;
            for (int i = 0; i < children.size(); i++) {
                Filter child = node(children.get(i), where + "[" + i + "]", depth + 1);
                if (child == null) ok = false;
                else parsed.add(child);
            }
            return ok ? new Group(all, parsed) : null;
        }

        /** Counts conditions below a group we refuse to descend into, so the leaf limit still counts them (bounded). */
        private static int countLeaves(JsonNode node, int depth) {
            if (node == null || !node.isObject() || depth > 64) return 0;
            if (node.has("field")) return 1;
            int n = 0;
            for (String key : List.of("all", "any")) {
                JsonNode children = node.get(key);
                if (children != null && children.isArray()) {
                    for (JsonNode child : children) n += countLeaves(child, depth + 1);
                }
            }
            return n;
        }

        Filter condition(JsonNode node, String path) {
            leaves++;
            Field field = field(node.get("field"), path + ".field");
            Operator operator = operator(node.get("operator"), path + ".operator", field);
            if (field == null || operator == null) return null;
            JsonNode value = node.get("value");
            if (value != null && value.isNull()) value = null;
            Object converted = value(field, operator, value, path + ".value");
            if (converted == INVALID) return null;
            return new Condition(field, operator, converted, value);
        }

        Field field(JsonNode node, String where) {
            if (node == null || node.isNull()) {
                reject(where, "is required");
                return null;
            }
            if (!node.isString()) {
                reject(where, "must be a string: one of " + FIELDS);
                return null;
            }
            String s = node.stringValue();
            for (Kind kind : Kind.values()) {
                if (!kind.prefixed && kind.wire.equals(s)) return new Field(kind, null);
            }
            int dot = s.indexOf('.');
            String prefix = dot < 0 ? s : s.substring(0, dot);
            String rest = dot < 0 ? null : s.substring(dot + 1);
            switch (prefix) {
                case "tag" -> {
                    if (TextRules.isKey(rest, Limits.TAG_KEY)) return new Field(Kind.TAG, rest);
                    reject(where, "tag keys are 1 to " + Limits.TAG_KEY + " " + TextRules.KEY_CHARACTERS + " (tag.<key>)");
                }
                case "event" -> {
                    if (rest != null && EVENT_TYPES.contains(rest)) return new Field(Kind.EVENT, rest);
                    reject(where, "event.<type> takes a standard event type: " + String.join(", ", EVENT_TYPES)
                            + " (custom events: custom_event.<name>)");
                }
                case "custom_event" -> {
                    if (EventNames.isValid(rest)) return new Field(Kind.CUSTOM_EVENT, rest);
                    reject(where, "custom event names are 1 to " + Limits.EVENT_NAME + " " + TextRules.KEY_CHARACTERS
                            + ", as at ingest (custom_event.<name>)");
                }
                default -> reject(where, "unknown field; use one of " + FIELDS);
            }
            return null;
        }

        Operator operator(JsonNode node, String where, Field field) {
            if (node == null || node.isNull()) {
                reject(where, "is required");
                return null;
            }
            Operator op = node.isString() ? Operator.fromWire(node.stringValue()).orElse(null) : null;
            if (op == null) {
                reject(where, "must be one of " + wire(Arrays.asList(Operator.values())));
                return null;
            }
            if (field != null && !field.kind().operators().contains(op)) {
                reject(where, "'" + op.wire() + "' does not apply to " + (field.kind().prefixed ? field.kind().wire + ".*" : field.name())
                        + "; use one of " + wire(field.kind().operators()));
                return null;
            }
            return op;
        }

        private static String wire(java.util.Collection<Operator> ops) {
            return ops.stream().sorted().map(Operator::wire).collect(Collectors.joining(", "));
        }

        private static final Object INVALID = new Object();

        Object value(Field field, Operator op, JsonNode value, String where) {
            if (op.takesNoValue()) {
                if (value != null) {
                    reject(where, "must be left out for " + op.wire());
                    return INVALID;
                }
                return null;
            }
            if (value == null) {
                reject(where, "is required for " + op.wire());
                return INVALID;
            }
            if (op.isList()) {
                if (!value.isArray()) {
                    reject(where, "must be an array of 1 to " + Limits.FILTER_LIST_VALUES + " values for " + op.wire());
                    return INVALID;
                }
                if (value.isEmpty() || value.size() > Limits.FILTER_LIST_VALUES) {
                    reject(where, "must have 1 to " + Limits.FILTER_LIST_VALUES + " values; it has " + value.size());
                    return INVALID;
                }
                List<Object> list = new ArrayList<>(value.size());
                boolean ok = true;
                for (int i = 0; i < value.size(); i++) {
                    Object v = scalar(field, op, value.get(i), where + "[" + i + "]");
                    if (v == INVALID) ok = false;
                    else list.add(v);
                }
                return ok ? List.copyOf(list) : INVALID;
            }
            return scalar(field, op, value, where);
        }

        /**
         * One value of the type the field kind and operator compare. {@code contains} always takes
         * text (it tests the field's text form); the ordering operators on text fields take text.
         */
        Object scalar(Field field, Operator op, JsonNode v, String where) {
            if (op == Operator.CONTAINS && field.kind() != Kind.TAG) return text(op, v, where, false);
            switch (field.kind()) {
                case PLATFORM -> {
                    if (op.isRange()) return text(op, v, where, false);
                    if (v.isString() && Platform.fromValue(v.stringValue()).isPresent()) return v.stringValue();
                    reject(where, Platform.RULE);
                }
                case ENABLED -> {
                    if (v.isBoolean()) return v.booleanValue();
                    reject(where, "must be true or false");
                }
                case CREATED_AT, LAST_SEEN_AT -> {
                    // in range: a year the database cannot store failed the statement comparing it (a 500)
                    Instant at = v.isString() ? Timestamps.parseOffset(v.stringValue()) : null;
                    if (at != null) return at;
                    reject(where, "must be an ISO 8601 timestamp with a time zone, " + Timestamps.RANGE
                            + ", e.g. 2026-01-31T12:00:00Z");
                }
                case EVENT, CUSTOM_EVENT -> {
                    if (v.isIntegralNumber() && v.canConvertToInt() && v.intValue() >= 0 && v.intValue() <= Limits.FILTER_DAYS) {
                        return v.intValue();
                    }
                    reject(where, "must be an integer number of days from 0 to " + Limits.FILTER_DAYS);
                }
                case TAG -> {
                    return text(op, v, where, true);
                }
                case APP_VERSION, LOCALE, TIMEZONE -> {
                    return text(op, v, where, false);
                }
            }
            return INVALID;
        }

        /** A string value; tags also take numbers and booleans, stored as their JSON text (as tag values are). */
        Object text(Operator op, JsonNode v, String where, boolean tagRules) {
            String s;
            if (v.isString()) s = v.stringValue();
            else if (tagRules && (v.isNumber() || v.isBoolean())) s = v.toString();
            else {
                reject(where, tagRules ? "must be a string, number or boolean" : "must be a string");
                return INVALID;
            }
            if (s.length() > MAX_STRING) {
                reject(where, "must be at most " + MAX_STRING + " characters");
                return INVALID;
            }
            if (op == Operator.CONTAINS && s.isEmpty()) {
                reject(where, "must not be empty for contains");
                return INVALID;
            }
            return s;
        }
    }
}
