package dev.pushservice.apps;

import dev.pushservice.platform.crypto.SecretBox;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Provider credentials of apps, encrypted at rest. The secret part is sealed with {@link SecretBox}
 * under a context naming the app and provider; the summary is what settings reads may show.
 * Providers read through this store (via their {@code CredentialSource}) and key their clients by
 * {@link Stored#version()}, which changes on every replacement. Each provider names its own
 * credentials ({@code provider}, e.g. {@code apns}): this store knows no provider.
 */
@Service
public class AppCredentialStore {

    private final AppCredentialRepository repository;
    private final SecretBox box;
    private final JsonMapper json;

    AppCredentialStore(AppCredentialRepository repository, SecretBox box, JsonMapper json) {
        this.repository = repository;
        this.box = box;
        this.json = json;
    }

    /** A stored credential: its showable summary, the decrypted secret, and its version. */
    public record Stored(JsonNode summary, byte[] secret, long version) {
    }

    /** Stores or replaces the app's credential for {@code provider}; returns the new version. */
    public long put(UUID appId, String provider, JsonNode summary, byte[] secret) {
        return repository.upsert(appId, provider, json.writeValueAsString(summary), box.seal(secret, context(appId, provider)));
    }

    /** Stores the credential only if the app has none for {@code provider} yet (first writer wins). */
    public boolean putIfAbsent(UUID appId, String provider, JsonNode summary, byte[] secret) {
        return repository.insertIfAbsent(appId, provider, json.writeValueAsString(summary),
                box.seal(secret, context(appId, provider)));
    }

    /** The credential with its secret decrypted, or empty when the app has none for {@code provider}. */
    public Optional<Stored> find(UUID appId, String provider) {
        return repository.find(appId, provider).map(row -> new Stored(json.readTree(row.summary()),
                box.open(row.sealed(), context(appId, provider)), row.version()));
    }

    /** What a read may show of the credential (nothing is decrypted), or empty when none is set. */
    public Optional<JsonNode> summary(UUID appId, String provider) {
        return repository.summary(appId, provider).map(json::readTree);
    }

    /** Just the version (cheap: no decryption), or empty when none is set. */
    public Optional<Long> version(UUID appId, String provider) {
        return repository.version(appId, provider);
    }

    /** Apps with no credential for {@code provider}, at most {@code limit} of them. */
    public List<UUID> appsWithout(String provider, int limit) {
        return repository.appsWithout(provider, limit);
    }

    /**
     * Records that {@code provider} refused version {@code version} of the app's credential
     * ({@code reason}: its words, never a secret) at {@code at}: settings reads show it until the
     * credential is replaced. A no-op for a version that is no longer the current one.
     */
    public boolean markRejected(UUID appId, String provider, long version, String reason, java.time.Instant at) {
        return repository.markRejected(appId, provider, version, reason, at);
    }

    public boolean remove(UUID appId, String provider) {
        return repository.delete(appId, provider);
    }

    private static String context(UUID appId, String provider) {
        return "app:" + appId + ":" + provider;
    }
}
