package dev.pushservice.delivery;

import java.util.Optional;
import java.util.UUID;

/**
 * Where a provider finds an app's credentials (decrypted, parsed into the provider's own record
 * type). {@code version} changes whenever the app's credential is replaced, so a provider can keep
 * one long-lived client per (app, version) and drop the old one.
 */
@FunctionalInterface
public interface CredentialSource<T> {

    Optional<Versioned<T>> find(UUID appId);

    record Versioned<T>(T credentials, long version) {
    }
}
