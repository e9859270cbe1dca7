package dev.pushservice.platform.json;

import dev.pushservice.platform.domain.InvalidInput;
import java.util.UUID;

/**
 * Strict UUID parsing for ids in paths and bodies: only the canonical 36-character form
 * ({@link UUID#fromString} alone also accepts shortened groups such as {@code 1-1-1-1-1}).
 */
public final class Uuids {

    private Uuids() {
    }

    /** The UUID, or null when {@code raw} is not a canonical UUID. */
    public static UUID parse(String raw) {
        if (raw == null || raw.length() != 36) return null;
        try {
            return UUID.fromString(raw);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** The UUID of a path value; {@link InvalidInput} (422) naming {@code field} when it is not one. */
    public static UUID pathId(String raw, String field) {
        UUID id = parse(raw);
        if (id == null) throw InvalidInput.of(field, "must be a UUID");
        return id;
    }
}
