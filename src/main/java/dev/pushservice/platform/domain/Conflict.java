package dev.pushservice.platform.domain;

/** The request clashes with the resource's current state. */
public final class Conflict extends DomainException {

    public Conflict(String message) {
        super(message);
    }
}
