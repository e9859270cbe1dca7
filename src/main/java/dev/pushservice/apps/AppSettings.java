package dev.pushservice.apps;

import java.util.List;
import java.util.Map;

/**
 * What {@code /v1/app/settings} shows: the app's name, the time zone its analytics days are
 * counted in, and identity verification (public keys only; nothing here is secret).
 */
public record AppSettings(String name, String timezone, IdentityVerificationView identityVerification) {

    /** @param keys the configured public JWKs */
    public record IdentityVerificationView(boolean required, String issuer, List<Map<String, Object>> keys) {
    }
}
