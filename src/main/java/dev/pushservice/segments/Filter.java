package dev.pushservice.segments;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * A validated audience filter (spec "Segment"): one {@link Condition} or one {@link Group}. Instances
 * come from {@link FilterParser#parse}, which enforces the grammar (nesting, leaf count, fields,
 * operators per field kind, value types); {@link FilterCompiler} turns them into SQL. Immutable.
 */
public sealed interface Filter {

    /**
     * A leaf: {@code field operator value}. {@code value} is already converted to what the field
     * kind compares: a {@code String} (text; tag values and {@code contains} on any field, tag numbers
     * and booleans as their JSON text), {@code Boolean}, {@code java.time.Instant} (timestamps),
     * {@code Integer} (day windows), a {@code List} of those ({@code in}/{@code not_in}), or null
     * ({@code exists}/{@code not_exists}).
     * {@code json} is the value as the client sent it, returned on reads.
     */
    record Condition(Field field, Operator operator, Object value, tools.jackson.databind.JsonNode json) implements Filter {
    }

    /** {@code all} (every child matches) when {@code all} is true, else {@code any}; never empty. */
    record Group(boolean all, List<Filter> children) implements Filter {
        public Group {
            children = List.copyOf(children);
        }
    }

    /** A field reference: its kind and, for tags and events, the key or name after the dot. */
    record Field(Kind kind, String key) {

        /** The field as written in a filter ({@code tag.plan}, {@code event.opened}, {@code locale}). */
        public String name() {
            return kind.prefixed ? kind.wire + "." + key : kind.wire;
        }
    }

    /**
     * The field list of the spec, with the operators each accepts: the spec's general fields take
     * every general operator, event fields their four (docs/api-decisions.md, "Segments", says what
     * each means where the spec is silent).
     */
    enum Kind {
        PLATFORM("platform", false, Operator.GENERAL),
        LOCALE("locale", false, Operator.GENERAL),
        TIMEZONE("timezone", false, Operator.GENERAL),
        APP_VERSION("app_version", false, Operator.GENERAL),
        ENABLED("enabled", false, Operator.GENERAL),
        CREATED_AT("created_at", false, Operator.GENERAL),
        LAST_SEEN_AT("last_seen_at", false, Operator.GENERAL),
        TAG("tag", true, Operator.GENERAL),
        EVENT("event", true, Operator.EVENT),
        CUSTOM_EVENT("custom_event", true, Operator.EVENT);

        final String wire;
        final boolean prefixed;
        final Set<Operator> operators;

        Kind(String wire, boolean prefixed, Set<Operator> operators) {
            this.wire = wire;
            this.prefixed = prefixed;
            this.operators = operators;
        }

        public Set<Operator> operators() {
            return operators;
        }

        boolean isEvent() {
            return this == EVENT || this == CUSTOM_EVENT;
        }
    }

    /** Operators, as written in a filter in lower case. */
    enum Operator {
        EQ, NEQ, IN, NOT_IN, CONTAINS, GT, GTE, LT, LTE, EXISTS, NOT_EXISTS, WITHIN_DAYS, NOT_WITHIN_DAYS;

        /** What the spec's general fields accept: all eleven, on every one of them. */
        static final Set<Operator> GENERAL = Set.of(EQ, NEQ, IN, NOT_IN, CONTAINS, GT, GTE, LT, LTE, EXISTS, NOT_EXISTS);
        static final Set<Operator> RANGE = Set.of(GT, GTE, LT, LTE);
        static final Set<Operator> EVENT = Set.of(EXISTS, NOT_EXISTS, WITHIN_DAYS, NOT_WITHIN_DAYS);

        public String wire() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Optional<Operator> fromWire(String s) {
            for (Operator o : values()) {
                if (o.wire().equals(s)) return Optional.of(o);
            }
            return Optional.empty();
        }

        boolean isRange() {
            return RANGE.contains(this);
        }

        boolean isList() {
            return this == IN || this == NOT_IN;
        }

        boolean takesNoValue() {
            return this == EXISTS || this == NOT_EXISTS;
        }
    }
}
