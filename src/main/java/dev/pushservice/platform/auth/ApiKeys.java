package dev.pushservice.platform.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Raw API keys: prefix + 256 random bits, base64url. Only {@link #hash} of a key is ever stored.
 */
public final class ApiKeys {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int RANDOM_BYTES = 32;

    private ApiKeys() {
    }

    public static String generate(KeyKind kind) {
        byte[] bytes = new byte[RANDOM_BYTES];
        RANDOM.nextBytes(bytes);
        return kind.prefix() + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    public static byte[] hash(String rawKey) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(rawKey.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** What may be shown of a key after creation: its prefix and last four characters. */
    public static String hint(String rawKey) {
        int start = rawKey.startsWith(KeyKind.PUBLIC.prefix()) ? KeyKind.PUBLIC.prefix().length() : KeyKind.SERVER.prefix().length();
        return rawKey.substring(0, start) + "…" + rawKey.substring(rawKey.length() - 4);
    }
}
