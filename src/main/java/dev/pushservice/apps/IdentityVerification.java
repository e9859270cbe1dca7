package dev.pushservice.apps;

import com.nimbusds.jose.jwk.ECKey;
import java.util.List;

/**
 * An app's identity-verification settings: when {@code required}, a registration that names an
 * {@code external_user_id} must carry an {@code identity_token}: an ES256 JWT whose signature
 * verifies with one of {@code keys} (EC P-256 public JWKs, matched by {@code kid}), with
 * {@code iss} equal to {@code issuer}, {@code aud} containing the app's id, {@code sub} equal to the
 * {@code external_user_id}, and an {@code exp} in the future.
 */
public record IdentityVerification(boolean required, String issuer, List<ECKey> keys) {

    public static final IdentityVerification OFF = new IdentityVerification(false, null, List.of());
}
