package dev.pushservice.support;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.HexFormat;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Fresh push tokens and names for tests. Each test makes its own, so tests can share an app
 * server, a database and the protocol peers without seeing each other's devices.
 */
public final class TestTokens {

    private TestTokens() {
    }

    /** An APNs device token: 32 random bytes in hex. */
    public static String apns() {
        return HexFormat.of().formatHex(randomBytes(32));
    }

    /** An FCM registration token (opaque to the service; this one says what it is in a failure message). */
    public static String fcm() {
        return "fcm-" + UUID.randomUUID();
    }

    /**
     * A browser's push subscription as JSON (what {@code PushManager.subscribe} hands the page) for
     * {@code endpoint}, with a fresh P-256 public key and auth secret.
     */
    public static String webSubscription(String endpoint) {
        ECKey key;
        try {
            key = new ECKeyGenerator(Curve.P_256).generate();
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
        // the uncompressed point: 0x04 | x | y (nimbus pads each coordinate to 32 bytes)
        byte[] point = ByteBuffer.allocate(65).put((byte) 4).put(key.getX().decode()).put(key.getY().decode()).array();
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        return "{\"endpoint\":\"" + endpoint + "\",\"keys\":{\"p256dh\":\"" + b64.encodeToString(point)
                + "\",\"auth\":\"" + b64.encodeToString(randomBytes(16)) + "\"}}";
    }

    /** {@code prefix} followed by a random UUID: a name no other test uses. */
    public static String unique(String prefix) {
        return prefix + UUID.randomUUID();
    }

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        ThreadLocalRandom.current().nextBytes(b);
        return b;
    }
}
