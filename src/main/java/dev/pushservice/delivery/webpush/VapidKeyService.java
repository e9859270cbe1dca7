package dev.pushservice.delivery.webpush;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.delivery.CredentialSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Every app has one VAPID key pair, generated the first time it is needed (a settings read, the
 * public-key read, or a send) and stored encrypted in {@link AppCredentialStore}; concurrent first
 * uses agree on one pair (first writer wins). Replacing an app's pair orphans every browser
 * subscription made with the old one, so the service never rotates it by itself.
 */
@Service
public class VapidKeyService implements CredentialSource<VapidKeys> {

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final Cache<UUID, Versioned<VapidKeys>> cache = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(30)).maximumSize(10_000).build();

    VapidKeyService(AppCredentialStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
    }

    /** The app's pair, generated and stored on first use. */
    @Override
    public Optional<Versioned<VapidKeys>> find(UUID appId) {
        return Optional.of(cache.get(appId, this::loadOrCreate));
    }

    /** The public key browsers subscribe with (base64url, uncompressed point). */
    public String publicKey(UUID appId) {
        return find(appId).orElseThrow().credentials().publicKeyBase64Url();
    }

    private Versioned<VapidKeys> loadOrCreate(UUID appId) {
        Optional<AppCredentialStore.Stored> stored = store.find(appId, AppCredentialStore.WEBPUSH);
        if (stored.isEmpty()) {
            VapidKeys fresh = VapidKeys.generate();
            ObjectNode summary = json.createObjectNode().put("vapid_public_key", fresh.publicKeyBase64Url());
            store.putIfAbsent(appId, AppCredentialStore.WEBPUSH, summary,
                    fresh.privateKeyBase64Url().getBytes(StandardCharsets.US_ASCII));
            stored = store.find(appId, AppCredentialStore.WEBPUSH);
        }
        AppCredentialStore.Stored s = stored.orElseThrow();
        VapidKeys keys = VapidKeys.of(s.summary().path("vapid_public_key").asString(),
                new String(s.secret(), StandardCharsets.US_ASCII), null);
        return new Versioned<>(keys, s.version());
    }
}
