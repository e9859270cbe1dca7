package dev.pushservice.delivery;

import java.time.Clock;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A provider's memory of the app credentials it refused: after the first authentication rejection of
 * a credential version (a revoked APNs key, an FCM service account without permission), every later
 * message of that app and version is rejected {@code credentials_invalid} at once, without a request,
 * and the refusal is recorded once for the settings read ({@link CredentialSource#rejected}). A new
 * version (the app set new credentials) is tried again. Used by the APNs and FCM providers.
 *
 * <p>Threads: {@link #refused} runs on the providers' sending threads, {@link #reject} on Netty I/O
 * threads; both only touch a concurrent map. The database write runs once per refused version on a
 * virtual thread of its own, so no I/O thread waits for it. Thread-safe.
 */
public final class CredentialRejections {

    private static final Logger log = LoggerFactory.getLogger(CredentialRejections.class);

    private record Rejection(long version, String reason) {
    }

    private final String provider;
    private final CredentialSource<?> credentials;
    private final Clock clock;
    private final ConcurrentHashMap<UUID, Rejection> rejected = new ConcurrentHashMap<>();

    /** @param provider the provider's name, for the detail and log lines ({@code APNs}, {@code FCM}) */
    public CredentialRejections(String provider, CredentialSource<?> credentials, Clock clock) {
        this.provider = provider;
        this.credentials = credentials;
        this.clock = clock;
    }

    /** The rejection to answer at once for {@code appId}'s credential {@code version}, or null: send it. */
    public DeliveryResult.Rejected refused(UUID appId, long version) {
        Rejection r = rejected.get(appId);
        if (r == null || r.version != version) return null;
        return new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID,
                provider + " refused these credentials (" + r.reason + "); not sent until the app sets new ones");
    }

    /** The provider refused {@code appId}'s credential {@code version} for {@code reason} (its words). Never blocks. */
    public void reject(UUID appId, long version, String reason) {
        Rejection fresh = new Rejection(version, reason);
        Rejection before = rejected.get(appId);
        if (before != null && before.version >= version) return;
        if (before == null ? rejected.putIfAbsent(appId, fresh) != null : !rejected.replace(appId, before, fresh)) return;
        java.time.Instant at = clock.instant();
        log.warn("{} refused the credentials of app {} (version {}): {}; its sends stop until they change",
                provider, appId, version, reason);
        Thread.ofVirtual().name("credentials-rejected").start(() -> {
            try {
                credentials.rejected(appId, version, reason, at);
            } catch (RuntimeException e) {
                log.warn("Could not record that {} refused the credentials of app {}: {}", provider, appId, e.toString());
            }
        });
    }
}
