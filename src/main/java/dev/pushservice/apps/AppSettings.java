package dev.pushservice.apps;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * What {@code /v1/app/settings} shows: the app's name, the time zone its analytics days are
 * counted in, identity verification (public keys only), per provider what is configured
 * (key id, team id, project id, VAPID public key: never a secret) or null, the notification
 * defaults ({@link NotificationDefaults}) and the frequency cap ({@link FrequencyCap}, null when off). The provider views
 * are filled by the providers' {@link SettingsSection}s; this package knows their shape (it is
 * the settings contract) but no provider. {@code quietHours} and {@code throttlePerMinute} are the delivery
 * timing controls ({@link DeliveryTiming}).
 */
public record AppSettings(String name, String timezone, IdentityVerificationView identityVerification,
                          ApnsView apns, FcmView fcm, WebPushView webpush,
                          NotificationDefaults notificationDefaults, FrequencyCap frequencyCap,
                          QuietHoursView quietHours, Integer throttlePerMinute) {

    /** Quiet hours as {@code HH:MM} local times; null when none are set. */
    public record QuietHoursView(String start, String end) {
    }

    /** @param keys the configured public JWKs */
    public record IdentityVerificationView(boolean required, String issuer, List<Map<String, Object>> keys) {
    }

    /**
     * The APNs credential as a read shows it. {@code auth} is {@code token} (with key and team id)
     * or {@code certificate} (with its subject and expiry); absent fields are left out.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ApnsView(String bundleId, String environment, String auth, String keyId, String teamId,
                           String certificateSubject, Instant certificateExpiresAt, CredentialsInvalid invalid) {

        /** Credentials APNs has not refused. */
        public ApnsView(String bundleId, String environment, String auth, String keyId, String teamId,
                        String certificateSubject, Instant certificateExpiresAt) {
            this(bundleId, environment, auth, keyId, teamId, certificateSubject, certificateExpiresAt, null);
        }
    }

    /**
     * The provider refuses the credentials ({@code reason}: its words) since {@code detectedAt}; gone
     * once the app sets new ones.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record CredentialsInvalid(String reason, Instant detectedAt) {
    }

    /** The FCM service account as a read shows it. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record FcmView(String projectId, String clientEmail,
                          @JsonInclude(JsonInclude.Include.NON_NULL) CredentialsInvalid invalid) {

        /** A service account FCM has not refused. */
        public FcmView(String projectId, String clientEmail) {
            this(projectId, clientEmail, null);
        }
    }

    /** The app's VAPID public key (base64url, uncompressed P-256 point) for {@code pushManager.subscribe}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record WebPushView(String vapidPublicKey) {
    }
}
