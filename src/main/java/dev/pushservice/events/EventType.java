package dev.pushservice.events;

import java.util.Arrays;
import java.util.Optional;

/**
 * The closed list of event types a client may submit. Closed because each type has a meaning the
 * service relies on (analytics columns, {@code event.<type>} segment filters, journey triggers);
 * anything else is a {@link #CUSTOM} event with a name.
 */
public enum EventType {
    RECEIVED("received"),
    CONFIRMED_DELIVERED("confirmed_delivered"),
    DELIVERED("delivered"),
    OPENED("opened"),
    CLICKED("clicked"),
    DISMISSED("dismissed"),
    CUSTOM("custom"),
    OUTCOME("outcome");

    private final String value;

    EventType(String value) {
        this.value = value;
    }

    /** The wire and storage value. */
    public String value() {
        return value;
    }

    /** Custom and outcome events carry an {@code event_name}; the others must not. */
    public boolean named() {
        return this == CUSTOM || this == OUTCOME;
    }

    public static Optional<EventType> fromValue(String value) {
        return Arrays.stream(values()).filter(t -> t.value.equals(value)).findFirst();
    }
}
