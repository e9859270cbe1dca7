package dev.pushservice.webhooks;

import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Webhook delivery settings (README "Configuration").
 *
 * @param allowInsecure allow {@code http://} URLs and loopback, private and link-local targets; for
 *                      local testing only, off by default
 * @param timeout one attempt's limit: connect, send and the whole response
 * @param perEndpointConcurrency attempts in flight to one endpoint from one worker instance
 * @param maxInFlight attempts in flight from one worker instance, all endpoints together
 * @param rotationGrace how long deliveries also carry a signature by the previous secret after a rotation
 * @param disableAfter an endpoint whose attempts have all failed for this long is disabled
 * @param pollInterval how often a worker looks for facts to relay and deliveries that are due
 * @param trustedCaFile PEM file with extra CA certificates trusted for {@code https://} webhook URLs,
 *                      added to the JVM's default ones (a local receiver's self-made CA); null: none
 */
@ConfigurationProperties(prefix = "push.webhooks")
public record WebhookProperties(
        boolean allowInsecure,
        Duration timeout,
        int perEndpointConcurrency,
        int maxInFlight,
        Duration rotationGrace,
        Duration disableAfter,
        Duration pollInterval,
        Path trustedCaFile) {

    public WebhookProperties {
        if (timeout == null) timeout = Duration.ofSeconds(10);
        if (perEndpointConcurrency <= 0) perEndpointConcurrency = 8;
        if (maxInFlight <= 0) maxInFlight = 256;
        if (rotationGrace == null) rotationGrace = Duration.ofHours(24);
        if (disableAfter == null) disableAfter = Duration.ofHours(24);
        if (pollInterval == null) pollInterval = Duration.ofMillis(200);
        if (trustedCaFile != null && trustedCaFile.toString().isBlank()) trustedCaFile = null;
    }
}
