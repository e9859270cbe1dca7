package dev.pushservice.delivery.webpush;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Web Push settings ({@code push.webpush.*}, environment variables in the README).
 *
 * @param subject the VAPID {@code sub} contact ({@code mailto:} or {@code https:} URL) push services
 *                use to reach the operator; an app's own subject overrides it. Apple's push service
 *                refuses placeholder contacts, so production must set a real one
 * @param allowInsecureEndpoints accept {@code http://} and loopback/private-address endpoints (local testing only)
 * @param maxInFlight requests awaiting a push service's answer at once; {@code send} waits for a slot beyond it
 * @param defaultTtl {@code TTL} when a message has none: 28 days, the spec's maximum
 * @param requestTimeout how long one request may take before it counts as a transient failure
 * @param connectTimeout how long connecting to a push service may take
 */
@ConfigurationProperties(prefix = "push.webpush")
public record WebPushProperties(
        String subject,
        boolean allowInsecureEndpoints,
        int maxInFlight,
        Duration defaultTtl,
        Duration requestTimeout,
        Duration connectTimeout) {

    public static final String DEFAULT_SUBJECT = "mailto:postmaster@localhost";

    public WebPushProperties {
        if (subject == null || subject.isBlank()) subject = DEFAULT_SUBJECT;
        if (!VapidKeys.validSubject(subject)) {
            throw new IllegalArgumentException("push.webpush.subject must be a mailto: or https: URL");
        }
        if (maxInFlight <= 0) maxInFlight = 1000;
        if (defaultTtl == null || defaultTtl.isNegative()) defaultTtl = Duration.ofDays(28);
        if (requestTimeout == null || !requestTimeout.isPositive()) requestTimeout = Duration.ofSeconds(30);
        if (connectTimeout == null || !connectTimeout.isPositive()) connectTimeout = Duration.ofSeconds(10);
    }

    /** All defaults: secure endpoints only, 1,000 in flight, 28-day TTL. */
    public static WebPushProperties defaults() {
        return new WebPushProperties(null, false, 0, null, null, null);
    }

    public WebPushProperties withAllowInsecureEndpoints(boolean allow) {
        return new WebPushProperties(subject, allow, maxInFlight, defaultTtl, requestTimeout, connectTimeout);
    }

    public WebPushProperties withMaxInFlight(int max) {
        return new WebPushProperties(subject, allowInsecureEndpoints, max, defaultTtl, requestTimeout, connectTimeout);
    }

    public WebPushProperties withSubject(String newSubject) {
        return new WebPushProperties(newSubject, allowInsecureEndpoints, maxInFlight, defaultTtl, requestTimeout, connectTimeout);
    }
}
