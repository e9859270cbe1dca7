package dev.pushservice.platform.domain;

/** The resource does not exist for the calling app (another app's resource is "not found" too). */
public final class NotFound extends DomainException {

    /** {@code what}: the resource in words, e.g. "Device" or "Segment". */
    public NotFound(String what) {
        super(what + " not found");
    }

    private NotFound(String message, boolean whole) {
        super(message);
    }

    /** Not found, said in a whole sentence, e.g. "Device not found or already disabled". */
    public static NotFound saying(String message) {
        return new NotFound(message, true);
    }
}
