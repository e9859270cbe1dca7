package dev.pushservice.delivery.webpush;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.Provider;
import java.security.SecureRandom;
import java.security.interfaces.ECPublicKey;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * RFC 8291 message encryption: the {@code aes128gcm} content coding of RFC 8188 with one record,
 * keyed by ECDH between a fresh sender key pair and the subscription's {@code p256dh} key, mixed
 * with its {@code auth} secret. The output is the complete request body: the 86-byte header
 * ({@code salt || rs || idlen || sender public key}) followed by the ciphertext and tag.
 *
 * <p>Thread-safe and stateless: every call uses fresh JCA objects (cheap on ACCP) instead of
 * shared ones, which are not thread-safe.
 */
public final class WebPushEncryption {

    /** The record size announced in the header; push services must accept 4096-byte bodies. */
    static final int RECORD_SIZE = 4096;
    static final int SALT_LENGTH = 16;
    static final int HEADER_LENGTH = SALT_LENGTH + 4 + 1 + P256.POINT_LENGTH;
    private static final int TAG_LENGTH = 16;
    /** RFC 8291 §4: a 4096-byte body leaves 3993 bytes of plaintext (header, delimiter and tag take the rest). */
    public static final int MAX_PLAINTEXT = RECORD_SIZE - HEADER_LENGTH - 1 - TAG_LENGTH;

    private static final byte[] KEY_INFO = ascii("WebPush: info\0");
    private static final byte[] CEK_INFO = ascii("Content-Encoding: aes128gcm\0\1");
    private static final byte[] NONCE_INFO = ascii("Content-Encoding: nonce\0\1");
    private static final byte LAST_RECORD_DELIMITER = 0x02;

    private static final SecureRandom RANDOM = secureRandom();

    private WebPushEncryption() {
    }

    /**
     * Encrypts {@code plaintext} for one subscription with a fresh sender key pair and salt.
     *
     * @throws IllegalArgumentException when the plaintext is over {@link #MAX_PLAINTEXT} bytes
     */
    public static byte[] encrypt(byte[] plaintext, WebPushSubscription subscription) {
        byte[] salt = new byte[SALT_LENGTH];
        RANDOM.nextBytes(salt);
        return encrypt(plaintext, subscription.p256dhKey(), subscription.p256dh(), subscription.auth(),
                P256.generate(), salt);
    }

    /** The deterministic core, with the sender key pair and salt given (tests use RFC 8291's). */
    static byte[] encrypt(byte[] plaintext, ECPublicKey uaKey, byte[] uaPublic, byte[] authSecret,
            KeyPair sender, byte[] salt) {
        if (plaintext.length > MAX_PLAINTEXT) {
            throw new IllegalArgumentException("plaintext is " + plaintext.length + " bytes, over the "
                    + MAX_PLAINTEXT + "-byte limit of one 4096-byte record");
        }
        try {
            byte[] asPublic = P256.encode((ECPublicKey) sender.getPublic());

            KeyAgreement ecdh = keyAgreement();
            ecdh.init(sender.getPrivate());
            ecdh.doPhase(uaKey, true);
            byte[] ecdhSecret = ecdh.generateSecret();

            Mac hmac = hmac();
            // RFC 8291 §3.3: IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" || 0x00 || ua_public || as_public, 32)
            byte[] prkKey = hmacOf(hmac, authSecret, ecdhSecret);
            hmac.init(new SecretKeySpec(prkKey, "HmacSHA256"));
            hmac.update(KEY_INFO);
            hmac.update(uaPublic);
            hmac.update(asPublic);
            hmac.update((byte) 1);
            byte[] ikm = hmac.doFinal();
            // RFC 8188 §2.2/2.3: CEK and NONCE from HKDF(salt, IKM); one expansion block each, truncated.
            byte[] prk = hmacOf(hmac, salt, ikm);
            hmac.init(new SecretKeySpec(prk, "HmacSHA256"));
            byte[] cek = hmac.doFinal(CEK_INFO);
            byte[] nonce = hmac.doFinal(NONCE_INFO);

            byte[] out = new byte[HEADER_LENGTH + plaintext.length + 1 + TAG_LENGTH];
            System.arraycopy(salt, 0, out, 0, SALT_LENGTH);
            out[16] = (byte) (RECORD_SIZE >>> 24);
            out[17] = (byte) (RECORD_SIZE >>> 16);
            out[18] = (byte) (RECORD_SIZE >>> 8);
            out[19] = (byte) RECORD_SIZE;
            out[20] = (byte) P256.POINT_LENGTH;
            System.arraycopy(asPublic, 0, out, 21, P256.POINT_LENGTH);

            Cipher gcm = aesGcm();
            gcm.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(cek, 0, 16, "AES"), new GCMParameterSpec(128, nonce, 0, 12));
            int written = gcm.update(plaintext, 0, plaintext.length, out, HEADER_LENGTH);
            written += gcm.doFinal(new byte[] {LAST_RECORD_DELIMITER}, 0, 1, out, HEADER_LENGTH + written);
            if (written != plaintext.length + 1 + TAG_LENGTH) {
                throw new IllegalStateException("AES-GCM wrote " + written + " bytes");
            }
            return out;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Web Push encryption failed", e);
        }
    }

    private static byte[] hmacOf(Mac hmac, byte[] key, byte[] data) throws GeneralSecurityException {
        hmac.init(new SecretKeySpec(key, "HmacSHA256"));
        return hmac.doFinal(data);
    }

    private static KeyAgreement keyAgreement() throws GeneralSecurityException {
        Provider p = CryptoProviders.forAlgorithm("KeyAgreement", "ECDH");
        return p == null ? KeyAgreement.getInstance("ECDH") : KeyAgreement.getInstance("ECDH", p);
    }

    private static Mac hmac() throws GeneralSecurityException {
        Provider p = CryptoProviders.forAlgorithm("Mac", "HmacSHA256");
        return p == null ? Mac.getInstance("HmacSHA256") : Mac.getInstance("HmacSHA256", p);
    }

    private static Cipher aesGcm() throws GeneralSecurityException {
        Provider p = CryptoProviders.forAlgorithm("Cipher", "AES/GCM/NoPadding");
        return p == null ? Cipher.getInstance("AES/GCM/NoPadding") : Cipher.getInstance("AES/GCM/NoPadding", p);
    }

    private static SecureRandom secureRandom() {
        Provider p = CryptoProviders.forAlgorithm("SecureRandom", "DEFAULT");
        if (p != null) {
            try {
                return SecureRandom.getInstance("DEFAULT", p);
            } catch (GeneralSecurityException e) {
                // fall through to the JDK's
            }
        }
        return new SecureRandom();
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
