package dev.pushservice.platform.domain;

import java.util.List;

/** The input breaks one or more rules; nothing was changed. */
public final class InvalidInput extends DomainException {

    private final List<Violation> violations;

    public InvalidInput(String message, List<Violation> violations) {
        super(message);
        if (violations.isEmpty()) throw new IllegalArgumentException("an InvalidInput names at least one violation");
        this.violations = List.copyOf(violations);
    }

    /**
     * The input as a whole breaks a rule that no one field does (e.g. a PATCH that changes nothing);
     * the answer lists no field.
     */
    public InvalidInput(String message) {
        super(message);
        this.violations = List.of();
    }

    public InvalidInput(List<Violation> violations) {
        this("Request validation failed", violations);
    }

    /** One field is wrong. */
    public static InvalidInput of(String field, String message) {
        return new InvalidInput(List.of(new Violation(field, message)));
    }

    public List<Violation> violations() {
        return violations;
    }
}
