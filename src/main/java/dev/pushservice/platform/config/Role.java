package dev.pushservice.platform.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;

/**
 * What an instance runs, chosen with {@code PUSH_ROLES} (default: all three). Instances of any mix
 * share one database; all coordination goes through it.
 */
public enum Role {

    /** Serves {@code /v1}, {@code /openapi.yaml}, {@code /docs} and the web SDK ({@code /sdk/v1/…}), and writes the events it accepts. */
    API,
    /** Executes queued background work (db-scheduler table {@code scheduled_tasks}). */
    WORKER,
    /** Runs recurring tasks: clean-ups and sweeps that find due work (table {@code recurring_tasks}). */
    SCHEDULER;

    /** As written in {@code PUSH_ROLES}. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Optional<Role> of(String value) {
        return Arrays.stream(values()).filter(r -> r.value().equals(value)).findFirst();
    }
}
