package dev.pushservice.delivery;

import java.util.Optional;
import java.util.UUID;

/**
 * Where a provider finds an app's credentials (decrypted, parsed into the provider's own record
 * type). {@code version} changes whenever the app's credential is replaced, so a provider can keep
 * one long-lived client per (app, version) and drop the old one. Implementations are thread-safe
 * and cheap on repeated calls (they cache): providers call {@link #find} on every send.
 */
@FunctionalInterface
public interface CredentialSource<T> {

    /**
     * The app's current credentials, or empty when it has set none.
     *
     * @throws Unusable when the stored credentials can no longer be used (e.g. a certificate that has
     *                  expired since it was set); providers answer {@link ReasonCode#CREDENTIALS_INVALID}
     */
    Optional<Versioned<T>> find(UUID appId);

    /**
     * The provider refused version {@code version} of the app's credentials ({@code reason}: its words,
     * never a secret) at {@code at}: recorded for the settings read until the credentials change.
     * Blocks on the database: never call it on a Netty I/O thread.
     */
    default void rejected(UUID appId, long version, String reason, java.time.Instant at) {
    }

    record Versioned<T>(T credentials, long version) {
    }

    /** Stored credentials that no longer pass their checks; the message is safe to show (no secret). */
    final class Unusable extends RuntimeException {
        public Unusable(String message) {
            super(message, null, false, false);
        }
    }
}
