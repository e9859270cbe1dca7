package dev.pushservice.platform.auth;

import java.util.Arrays;
import java.util.Optional;

/** The spec's scope table. */
public enum Scope {
    DEVICES_WRITE("devices:write"),
    NOTIFICATIONS_WRITE("notifications:write"),
    NOTIFICATIONS_READ("notifications:read"),
    EVENTS_WRITE("events:write");

    private final String value;

    Scope(String value) {
        this.value = value;
    }

    public String value() {
        return value;
    }

    public static Optional<Scope> fromValue(String value) {
        return Arrays.stream(values()).filter(s -> s.value.equals(value)).findFirst();
    }
}
