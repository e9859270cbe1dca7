package dev.pushservice.delivery.webpush;

import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.delivery.CredentialCache;
import dev.pushservice.delivery.CredentialSource;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Service;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Every app has one VAPID key pair, stored encrypted in {@link AppCredentialStore}. It is generated
 * when the service creates the app, or soon after by the scheduler role ({@link VapidKeyProvisioning});
 * a send generates one as a last resort. Reads never generate:
 * {@link #publicKey} only reads. Concurrent generations agree on one pair (first writer wins).
 * Replacing an app's pair orphans every browser subscription made with the old one, so the service
 * never rotates it by itself.
 */
@Service
public class VapidKeyService implements CredentialSource<VapidKeys> {

    /** The name the key pair is stored under, and the settings field. */
    static final String NAME = "webpush";

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final CredentialCache<VapidKeys> cache = new CredentialCache<>(id -> Optional.of(loadOrCreate(id)));

    VapidKeyService(AppCredentialStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
    }

    /** The app's pair for sending; generated and stored if the app has none yet (a send is a write path). */
    @Override
    public Optional<Versioned<VapidKeys>> find(UUID appId) {
        return cache.find(appId);
    }

    /**
     * The public key browsers subscribe with (base64url, uncompressed point), or empty while the app
     * has no pair (made by the admin CLI or an older version, for the seconds until the scheduler
     * role makes one). Never writes.
     */
    public Optional<String> publicKey(UUID appId) {
        Optional<Versioned<VapidKeys>> cached = cache.cached(appId);
        if (cached.isPresent()) return Optional.of(cached.get().credentials().publicKeyBase64Url());
        return store.summary(appId, NAME).map(summary -> summary.path("vapid_public_key").asString());
    }

    /** Generates and stores the app's pair unless it has one; joins the caller's transaction. */
    void ensure(UUID appId) {
        if (store.version(appId, NAME).isEmpty()) generate(appId);
    }

    private void generate(UUID appId) {
        VapidKeys fresh = VapidKeys.generate();
        ObjectNode summary = json.createObjectNode().put("vapid_public_key", fresh.publicKeyBase64Url());
        store.putIfAbsent(appId, NAME, summary, fresh.privateKeyBase64Url().getBytes(StandardCharsets.US_ASCII));
    }

    private Versioned<VapidKeys> loadOrCreate(UUID appId) {
        Optional<AppCredentialStore.Stored> stored = store.find(appId, NAME);
        if (stored.isEmpty()) {
            generate(appId);
            stored = store.find(appId, NAME);
        }
        AppCredentialStore.Stored s = stored.orElseThrow();
        try {
            VapidKeys keys = VapidKeys.of(s.summary().path("vapid_public_key").asString(),
                    new String(s.secret(), StandardCharsets.US_ASCII), null);
            return new Versioned<>(keys, s.version());
        } catch (IllegalArgumentException e) {
            throw new Unusable("the stored VAPID key pair is unusable (" + e.getMessage() + ")");
        }
    }
}
