package dev.pushservice.delivery.webpush;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.Signature;
import java.security.interfaces.ECPrivateKey;
import java.security.interfaces.ECPublicKey;
import java.util.Base64;

/**
 * An app's VAPID key pair (RFC 8292), P-256. Browsers subscribe with the public key
 * ({@link #publicKeyBase64Url()}, the {@code applicationServerKey} a web page passes to
 * {@code pushManager.subscribe}); the push service then accepts only pushes signed with the
 * private key. Replacing the pair therefore orphans every existing subscription of the app.
 *
 * <p>Serialized form, for encrypted storage and for importing keys made by other tools (the
 * {@code web-push} libraries use the same form): public key = base64url uncompressed point (87
 * characters), private key = base64url 32-byte scalar (43 characters). {@link #of} checks that the
 * two belong together. {@link #toString()} never shows the private key.
 *
 * @param subject optional per-app contact ({@code mailto:} or {@code https:} URL) for the JWT's
 *                {@code sub}; null uses the service-wide {@code push.webpush.subject}
 */
public record VapidKeys(ECPublicKey publicKey, ECPrivateKey privateKey, String subject) {

    public VapidKeys {
        if (publicKey == null || privateKey == null) {
            throw new IllegalArgumentException("a VAPID key pair needs both keys");
        }
        if (subject != null && subject.isBlank()) {
            subject = null;
        }
        if (subject != null && !validSubject(subject)) {
            throw new IllegalArgumentException("the VAPID subject must be a mailto: or https: URL");
        }
    }

    /** A fresh random pair. */
    public static VapidKeys generate() {
        KeyPair pair = P256.generate();
        return new VapidKeys((ECPublicKey) pair.getPublic(), (ECPrivateKey) pair.getPrivate(), null);
    }

    /**
     * Restores (or imports) a pair from its serialized form.
     *
     * @throws IllegalArgumentException when either key is malformed or they do not belong together
     */
    public static VapidKeys of(String publicKeyBase64Url, String privateKeyBase64Url, String subject) {
        ECPublicKey publicKey = P256.publicKey(decode(publicKeyBase64Url, "public"));
        ECPrivateKey privateKey = P256.privateKey(decode(privateKeyBase64Url, "private"));
        VapidKeys keys = new VapidKeys(publicKey, privateKey, subject);
        if (!keys.matches()) {
            throw new IllegalArgumentException("the VAPID private key does not belong to the public key");
        }
        return keys;
    }

    /** The same keys with another per-app subject. */
    public VapidKeys withSubject(String newSubject) {
        return new VapidKeys(publicKey, privateKey, newSubject);
    }

    /** The public key as browsers need it: base64url (no padding) of the 65-byte uncompressed point. */
    public String publicKeyBase64Url() {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(P256.encode(publicKey));
    }

    /** The private key for encrypted storage: base64url (no padding) of the 32-byte scalar. A secret. */
    public String privateKeyBase64Url() {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(P256.encode(privateKey));
    }

    static boolean validSubject(String subject) {
        return (subject.startsWith("mailto:") && subject.length() > 7) || (subject.startsWith("https://") && subject.length() > 8);
    }

    /** Whether the private key belongs to the public key (a signature made with one verifies with the other). */
    boolean matches() {
        try {
            byte[] probe = "vapid key pair check".getBytes(StandardCharsets.US_ASCII);
            Signature signer = Signature.getInstance("SHA256withECDSA");
            signer.initSign(privateKey);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance("SHA256withECDSA");
            verifier.initVerify(publicKey);
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    private static byte[] decode(String value, String which) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("the VAPID " + which + " key is missing");
        }
        try {
            return Base64.getUrlDecoder().decode(value.trim().replace('+', '-').replace('/', '_'));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the VAPID " + which + " key is not base64url");
        }
    }

    @Override
    public String toString() {
        return "VapidKeys[public=" + publicKeyBase64Url() + (subject == null ? "" : ", subject=" + subject) + "]";
    }
}
