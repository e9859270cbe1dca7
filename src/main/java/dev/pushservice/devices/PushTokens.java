package dev.pushservice.devices;

import dev.pushservice.delivery.Platform;
import java.math.BigInteger;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Locale;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Per-platform push token rules, and the identity a token is deduplicated by.
 * <ul>
 *   <li>iOS: hexadecimal, even length, 32 to 200 digits; stored lower-case (APNs tokens are case-insensitive).</li>
 *   <li>Android: an opaque FCM registration token: non-empty, no whitespace or control characters.</li>
 *   <li>Web: a push subscription JSON object: {@code endpoint} an absolute HTTPS URL (HTTP and loopback only
 *   with the local-testing setting), {@code keys.p256dh} an uncompressed P-256 point, {@code keys.auth} 16 bytes,
 *   both base64url. Identity is the endpoint, so a browser re-subscribing with new keys updates its device.</li>
 * </ul>
 */
final class PushTokens {

    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]+");
    private static final Pattern NO_SPACE = Pattern.compile("[\\x21-\\x7E]+");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    // NIST P-256: y^2 = x^3 - 3x + b (mod p)
    private static final BigInteger P = new BigInteger("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff", 16);
    private static final BigInteger B = new BigInteger("5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b", 16);

    private PushTokens() {
    }

    /** A token that passed its platform's rules: what to store, and what it is unique by. */
    record Checked(String stored, byte[] identityHash) {
    }

    /** Checks {@code raw}; throws {@link IllegalArgumentException} with a message for the client. */
    static Checked check(Platform platform, String raw, boolean allowInsecureWebEndpoints) {
        return switch (platform) {
            case IOS -> {
                if (!HEX.matcher(raw).matches() || raw.length() % 2 != 0 || raw.length() < 32 || raw.length() > 200) {
                    throw new IllegalArgumentException("must be an APNs device token: 32 to 200 hexadecimal digits");
                }
                String lower = raw.toLowerCase(Locale.ROOT);
                yield new Checked(lower, sha256(lower));
            }
            case ANDROID -> {
                if (!NO_SPACE.matcher(raw).matches()) {
                    throw new IllegalArgumentException("must be an FCM registration token without spaces or control characters");
                }
                yield new Checked(raw, sha256(raw));
            }
            case WEB -> web(raw, allowInsecureWebEndpoints);
        };
    }

    private static Checked web(String raw, boolean allowInsecure) {
        JsonNode node;
        try {
            node = JSON.readTree(raw);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("must be a push subscription as JSON: {\"endpoint\":…,\"keys\":{\"p256dh\":…,\"auth\":…}}");
        }
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("must be a push subscription JSON object");
        }
        JsonNode endpointNode = node.get("endpoint");
        if (endpointNode == null || !endpointNode.isString()) {
            throw new IllegalArgumentException("subscription endpoint is missing");
        }
        String endpoint = endpointNode.stringValue();
        checkEndpoint(endpoint, allowInsecure);
        JsonNode keys = node.get("keys");
        if (keys == null || !keys.isObject()) {
            throw new IllegalArgumentException("subscription keys are missing");
        }
        String p256dh = keys.path("p256dh").isString() ? keys.get("p256dh").stringValue() : null;
        String auth = keys.path("auth").isString() ? keys.get("auth").stringValue() : null;
        byte[] point = base64url(p256dh, "keys.p256dh");
        if (point.length != 65 || point[0] != 0x04 || !onP256(point)) {
            throw new IllegalArgumentException("subscription keys.p256dh must be an uncompressed P-256 public key");
        }
        byte[] secret = base64url(auth, "keys.auth");
        if (secret.length != 16) {
            throw new IllegalArgumentException("subscription keys.auth must be 16 bytes");
        }
        ObjectNode canonical = JSON.createObjectNode();
        canonical.put("endpoint", endpoint);
        ObjectNode k = canonical.putObject("keys");
        k.put("p256dh", p256dh);
        k.put("auth", auth);
        return new Checked(canonical.toString(), sha256(endpoint));
    }

    private static void checkEndpoint(String endpoint, boolean allowInsecure) {
        URI uri;
        try {
            uri = new URI(endpoint);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("subscription endpoint is not a valid URL");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!uri.isAbsolute() || uri.getHost() == null || uri.getRawUserInfo() != null) {
            throw new IllegalArgumentException("subscription endpoint must be an absolute URL with a host");
        }
        if (!allowInsecure) {
            if (!scheme.equals("https")) {
                throw new IllegalArgumentException("subscription endpoint must be an https:// URL");
            }
            String host = uri.getHost().toLowerCase(Locale.ROOT);
            if (host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]") || host.endsWith(".localhost")) {
                throw new IllegalArgumentException("subscription endpoint must not be a loopback address");
            }
        } else if (!scheme.equals("https") && !scheme.equals("http")) {
            throw new IllegalArgumentException("subscription endpoint must be an http(s) URL");
        }
    }

    private static byte[] base64url(String value, String field) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("subscription " + field + " is missing");
        }
        try {
            return Base64.getUrlDecoder().decode(value.replace("=", ""));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("subscription " + field + " must be base64url");
        }
    }

    private static boolean onP256(byte[] point) {
        BigInteger x = new BigInteger(1, java.util.Arrays.copyOfRange(point, 1, 33));
        BigInteger y = new BigInteger(1, java.util.Arrays.copyOfRange(point, 33, 65));
        if (x.compareTo(P) >= 0 || y.compareTo(P) >= 0) return false;
        BigInteger left = y.pow(2).mod(P);
        BigInteger right = x.pow(3).subtract(x.multiply(BigInteger.valueOf(3))).add(B).mod(P);
        return left.equals(right);
    }

    static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
