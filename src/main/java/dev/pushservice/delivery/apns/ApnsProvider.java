package dev.pushservice.delivery.apns;

import dev.pushservice.platform.jobs.BackgroundPriority;
import com.eatthepath.pushy.apns.ApnsClient;
import com.eatthepath.pushy.apns.ApnsClientBuilder;
import com.eatthepath.pushy.apns.PushNotificationResponse;
import com.eatthepath.pushy.apns.auth.ApnsSigningKey;
import com.eatthepath.pushy.apns.util.SimpleApnsPushNotification;
import dev.pushservice.delivery.CredentialCheck;
import dev.pushservice.delivery.CredentialRejections;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ProviderPreview;
import dev.pushservice.delivery.PushProvider;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.platform.crypto.TrustedCertificates;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.Priority;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers iOS pushes through APNs with Pushy. Thread-safe and long-lived: one {@link ApnsClient}
 * (with {@link ApnsProperties#connections()} HTTP/2 connections) per app, credential version and
 * delivery lane (the message's priority), built on first use and replaced, the old one closed
 * gracefully, when the app's credential version changes. All clients share one Netty event loop
 * group. A client per lane, so a transactional push travels on connections of its own instead of
 * queueing behind the hundreds of bulk requests open on a shared one (what it waited on shared
 * connections: bench/README.md, "Figures behind design comments").
 *
 * <p>Back-pressure: each client allows {@link ApnsProperties#maxInFlight()} outstanding requests;
 * {@link #send} blocks the calling thread (a delivery lane's sender thread, a platform thread) until a
 * slot is free; the lanes' own in-flight budgets are meant to stay below it, so it rarely waits. A request unanswered after {@link ApnsProperties#requestTimeout()} completes as a transient
 * failure and frees its slot.
 *
 * <p>Results (nothing is retried here; the delivery core retries {@link DeliveryResult.Failed}),
 * with APNs' reason as the detail:
 * <ul>
 *   <li>accepted: {@link DeliveryResult.Accepted} with the {@code apns-id};</li>
 *   <li>{@code token_invalid}: {@code BadDeviceToken}, {@code DeviceTokenNotForTopic}, a token that
 *       is not hexadecimal (never sent); {@code token_unregistered}: {@code Unregistered},
 *       {@code ExpiredToken} and any 410, with APNs' invalidation time;</li>
 *   <li>{@code payload_too_large}: over 4,096 bytes (never sent) or {@code PayloadTooLarge};
 *       {@code payload_invalid}: a bad {@code platform_overrides.ios} (never sent), {@code BadCollapseId},
 *       {@code BadExpirationDate}, {@code BadPriority}, {@code PayloadEmpty}, …;</li>
 *   <li>{@code credentials_missing}: the app has none; {@code credentials_invalid}: credentials Pushy
 *       cannot use, {@code InvalidProviderToken}, {@code BadCertificate}, {@code BadTopic},
 *       {@code TopicDisallowed}, any 403, …; {@code provider_rejected}: any other 4xx;</li>
 *   <li>transient: {@code device_rate_limited} ({@code TooManyRequests} and any other 429: too many
 *       pushes to one token), {@code rate_limited} ({@code TooManyProviderTokenUpdates}),
 *       {@code access_token_unavailable} ({@code ExpiredProviderToken}: Pushy makes a new token for the
 *       next attempt), {@code provider_unavailable} (5xx, {@code IdleTimeout}, {@code Shutdown}),
 *       {@code connection_failed}, {@code timeout}.</li>
 * </ul>
 *
 * <p>Returned futures complete on a Netty I/O thread: continuations must not block.
 */
public final class ApnsProvider implements PushProvider {

    private static final Logger log = LoggerFactory.getLogger(ApnsProvider.class);

    /** APNs' reasons (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns) by code. */
    private static final Map<String, ReasonCode> REASONS = Map.ofEntries(
            Map.entry("BadDeviceToken", ReasonCode.TOKEN_INVALID),
            Map.entry("DeviceTokenNotForTopic", ReasonCode.TOKEN_INVALID),
            Map.entry("Unregistered", ReasonCode.TOKEN_UNREGISTERED),
            Map.entry("ExpiredToken", ReasonCode.TOKEN_UNREGISTERED),
            Map.entry("PayloadTooLarge", ReasonCode.PAYLOAD_TOO_LARGE),
            Map.entry("BadCollapseId", ReasonCode.PAYLOAD_INVALID),
            Map.entry("BadExpirationDate", ReasonCode.PAYLOAD_INVALID),
            Map.entry("BadPriority", ReasonCode.PAYLOAD_INVALID),
            Map.entry("BadMessageId", ReasonCode.PAYLOAD_INVALID),
            Map.entry("PayloadEmpty", ReasonCode.PAYLOAD_INVALID),
            Map.entry("InvalidPushType", ReasonCode.PAYLOAD_INVALID),
            Map.entry("DuplicateHeaders", ReasonCode.PAYLOAD_INVALID),
            Map.entry("BadCertificate", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("BadCertificateEnvironment", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("Forbidden", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("InvalidProviderToken", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("MissingProviderToken", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("UnrelatedKeyIdInToken", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("BadEnvironmentKeyIdInToken", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("BadTopic", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("MissingTopic", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("TopicDisallowed", ReasonCode.CREDENTIALS_INVALID),
            Map.entry("TooManyRequests", ReasonCode.DEVICE_RATE_LIMITED),
            Map.entry("TooManyProviderTokenUpdates", ReasonCode.RATE_LIMITED),
            Map.entry("ExpiredProviderToken", ReasonCode.ACCESS_TOKEN_UNAVAILABLE),
            Map.entry("IdleTimeout", ReasonCode.PROVIDER_UNAVAILABLE),
            Map.entry("Shutdown", ReasonCode.PROVIDER_UNAVAILABLE),
            Map.entry("InternalServerError", ReasonCode.PROVIDER_UNAVAILABLE),
            Map.entry("ServiceUnavailable", ReasonCode.PROVIDER_UNAVAILABLE));

    private final ApnsProperties properties;
    private final CredentialSource<ApnsCredentials> credentials;
    private final Clock clock;
    private final X509Certificate[] trustedServerCertificates;
    /** I/O of the bulk, normal and high lanes' clients: below API requests when the cores are all busy. */
    private final EventLoopGroup eventLoopGroup;
    /** I/O of the transactional lane's clients, at the normal priority: a user waits for those pushes. */
    private final EventLoopGroup transactionalLoops;
    private final ConcurrentHashMap<ClientKey, AppClient> clients = new ConcurrentHashMap<>();
    /** Credential versions APNs refused: their later messages are rejected without a request. */
    private final CredentialRejections rejections;

    /** Which client a message goes out on: its app's, for its lane. */
    private record ClientKey(UUID appId, Priority lane) {
    }
    private final HashedWheelTimer timeouts = new HashedWheelTimer(
            new DefaultThreadFactory("apns-timeouts", true), 50, TimeUnit.MILLISECONDS);
    private volatile boolean closed;

    @SuppressWarnings("deprecation") // Pushy 0.15 picks its channel class from NioEventLoopGroup
    private ApnsProvider(Builder builder, X509Certificate[] trustedServerCertificates) {
        this.properties = builder.properties;
        this.credentials = builder.credentials;
        this.clock = builder.clock;
        this.rejections = new CredentialRejections("APNs", builder.credentials, builder.clock);
        this.trustedServerCertificates = trustedServerCertificates;
        this.eventLoopGroup = new NioEventLoopGroup(Runtime.getRuntime().availableProcessors(),
                BackgroundPriority.threads(new DefaultThreadFactory("apns-io", true)));
        this.transactionalLoops = new NioEventLoopGroup(1, new DefaultThreadFactory("apns-io-tx", true));
        // its thread now, at the constructing thread's priority: a thread inherits its creator's, and a lowered
        // sender would otherwise start it on the first send
        timeouts.start();
    }

    /** @param credentials where each app's APNs credentials come from (decrypted) */
    public static Builder builder(CredentialSource<ApnsCredentials> credentials) {
        return new Builder(credentials);
    }

    @Override
    public Platform platform() {
        return Platform.IOS;
    }

    @Override
    public ProviderPreview preview(PushMessage message) {
        if (message.platform() != Platform.IOS) throw new IllegalArgumentException("not an iOS message: " + message);
        String topic = "";
        try {
            topic = credentials.find(message.appId()).map(v -> v.credentials().bundleId()).orElse("");
        } catch (CredentialSource.Unusable e) {
            // the preview still shows the payload; a send would be rejected with credentials_invalid
        }
        try {
            return ApnsPayload.preview(ApnsPayload.build(message, topic, clock.instant()));
        } catch (ApnsPayload.Unsendable e) {
            return new ProviderPreview.Refused(e.reason, e.detail);
        }
    }

    @Override
    public CompletableFuture<DeliveryResult> send(PushMessage message) {
        if (message.platform() != Platform.IOS) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("not an iOS message: " + message));
        }
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException("APNs provider is closed"));
        }
        Optional<CredentialSource.Versioned<ApnsCredentials>> found;
        try {
            found = credentials.find(message.appId());
        } catch (CredentialSource.Unusable e) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, e.getMessage()));
        }
        if (found.isEmpty()) {
            for (Priority lane : Priority.values()) {
                AppClient stale = clients.remove(new ClientKey(message.appId(), lane));
                if (stale != null) stale.close();
            }
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "the app has no APNs credentials"));
        }
        AppClient client = clientFor(new ClientKey(message.appId(), message.priority()), found.get());
        if (client.unusable != null) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, client.unusable));
        }
        long version = found.get().version();
        DeliveryResult.Rejected refused = rejections.refused(message.appId(), version);
        if (refused != null) return done(refused); // APNs refused this key already: no request

        SimpleApnsPushNotification notification;
        try {
            notification = ApnsPayload.build(message, client.topic, clock.instant());
        } catch (ApnsPayload.Unsendable e) {
            return done(new DeliveryResult.Rejected(e.reason, e.detail));
        }

        try {
            client.inFlight.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done(new DeliveryResult.Failed(ReasonCode.INTERRUPTED, "before sending"));
        }
        CompletableFuture<DeliveryResult> result = new CompletableFuture<>();
        try {
            var sent = client.apns.sendNotification(notification);
            // A wheel timer, not CompletableFuture.orTimeout: cancelling is O(1) and wakes no thread,
            // which matters at tens of thousands of sends per second
            Timeout timeout = timeouts.newTimeout(t -> result.complete(new DeliveryResult.Failed(ReasonCode.TIMEOUT,
                    "no answer within " + properties.requestTimeout().toMillis() + " ms")),
                    properties.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
            sent.whenComplete((response, error) -> {
                timeout.cancel();
                DeliveryResult answer = toResult(response, error);
                if (answer instanceof DeliveryResult.Rejected r && r.reason() == ReasonCode.CREDENTIALS_INVALID) {
                    rejections.reject(message.appId(), version, r.detail());
                }
                result.complete(answer);
            });
        } catch (RuntimeException e) {
            result.complete(new DeliveryResult.Failed(ReasonCode.CONNECTION_FAILED, describe(e)));
        }
        // The slot is released exactly once, by whichever comes first (answer, timeout, error), and
        // before the caller's continuations run
        return result.whenComplete((r, e) -> client.inFlight.release());
    }

    /**
     * A made-up, well-formed device token for {@link #checkCredentials}: no device has it, so APNs answers
     * {@code BadDeviceToken} when it accepts the key and nothing reaches a person.
     */
    static final String CHECK_TOKEN = "0".repeat(64);

    /**
     * Asks APNs about the app's credentials with a background push (no alert, lowest priority, expired at
     * once) to {@link #CHECK_TOKEN}, on the transactional lane's client: {@code BadDeviceToken} (or any
     * answer but a credentials refusal) means APNs took the key or certificate.
     */
    @Override
    public CompletableFuture<CredentialCheck> checkCredentials(UUID appId) {
        Optional<CredentialSource.Versioned<ApnsCredentials>> found;
        try {
            found = credentials.find(appId);
        } catch (CredentialSource.Unusable e) {
            return CompletableFuture.completedFuture(CredentialCheck.invalid(e.getMessage()));
        }
        if (found.isEmpty()) return CompletableFuture.completedFuture(CredentialCheck.notConfigured());
        AppClient client = clientFor(new ClientKey(appId, Priority.TRANSACTIONAL), found.get());
        if (client.unusable != null) return CompletableFuture.completedFuture(CredentialCheck.invalid(client.unusable));
        long version = found.get().version();
        CompletableFuture<CredentialCheck> result = new CompletableFuture<>();
        try {
            var sent = client.apns.sendNotification(new SimpleApnsPushNotification(CHECK_TOKEN, client.topic,
                    "{\"aps\":{\"content-available\":1}}", clock.instant(),
                    com.eatthepath.pushy.apns.DeliveryPriority.CONSERVE_POWER, com.eatthepath.pushy.apns.PushType.BACKGROUND));
            Timeout timeout = timeouts.newTimeout(t -> result.complete(CredentialCheck.unavailable(
                    "timeout: no answer within " + properties.requestTimeout().toMillis() + " ms")),
                    properties.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
            sent.whenComplete((response, error) -> {
                timeout.cancel();
                DeliveryResult answer = toResult(response, error);
                if (answer instanceof DeliveryResult.Rejected r && r.reason() == ReasonCode.CREDENTIALS_INVALID) {
                    rejections.reject(appId, version, r.detail());
                }
                result.complete(CredentialCheck.of(answer));
            });
        } catch (RuntimeException e) {
            result.complete(CredentialCheck.unavailable("connection_failed: " + describe(e)));
        }
        return result;
    }

    /** Requests this provider has outstanding for {@code appId}, all lanes; for monitoring and tests. */
    public int inFlight(UUID appId) {
        int n = 0;
        for (Priority lane : Priority.values()) {
            AppClient client = clients.get(new ClientKey(appId, lane));
            if (client != null) n += properties.maxInFlight() - client.inFlight.availablePermits();
        }
        return n;
    }

    /** Closes every client, waiting a few seconds for outstanding answers, then the event loops. */
    @Override
    public void close() {
        closed = true;
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        clients.values().forEach(c -> closing.add(c.close()));
        clients.clear();
        try {
            CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("APNs clients did not close cleanly: {}", describe(e));
        }
        eventLoopGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        transactionalLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        timeouts.stop();
    }

    static DeliveryResult toResult(PushNotificationResponse<?> response, Throwable error) {
        if (error != null) {
            return new DeliveryResult.Failed(ReasonCode.CONNECTION_FAILED, describe(error));
        }
        if (response.isAccepted()) {
            return new DeliveryResult.Accepted(response.getApnsId() == null ? null : response.getApnsId().toString());
        }
        int status = response.getStatusCode();
        String reason = response.getRejectionReason().orElse(null);
        String detail = reason != null ? reason : "HTTP " + status;
        ReasonCode code = reason == null ? null : REASONS.get(reason);
        if (code == null) {
            code = status == 410 ? ReasonCode.TOKEN_UNREGISTERED
                    : status == 403 ? ReasonCode.CREDENTIALS_INVALID
                    : status == 413 ? ReasonCode.PAYLOAD_TOO_LARGE
                    : status == 429 ? ReasonCode.DEVICE_RATE_LIMITED
                    : status >= 500 ? ReasonCode.PROVIDER_UNAVAILABLE
                    : ReasonCode.PROVIDER_REJECTED;
        }
        if (!code.permanent()) return new DeliveryResult.Failed(code, detail, null, status);
        Instant invalidatedAt = code.invalidatesToken() ? response.getTokenInvalidationTimestamp().orElse(null) : null;
        return new DeliveryResult.Rejected(code, detail, invalidatedAt);
    }

    private AppClient clientFor(ClientKey key, CredentialSource.Versioned<ApnsCredentials> versioned) {
        AppClient current = clients.get(key);
        if (current != null && current.version == versioned.version()) return current;
        return clients.compute(key, (k, old) -> {
            if (old != null && old.version == versioned.version()) return old;
            if (old != null) old.close();
            return open(k.appId(), k.lane(), versioned);
        });
    }

    private AppClient open(UUID appId, Priority lane, CredentialSource.Versioned<ApnsCredentials> versioned) {
        ApnsCredentials creds = versioned.credentials();
        String host = properties.host() != null ? properties.host()
                : creds.environment() == ApnsCredentials.Environment.PRODUCTION
                        ? ApnsClientBuilder.PRODUCTION_APNS_HOST : ApnsClientBuilder.DEVELOPMENT_APNS_HOST;
        ApnsClientBuilder builder = new ApnsClientBuilder()
                .setApnsServer(host, properties.port())
                .setEventLoopGroup(lane == Priority.TRANSACTIONAL ? transactionalLoops : eventLoopGroup)
                .setConcurrentConnections(properties.connections())
                .setConnectionTimeout(properties.connectTimeout());
        if (trustedServerCertificates != null) builder.setTrustedServerCertificateChain(trustedServerCertificates);
        try {
            switch (creds.auth()) {
                case ApnsCredentials.Token t ->
                        builder.setSigningKey(new ApnsSigningKey(t.keyId(), t.teamId(), t.signingKey()));
                case ApnsCredentials.Certificate c ->
                        builder.setClientCredentials(c.certificate(), c.privateKey(), null);
            }
            ApnsClient client = builder.build();
            log.info("APNs client for app {}, lane {} (credential version {}, {} auth, {}:{}, {} connection(s))",
                    appId, lane.value(), versioned.version(), creds.auth() instanceof ApnsCredentials.Token ? "token" : "certificate",
                    host, properties.port(), properties.connections());
            return new AppClient(versioned.version(), creds.bundleId(), client, null, properties.maxInFlight());
        } catch (GeneralSecurityException | IOException | RuntimeException e) {
            // Cached per version, so a bulk send does not rebuild a broken client per message
            log.warn("APNs credentials of app {} (version {}) are unusable: {}", appId, versioned.version(), describe(e));
            return new AppClient(versioned.version(), creds.bundleId(), null, describe(e), properties.maxInFlight());
        }
    }

    private static final class AppClient {
        final long version;
        final String topic;
        final ApnsClient apns;
        final String unusable;
        final Semaphore inFlight;

        AppClient(long version, String topic, ApnsClient apns, String unusable, int maxInFlight) {
            this.version = version;
            this.topic = topic;
            this.apns = apns;
            this.unusable = unusable;
            this.inFlight = new Semaphore(maxInFlight);
        }

        CompletableFuture<Void> close() {
            return apns == null ? CompletableFuture.completedFuture(null) : apns.close();
        }
    }

    /** Configures an {@link ApnsProvider}; {@link #build()} checks the configuration. */
    public static final class Builder {
        private final CredentialSource<ApnsCredentials> credentials;
        private ApnsProperties properties = ApnsProperties.defaults();
        private Clock clock = Clock.systemUTC();

        private Builder(CredentialSource<ApnsCredentials> credentials) {
            this.credentials = Objects.requireNonNull(credentials, "credentials");
        }

        /** Where and how to connect ({@code push.apns.*}); Apple's hosts and the defaults otherwise. */
        public Builder properties(ApnsProperties properties) {
            this.properties = Objects.requireNonNull(properties, "properties");
            return this;
        }

        /** The clock APNs expiration times are computed with. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** @throws IllegalArgumentException when {@code trustedCaFile} cannot be read as PEM certificates */
        public ApnsProvider build() {
            X509Certificate[] trusted = properties.trustedCaFile() == null
                    ? null : TrustedCertificates.withDefaults(properties.trustedCaFile(), "push.apns.trusted-ca-file")
                            .toArray(X509Certificate[]::new);
            return new ApnsProvider(this, trusted);
        }
    }

    private static CompletableFuture<DeliveryResult> done(DeliveryResult result) {
        return CompletableFuture.completedFuture(result);
    }

    private static String describe(Throwable error) {
        Throwable e = error;
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + e.getMessage();
    }
}
