package dev.pushservice.delivery.webpush;

import dev.pushservice.platform.crypto.SecretBox;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Service;

/**
 * VAPID key pairs an app imported from a previous Web Push provider with that provider's
 * subscriptions ({@code webpush_imported_keys}, migration V43), so the subscriptions keep working:
 * a send to a device whose subscription names one of these public keys is signed with its pair
 * ({@link WebPushProvider}). The private key is sealed with {@link SecretBox} under a context naming
 * the app and the public key, like app credentials; it is never shown or logged.
 *
 * <p>Lookups are per (app, public key): an app can only sign with pairs it imported itself. A pair
 * never changes once stored (the public key determines the private one), so found pairs are cached
 * for the process's life; a miss is cached for {@link #MISS_TTL}, so sends to devices naming an
 * unknown key (subscribed with a replaced app key) do not query once per message.
 */
@Service
public class ImportedVapidKeys implements WebPushProvider.ImportedKeys {

    static final Duration MISS_TTL = Duration.ofSeconds(30);

    private final ImportedVapidKeyRepository rows;
    private final SecretBox box;
    private final Clock clock;
    private final ConcurrentHashMap<Key, Cached> cache = new ConcurrentHashMap<>();

    ImportedVapidKeys(ImportedVapidKeyRepository rows, SecretBox box, Clock clock) {
        this.rows = rows;
        this.box = box;
        this.clock = clock;
    }

    private record Key(UUID appId, String publicKey) {
    }

    private record Cached(VapidKeys keys, Instant until) {
    }

    /** Stores the pair for the app unless it is stored already (joins the caller's transaction); true when new. */
    public boolean store(UUID appId, VapidKeys keys) {
        String publicKey = keys.publicKeyBase64Url();
        byte[] sealed = box.seal(keys.privateKeyBase64Url().getBytes(StandardCharsets.US_ASCII), context(appId, publicKey));
        boolean inserted = rows.insertIfAbsent(appId, publicKey, sealed);
        cache.remove(new Key(appId, publicKey));
        return inserted;
    }

    /** The app's imported pair with this public key (canonical base64url), or empty. */
    @Override
    public Optional<VapidKeys> find(UUID appId, String publicKey) {
        Key key = new Key(appId, publicKey);
        Instant now = clock.instant();
        Cached cached = cache.get(key);
        if (cached != null && (cached.keys != null || cached.until.isAfter(now))) return Optional.ofNullable(cached.keys);
        Optional<byte[]> sealed = rows.sealed(appId, publicKey);
        VapidKeys keys = sealed.map(s -> VapidKeys.of(publicKey,
                new String(box.open(s, context(appId, publicKey)), StandardCharsets.US_ASCII), null)).orElse(null);
        cache.put(key, new Cached(keys, now.plus(MISS_TTL)));
        return Optional.ofNullable(keys);
    }

    private static String context(UUID appId, String publicKey) {
        return "app:" + appId + ":webpush-import:" + publicKey;
    }
}
