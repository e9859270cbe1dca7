package dev.pushservice.platform.domain;

/**
 * Why a request cannot be honoured, said in domain terms. Thrown by services, parsers and other
 * domain code; mapped to HTTP in one place. Stack traces are not captured: these are answers, not bugs.
 */
public abstract sealed class DomainException extends RuntimeException
        permits Malformed, InvalidInput, NotFound, Conflict, Unavailable {

    DomainException(String message) {
        super(message, null, false, false);
    }
}
