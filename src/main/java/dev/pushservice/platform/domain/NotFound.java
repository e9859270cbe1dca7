package dev.pushservice.platform.domain;

/** The resource does not exist for the calling app (another app's resource is "not found" too). */
public final class NotFound extends DomainException {

    /** {@code what}: the resource in words, e.g. "Device" or "Segment". */
    public NotFound(String what) {
        super(what + " not found");
    }
}
