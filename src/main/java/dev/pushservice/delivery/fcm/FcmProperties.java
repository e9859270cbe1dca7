package dev.pushservice.delivery.fcm;

import java.net.URI;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * FCM settings ({@code push.fcm.*}, README "Configuration"). Unset or non-positive values take the
 * defaults.
 *
 * @param baseUrl where FCM HTTP v1 lives ({@code PUSH_FCM_BASE_URL}, default {@code https://fcm.googleapis.com});
 *                point it at a local peer to run without Google
 * @param maxInFlight requests outstanding at once per provider ({@code PUSH_FCM_MAX_IN_FLIGHT}, default 1000);
 *                    {@code send} waits for a slot beyond that
 * @param requestTimeout how long one send may take before it counts as a transient failure (default 10 s)
 * @param connectTimeout how long connecting to FCM may take (default 10 s)
 */
@ConfigurationProperties(prefix = "push.fcm")
public record FcmProperties(URI baseUrl, int maxInFlight, Duration requestTimeout, Duration connectTimeout) {

    public static final URI DEFAULT_BASE_URL = URI.create("https://fcm.googleapis.com");

    public FcmProperties {
        if (baseUrl == null || baseUrl.toString().isBlank()) baseUrl = DEFAULT_BASE_URL;
        if (maxInFlight <= 0) maxInFlight = 1000;
        if (requestTimeout == null || !requestTimeout.isPositive()) requestTimeout = Duration.ofSeconds(10);
        if (connectTimeout == null || !connectTimeout.isPositive()) connectTimeout = Duration.ofSeconds(10);
    }

    /** Google's FCM and the defaults above. */
    public static FcmProperties defaults() {
        return new FcmProperties(null, 0, null, null);
    }

    public FcmProperties withBaseUrl(URI url) {
        return new FcmProperties(url, maxInFlight, requestTimeout, connectTimeout);
    }

    public FcmProperties withMaxInFlight(int max) {
        return new FcmProperties(baseUrl, max, requestTimeout, connectTimeout);
    }

    public FcmProperties withRequestTimeout(Duration timeout) {
        return new FcmProperties(baseUrl, maxInFlight, timeout, connectTimeout);
    }
}
