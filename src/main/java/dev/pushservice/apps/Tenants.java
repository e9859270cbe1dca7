package dev.pushservice.apps;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/** Rows of the tenant model, as the admin CLI and bootstrap see them. */
public final class Tenants {

    private Tenants() {
    }

    public record Organisation(UUID id, String name, Integer activeDeviceLimit, Instant createdAt) {
    }

    public record App(UUID id, UUID orgId, String name, String timezone, Instant createdAt) {
    }

    /** A stored key: never the raw key, only its hint. */
    public record Key(UUID id, UUID appId, String kind, String name, String hint, List<String> scopes,
                      Instant createdAt, Instant expiresAt, Instant revokedAt, Instant lastUsedAt) {

        public String state(Instant now) {
            if (revokedAt != null) return "revoked";
            if (expiresAt != null && !expiresAt.isAfter(now)) return "expired";
            return "active";
        }
    }

    /** A key just created: the only time its raw value exists. */
    public record IssuedKey(Key key, String rawKey) {
    }
}
