package dev.pushservice.delivery.fcm;

import java.net.URI;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * FCM settings ({@code push.fcm.*}, README "Configuration").
 *
 * @param baseUrl where FCM HTTP v1 lives ({@code PUSH_FCM_BASE_URL}, default {@code https://fcm.googleapis.com});
 *                point it at a local peer to run without Google
 * @param maxInFlight requests outstanding at once per provider ({@code PUSH_FCM_MAX_IN_FLIGHT}, default 1000);
 *                    {@code send} waits for a slot beyond that
 * @param requestTimeout how long one send may take before it counts as a transient failure
 */
@ConfigurationProperties(prefix = "push.fcm")
public record FcmProperties(URI baseUrl, int maxInFlight, Duration requestTimeout) {

    public static final URI DEFAULT_BASE_URL = URI.create("https://fcm.googleapis.com");

    public FcmProperties {
        if (baseUrl == null || baseUrl.toString().isBlank()) baseUrl = DEFAULT_BASE_URL;
        if (maxInFlight <= 0) maxInFlight = 1000;
        if (requestTimeout == null || requestTimeout.isZero() || requestTimeout.isNegative()) {
            requestTimeout = Duration.ofSeconds(10);
        }
    }
}
