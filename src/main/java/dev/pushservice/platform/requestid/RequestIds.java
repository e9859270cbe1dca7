package dev.pushservice.platform.requestid;

import jakarta.servlet.http.HttpServletRequest;
import java.util.UUID;
import java.util.regex.Pattern;

/** The request id of the current request: the client's valid UUID, or one minted here. */
public final class RequestIds {

    public static final String HEADER = "X-Request-ID";
    static final String ATTRIBUTE = RequestIds.class.getName();
    private static final Pattern UUID_SHAPE =
            Pattern.compile("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");

    private RequestIds() {
    }

    /** The id for this request, minting one if the filter has not run (e.g. the error dispatch). */
    public static String current(HttpServletRequest request) {
        Object id = request.getAttribute(ATTRIBUTE);
        if (id instanceof String s) return s;
        String fresh = accept(request.getHeader(HEADER));
        request.setAttribute(ATTRIBUTE, fresh);
        return fresh;
    }

    /** Echoes a canonical UUID sent by the client, lower-cased; anything else is replaced. */
    static String accept(String supplied) {
        if (supplied != null && UUID_SHAPE.matcher(supplied).matches()) {
            return supplied.toLowerCase(java.util.Locale.ROOT);
        }
        return mint().toString();
    }

    /**
     * A random (version 4) UUID from {@link java.util.concurrent.ThreadLocalRandom}: request ids
     * correlate logs, they are not secrets, and {@link UUID#randomUUID()} serialises every request
     * on the system's secure random source.
     */
    static UUID mint() {
        var random = java.util.concurrent.ThreadLocalRandom.current();
        long msb = (random.nextLong() & ~0xF000L) | 0x4000L;
        long lsb = (random.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }
}
