package dev.pushservice.platform.auth;

import java.util.Optional;

/** Finds the stored key for a presented raw key (by its SHA-256 hash). Implemented by {@code apps}. */
public interface ApiKeyResolver {

    Optional<StoredKey> findByHash(byte[] sha256);

    /** Records use at most about once a minute per key, so auth stays read-only on the hot path. */
    void touch(StoredKey key);

    record StoredKey(ApiPrincipal principal, java.time.Instant expiresAt, java.time.Instant revokedAt,
                     java.time.Instant lastUsedAt) {
    }
}
