package dev.pushservice.delivery.webpush;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.Provider;
import java.security.Signature;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * RFC 8292 {@code Authorization: vapid t=<JWT>, k=<public key>} headers, cached per (app, public
 * key, push service origin): an app signs with its own pair, and with pairs it imported. A token is valid for {@link #LIFETIME} (the RFC caps {@code exp} at 24 h; 12 h
 * leaves room for clock skew at the push service) and is reused until less than {@link #RENEW_BEFORE}
 * remains, so a fan-out signs once per origin instead of once per message. Replacing an app's keys
 * (a new credential version) replaces its tokens. Thread-safe; two racing threads may both sign,
 * which is harmless.
 */
final class VapidTokens {

    static final Duration LIFETIME = Duration.ofHours(12);
    static final Duration RENEW_BEFORE = Duration.ofHours(1);
    private static final String HEADER = b64("{\"typ\":\"JWT\",\"alg\":\"ES256\"}".getBytes(StandardCharsets.US_ASCII));
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final ConcurrentHashMap<Key, Token> cache = new ConcurrentHashMap<>();
    private final Clock clock;
    private final String defaultSubject;

    VapidTokens(Clock clock, String defaultSubject) {
        this.clock = clock;
        this.defaultSubject = defaultSubject;
    }

    /** The {@code Authorization} header value for a push to {@code origin}. */
    String authorization(UUID appId, long version, VapidKeys keys, String origin) {
        Key key = new Key(appId, keys.publicKeyBase64Url(), origin);
        Instant now = clock.instant();
        Token cached = cache.get(key);
        if (cached != null && cached.version == version && cached.expires.minus(RENEW_BEFORE).isAfter(now)) {
            return cached.header;
        }
        Token fresh = sign(keys, version, origin, now);
        cache.put(key, fresh);
        return fresh.header;
    }

    private Token sign(VapidKeys keys, long version, String origin, Instant now) {
        // Whole seconds: exp is a NumericDate.
        Instant expires = now.plus(LIFETIME).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        ObjectNode claims = JSON.createObjectNode();
        claims.put("aud", origin);
        claims.put("exp", expires.getEpochSecond());
        claims.put("sub", keys.subject() != null ? keys.subject() : defaultSubject);
        String signingInput = HEADER + "." + b64(JSON.writeValueAsBytes(claims));
        try {
            Provider provider = CryptoProviders.forAlgorithm("Signature", "SHA256withECDSAinP1363Format");
            Signature signer = provider == null
                    ? Signature.getInstance("SHA256withECDSAinP1363Format")
                    : Signature.getInstance("SHA256withECDSAinP1363Format", provider);
            signer.initSign(keys.privateKey());
            signer.update(signingInput.getBytes(StandardCharsets.US_ASCII));
            String jwt = signingInput + "." + b64(signer.sign());
            return new Token(version, expires, "vapid t=" + jwt + ", k=" + keys.publicKeyBase64Url());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("VAPID signing failed", e);
        }
    }

    private static String b64(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private record Key(UUID appId, String publicKey, String origin) {
    }

    private record Token(long version, Instant expires, String header) {
    }
}
