package dev.pushservice.platform.crypto;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Encrypts secrets at rest (provider credentials, VAPID private keys, webhook secrets) with
 * AES-256-GCM under {@code PUSH_SECRET_KEY}. A sealed value is {@code 0x01 | 12-byte nonce |
 * ciphertext+tag}; the {@code context} (e.g. {@code "app:<id>:apns"}) is bound as associated data,
 * so a sealed value copied to another row or purpose does not open. Thread-safe.
 */
public final class SecretBox {

    private static final byte VERSION = 1;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;

    private final SecretKey key;
    private final SecureRandom random = new SecureRandom();

    public SecretBox(byte[] keyBytes) {
        if (keyBytes.length != 32) {
            throw new IllegalArgumentException("PUSH_SECRET_KEY must be 32 bytes, base64-encoded (e.g. openssl rand -base64 32)");
        }
        this.key = new SecretKeySpec(keyBytes.clone(), "AES");
    }

    public byte[] seal(byte[] plaintext, String context) {
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(context.getBytes(StandardCharsets.UTF_8));
            byte[] sealed = cipher.doFinal(plaintext);
            return ByteBuffer.allocate(1 + NONCE_BYTES + sealed.length).put(VERSION).put(nonce).put(sealed).array();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM unavailable", e);
        }
    }

    /** Opens a sealed value; fails when the key or the context differ, or the value was altered. */
    public byte[] open(byte[] sealed, String context) {
        if (sealed.length < 1 + NONCE_BYTES + TAG_BITS / 8 || sealed[0] != VERSION) {
            throw new IllegalArgumentException("Not a sealed secret");
        }
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, Arrays.copyOfRange(sealed, 1, 1 + NONCE_BYTES)));
            cipher.updateAAD(context.getBytes(StandardCharsets.UTF_8));
            return cipher.doFinal(sealed, 1 + NONCE_BYTES, sealed.length - 1 - NONCE_BYTES);
        } catch (javax.crypto.AEADBadTagException e) {
            throw new IllegalStateException("A stored secret does not decrypt: PUSH_SECRET_KEY differs from the key it was stored with");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM unavailable", e);
        }
    }
}
