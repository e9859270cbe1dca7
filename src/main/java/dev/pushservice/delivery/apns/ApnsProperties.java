package dev.pushservice.delivery.apns;

import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Where and how the APNs provider connects ({@code push.apns.*}, environment variables
 * {@code PUSH_APNS_*}, see README). The defaults talk to Apple; {@code host}, {@code port} and
 * {@code trustedCaFile} point the service at a local peer such as Pushy's {@code MockApnsServer}.
 *
 * @param host APNs host for every app and environment; blank: Apple's production or sandbox host,
 *             by each app's credential environment
 * @param port APNs port (443 or Apple's alternative 2197)
 * @param trustedCaFile PEM file with extra CA certificates to trust for the APNs server, added to
 *                      the JVM's default trust store (for a local peer's self-made CA); blank: none
 * @param connections concurrent HTTP/2 connections per app client
 * @param maxInFlight requests one app client may have outstanding; {@code send} waits for a slot
 *                    beyond that (back-pressure)
 * @param requestTimeout how long one request may stay unanswered before it counts as a transient
 *                       failure and gives back its slot
 * @param connectTimeout TCP + TLS connection timeout
 */
@ConfigurationProperties(prefix = "push.apns")
public record ApnsProperties(
        String host,
        Integer port,
        Path trustedCaFile,
        Integer connections,
        Integer maxInFlight,
        Duration requestTimeout,
        Duration connectTimeout) {

    public ApnsProperties {
        if (host != null && host.isBlank()) host = null;
        if (port == null || port <= 0) port = 443;
        if (trustedCaFile != null && trustedCaFile.toString().isBlank()) trustedCaFile = null;
        if (connections == null || connections <= 0) connections = 2;
        if (maxInFlight == null || maxInFlight <= 0) maxInFlight = 1000;
        if (requestTimeout == null || requestTimeout.isZero() || requestTimeout.isNegative()) {
            requestTimeout = Duration.ofSeconds(30);
        }
        if (connectTimeout == null || connectTimeout.isZero() || connectTimeout.isNegative()) {
            connectTimeout = Duration.ofSeconds(10);
        }
    }

    /** Apple's hosts, the default port and the defaults above. */
    public static ApnsProperties defaults() {
        return new ApnsProperties(null, null, null, null, null, null, null);
    }
}
