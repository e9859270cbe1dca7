package dev.pushservice.devices;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.pushservice.apps.IdentityVerification;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import org.springframework.stereotype.Component;

/**
 * Checks {@code identity_token} against the app's identity-verification settings (see
 * {@link IdentityVerification} for the claims). Only ES256 is accepted: {@code none}, HMAC and
 * RSA tokens are refused before any key is tried. Clock skew allowed: {@value #SKEW_SECONDS} s.
 */
@Component
class IdentityTokens {

    static final long SKEW_SECONDS = 60;

    private final Clock clock;

    IdentityTokens(Clock clock) {
        this.clock = clock;
    }

    /** Null when the token proves {@code externalUserId}; otherwise why not (for a 422). */
    String problem(IdentityVerification settings, UUID appId, String token, String externalUserId) {
        SignedJWT jwt;
        try {
            jwt = SignedJWT.parse(token);
        } catch (ParseException e) {
            return "must be a signed JWT (compact serialization)";
        }
        if (!JWSAlgorithm.ES256.equals(jwt.getHeader().getAlgorithm())) {
            return "must be signed with ES256";
        }
        String kid = jwt.getHeader().getKeyID();
        List<ECKey> candidates = settings.keys().stream()
                .filter(k -> kid == null || kid.equals(k.getKeyID())).toList();
        if (candidates.isEmpty()) return "is signed with an unknown key id";
        if (candidates.stream().noneMatch(k -> verifies(jwt, k))) return "signature does not verify";
        JWTClaimsSet claims;
        try {
            claims = jwt.getJWTClaimsSet();
        } catch (ParseException e) {
            return "has unreadable claims";
        }
        Instant now = clock.instant();
        Date exp = claims.getExpirationTime();
        if (exp == null) return "must have an exp claim";
        if (exp.toInstant().plus(Duration.ofSeconds(SKEW_SECONDS)).isBefore(now)) return "has expired";
        Date nbf = claims.getNotBeforeTime();
        if (nbf != null && nbf.toInstant().minus(Duration.ofSeconds(SKEW_SECONDS)).isAfter(now)) return "is not valid yet";
        if (settings.issuer() == null || !settings.issuer().equals(claims.getIssuer())) return "has the wrong issuer";
        if (claims.getAudience() == null || !claims.getAudience().contains(appId.toString())) {
            return "audience must contain this app's id";
        }
        if (!externalUserId.equals(claims.getSubject())) return "subject does not match external_user_id";
        return null;
    }

    private static boolean verifies(SignedJWT jwt, ECKey key) {
        try {
            return jwt.verify(new ECDSAVerifier(key));
        } catch (JOSEException e) {
            return false;
        }
    }
}
