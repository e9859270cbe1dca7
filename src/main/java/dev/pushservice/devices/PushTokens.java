package dev.pushservice.devices;

import dev.pushservice.delivery.webpush.WebPushSubscription;
import dev.pushservice.platform.rules.Platform;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.regex.Pattern;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Per-platform push token rules, and the identity a token is deduplicated by.
 * <ul>
 *   <li>iOS: hexadecimal, even length, 32 to 200 digits; stored lower-case (APNs tokens are case-insensitive).</li>
 *   <li>Android: an opaque FCM registration token: non-empty, no whitespace or control characters.</li>
 *   <li>Web: a push subscription JSON object checked by {@link WebPushSubscription#parse}: {@code endpoint} an
 *   absolute HTTPS URL to a non-local host (HTTP and local hosts only with the local-testing setting),
 *   {@code keys.p256dh} a P-256 point, {@code keys.auth} 16 bytes, optionally {@code application_server_key}.
 *   Stored in canonical form with the VAPID public key it was made with; identity is the
 *   endpoint, so a browser re-subscribing with new keys updates its device.</li>
 * </ul>
 */
final class PushTokens {

    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]+");
    private static final Pattern NO_SPACE = Pattern.compile("[\\x21-\\x7E]+");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private PushTokens() {
    }

    /**
     * A token that passed its platform's rules: what to store, and what it is unique by; for a web
     * subscription that names the VAPID key it was made with, that key (else null).
     */
    record Checked(String stored, byte[] identityHash, String namedServerKey) {
        Checked(String stored, byte[] identityHash) {
            this(stored, identityHash, null);
        }
    }

    /** Checks {@code raw}; throws {@link IllegalArgumentException} with a message for the client. */
    static Checked check(Platform platform, String raw, boolean allowInsecureWebEndpoints) {
        return check(platform, raw, allowInsecureWebEndpoints, null);
    }

    /**
     * {@link #check(Platform, String, boolean)}, a web subscription stored with the VAPID public key it
     * was made with: the one it names ({@code application_server_key}), else {@code defaultServerKey}
     * (the app's current key at registration; null: none recorded, sent with the app's key).
     */
    static Checked check(Platform platform, String raw, boolean allowInsecureWebEndpoints, String defaultServerKey) {
        return switch (platform) {
            case IOS -> {
                if (!HEX.matcher(raw).matches() || raw.length() % 2 != 0 || raw.length() < 32 || raw.length() > 200) {
                    throw new IllegalArgumentException("must be an APNs device token: 32 to 200 hexadecimal digits");
                }
                String lower = raw.toLowerCase(java.util.Locale.ROOT);
                yield new Checked(lower, sha256(lower));
            }
            case ANDROID -> {
                if (!NO_SPACE.matcher(raw).matches()) {
                    throw new IllegalArgumentException("must be an FCM registration token without spaces or control characters");
                }
                yield new Checked(raw, sha256(raw));
            }
            case WEB -> web(raw, allowInsecureWebEndpoints, defaultServerKey);
        };
    }

    /** Web subscriptions are parsed by the Web Push provider's own parser, so registration and delivery agree. */
    private static Checked web(String raw, boolean allowInsecure, String defaultServerKey) {
        WebPushSubscription subscription = WebPushSubscription.parse(raw, allowInsecure);
        var enc = Base64.getUrlEncoder().withoutPadding();
        ObjectNode canonical = JSON.createObjectNode();
        canonical.put("endpoint", subscription.endpoint().toString());
        ObjectNode k = canonical.putObject("keys");
        k.put("p256dh", enc.encodeToString(subscription.p256dh()));
        k.put("auth", enc.encodeToString(subscription.auth()));
        String serverKey = subscription.applicationServerKey() != null ? subscription.applicationServerKey() : defaultServerKey;
        if (serverKey != null) canonical.put(WebPushSubscription.SERVER_KEY_FIELD, serverKey);
        return new Checked(canonical.toString(), sha256(subscription.endpoint().toString()), subscription.applicationServerKey());
    }

    static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
