package dev.pushservice.platform.domain;

import java.time.Duration;

/** A dependency (the database, a queue) cannot take the work now; the client should retry after {@code retryAfter}. */
public final class Unavailable extends DomainException {

    private final Duration retryAfter;

    public Unavailable(String message, Duration retryAfter) {
        super(message);
        this.retryAfter = retryAfter;
    }

    public Duration retryAfter() {
        return retryAfter;
    }
}
