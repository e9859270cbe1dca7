package dev.pushservice.apps;

import java.util.List;
import java.util.Map;

/**
 * What {@code /v1/app/settings} shows: the app's name, the time zone its analytics days are
 * counted in, identity verification (public keys only), and per provider what is configured
 * (key id, team id, project id, VAPID public key: never a secret), or null.
 */
public record AppSettings(String name, String timezone, IdentityVerificationView identityVerification,
                          Object apns, Object fcm, Object webpush) {

    /** @param keys the configured public JWKs */
    public record IdentityVerificationView(boolean required, String issuer, List<Map<String, Object>> keys) {
    }
}
