package dev.pushservice.platform.domain;

/**
 * The input cannot be read as what it must be at all (e.g. a body that is JSON but not an object),
 * as opposed to {@link InvalidInput}, where it is read and breaks a rule.
 */
public final class Malformed extends DomainException {

    public Malformed(String message) {
        super(message);
    }
}
