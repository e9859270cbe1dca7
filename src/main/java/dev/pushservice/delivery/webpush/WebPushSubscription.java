package dev.pushservice.delivery.webpush;

import dev.pushservice.platform.net.TargetAddresses;
import java.net.URI;
import java.net.URISyntaxException;
import java.security.interfaces.ECPublicKey;
import java.util.Base64;
import java.util.Locale;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A browser's push subscription, the device token of a {@code web} device: the JSON that
 * {@code PushSubscription.toJSON()} produces, {@code {"endpoint": "https://…", "keys": {"p256dh":
 * "…", "auth": "…"}}} (unknown fields such as {@code expirationTime} are ignored), optionally with
 * {@code "application_server_key"}: the VAPID public key it was made with (the browser's
 * {@code options.applicationServerKey}, base64url). The service stores it with every web device (the
 * app's key at registration unless the token names one); a send signs with the key it names when the
 * app holds that pair (an imported one, {@link ImportedVapidKeys}), else with the app's own.
 *
 * <p>{@link #parse} validates everything a send needs, so a subscription that parses can be
 * encrypted for: the endpoint is an absolute {@code https} URL whose host, as written, is not refused
 * by {@link TargetAddresses#refusedHost} (a local name, a loopback, private, link-local, metadata or
 * reserved address literal in any IPv4 or IPv6 form, an obscure numeric host) unless insecure
 * endpoints are allowed, for local testing; {@code p256dh} is an uncompressed point on P-256 and
 * {@code auth} is 16 bytes. A name is not resolved here: what it resolves to is checked where the
 * connection is made ({@link WebPushProvider}). Keys are base64url, with or without padding (plain base64 is accepted too, as some clients send it).
 *
 * <p>{@link #toString()} shows only the endpoint's origin: the full endpoint is a capability
 * (anyone holding it can push to the browser) and the keys are secrets.
 */
public record WebPushSubscription(URI endpoint, String origin, byte[] p256dh, ECPublicKey p256dhKey, byte[] auth,
                                  String applicationServerKey) {

    /** The field naming the VAPID public key the subscription was made with ({@code options.applicationServerKey}). */
    public static final String SERVER_KEY_FIELD = "application_server_key";

    /** A subscription without a recorded server key (sent with the app's own pair). */
    public WebPushSubscription(URI endpoint, String origin, byte[] p256dh, ECPublicKey p256dhKey, byte[] auth) {
        this(endpoint, origin, p256dh, p256dhKey, auth, null);
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    static final int AUTH_LENGTH = 16;

    /** The subscription token was unusable; the message says why, without echoing secrets. */
    public static final class InvalidSubscriptionException extends IllegalArgumentException {
        private final boolean refusedByPolicy;
        private final boolean addressRefused;

        InvalidSubscriptionException(String message) {
            this(message, false, false);
        }

        private InvalidSubscriptionException(String message, boolean refusedByPolicy, boolean addressRefused) {
            super(message);
            this.refusedByPolicy = refusedByPolicy;
            this.addressRefused = addressRefused;
        }

        /**
         * True when the subscription is well-formed but its endpoint is refused by this service's
         * settings (http, or a host standing for a forbidden address, without
         * {@code allow-insecure-endpoints}), false when the subscription itself is broken.
         */
        public boolean refusedByPolicy() {
            return refusedByPolicy;
        }

        /**
         * True when the endpoint's host, as written, stands for an address no push may reach
         * ({@link TargetAddresses#refusedHost}): a local name, a private, loopback, link-local or
         * reserved literal, or a numeric host in an obscure form.
         */
        public boolean addressRefused() {
            return addressRefused;
        }
    }

    /**
     * Parses and validates a subscription token.
     *
     * @param allowInsecureEndpoints also accept {@code http://} and loopback/private-address endpoints
     * @throws InvalidSubscriptionException with a reason fit for a device's last error
     */
    public static WebPushSubscription parse(String token, boolean allowInsecureEndpoints) {
        if (token == null || token.isBlank()) {
            throw new InvalidSubscriptionException("web push subscription is empty");
        }
        JsonNode root;
        try {
            root = JSON.readTree(token);
        } catch (JacksonException e) {
            throw new InvalidSubscriptionException("web push subscription is not valid JSON");
        }
        if (root == null || !root.isObject()) {
            throw new InvalidSubscriptionException("web push subscription must be a JSON object");
        }
        JsonNode endpointNode = root.get("endpoint");
        if (endpointNode == null || !endpointNode.isString() || endpointNode.asString().isBlank()) {
            throw new InvalidSubscriptionException("web push subscription has no \"endpoint\" string");
        }
        JsonNode keys = root.get("keys");
        if (keys == null || !keys.isObject()) {
            throw new InvalidSubscriptionException("web push subscription has no \"keys\" object");
        }
        URI endpoint = endpoint(endpointNode.asString(), allowInsecureEndpoints);
        byte[] p256dh = base64(keys, "p256dh");
        ECPublicKey key;
        try {
            key = P256.publicKey(p256dh);
        } catch (IllegalArgumentException e) {
            throw new InvalidSubscriptionException("web push subscription keys.p256dh is " + e.getMessage());
        }
        byte[] auth = base64(keys, "auth");
        if (auth.length != AUTH_LENGTH) {
            throw new InvalidSubscriptionException("web push subscription keys.auth must be 16 bytes, not " + auth.length);
        }
        return new WebPushSubscription(endpoint, origin(endpoint), p256dh, key, auth, serverKey(root.get(SERVER_KEY_FIELD)));
    }

    /**
     * The VAPID public key a subscription names (absent or null: none), in canonical form (base64url
     * without padding of the 65-byte uncompressed point).
     */
    private static String serverKey(JsonNode node) {
        if (node == null || node.isNull()) return null;
        if (!node.isString()) {
            throw new InvalidSubscriptionException("web push subscription " + SERVER_KEY_FIELD + " must be a string");
        }
        return canonicalServerKey(node.asString());
    }

    /**
     * A VAPID public key in canonical form (base64url without padding of the uncompressed P-256 point).
     *
     * @throws InvalidSubscriptionException when it is not a P-256 public key
     */
    public static String canonicalServerKey(String value) {
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(value.trim().replace('+', '-').replace('/', '_'));
        } catch (IllegalArgumentException e) {
            throw new InvalidSubscriptionException("web push subscription " + SERVER_KEY_FIELD + " is not base64url");
        }
        try {
            P256.publicKey(bytes);
        } catch (IllegalArgumentException e) {
            throw new InvalidSubscriptionException("web push subscription " + SERVER_KEY_FIELD + " is " + e.getMessage());
        }
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static URI endpoint(String value, boolean allowInsecure) {
        URI uri;
        try {
            uri = new URI(value);
        } catch (URISyntaxException e) {
            throw new InvalidSubscriptionException("web push subscription endpoint is not a valid URL");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!uri.isAbsolute() || uri.getHost() == null || !(scheme.equals("https") || scheme.equals("http"))) {
            throw new InvalidSubscriptionException("web push subscription endpoint must be an absolute https URL");
        }
        if (!allowInsecure) {
            if (!scheme.equals("https")) {
                throw new InvalidSubscriptionException(
                        "web push subscription endpoint must use https (http is allowed only with push.webpush.allow-insecure-endpoints)",
                        true, false);
            }
            // Names are not resolved here (a lookup per message and per registration); the provider's
            // client checks every resolved address where it connects.
            if (TargetAddresses.refusedHost(uri.getHost())) {
                throw new InvalidSubscriptionException("web push subscription endpoint must not point to a loopback, private,"
                        + " link-local or reserved address (allowed only with push.webpush.allow-insecure-endpoints)", true, true);
            }
        }
        return uri;
    }

    static String origin(URI uri) {
        String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        String host = uri.getHost().toLowerCase(Locale.ROOT);
        int port = uri.getPort();
        boolean defaultPort = port == -1 || (scheme.equals("https") && port == 443) || (scheme.equals("http") && port == 80);
        return scheme + "://" + host + (defaultPort ? "" : ":" + port);
    }

    private static byte[] base64(JsonNode keys, String name) {
        JsonNode node = keys.get(name);
        if (node == null || !node.isString() || node.asString().isEmpty()) {
            throw new InvalidSubscriptionException("web push subscription has no keys." + name + " string");
        }
        String value = node.asString().trim().replace('+', '-').replace('/', '_');
        try {
            return Base64.getUrlDecoder().decode(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidSubscriptionException("web push subscription keys." + name + " is not base64url");
        }
    }

    @Override
    public String toString() {
        return "WebPushSubscription[" + origin + "]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WebPushSubscription s && endpoint.equals(s.endpoint)
                && java.util.Arrays.equals(p256dh, s.p256dh) && java.util.Arrays.equals(auth, s.auth);
    }

    @Override
    public int hashCode() {
        return endpoint.hashCode();
    }
}
