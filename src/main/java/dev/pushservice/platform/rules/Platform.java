package dev.pushservice.platform.rules;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * A device's platform, and so which provider delivers to it: the one list of platform names for
 * registration, device lists, segment filters, provider payload overrides and the delivery core.
 * It lives here, not in {@code delivery}, so that features naming a platform (devices, segments)
 * need not depend on the delivery core, which will itself read segments when it fans out.
 */
public enum Platform {
    IOS, ANDROID, WEB;

    /** {@code "ios, android, web"}, for messages. */
    public static final String VALUES = Arrays.stream(values()).map(Platform::value).collect(Collectors.joining(", "));
    /** The message for a value that is not a platform. */
    public static final String RULE = "must be one of " + VALUES;

    /** The wire and storage value. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The platform named exactly {@code value} (lower case, as on the wire). */
    public static Optional<Platform> fromValue(String value) {
        for (Platform p : values()) {
            if (p.value().equals(value)) return Optional.of(p);
        }
        return Optional.empty();
    }
}
