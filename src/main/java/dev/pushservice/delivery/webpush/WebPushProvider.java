package dev.pushservice.delivery.webpush;

import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.PushProvider;
import dev.pushservice.delivery.http.PushHttpClient;
import dev.pushservice.platform.rules.Platform;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The {@link PushProvider} for {@code web} devices: encrypts each message for its subscription
 * (RFC 8291), signs with the app's VAPID keys (RFC 8292, tokens cached per app and push-service
 * origin) and POSTs it to the subscription's endpoint (RFC 8030) with a {@link PushHttpClient}:
 * HTTP/2 where the push service offers it (ALPN {@code h2}), requests to one origin multiplexed
 * over few connections, else HTTP/1.1.
 *
 * <p>Headers: {@code TTL} always (the message's, else {@code push.webpush.default-ttl}),
 * {@code Urgency} per {@link #urgency}, {@code Topic} from {@code collapse_id} per {@link #topic},
 * {@code Content-Encoding: aes128gcm}. The body a service worker decrypts is described in
 * {@link WebPushPayload}.
 *
 * <p>Results: 200/201/202 accepted ({@code Location} as the provider id); 404 and 410 rejected with
 * the token invalid (the subscription expired or was unsubscribed); 400, 401, 403, 413 and other
 * 4xx rejected without invalidating the token (they point at our request or credentials, not at
 * the device: a 403 "VAPID key mismatch" usually means the app's keys were replaced, and
 * invalidating would wipe every browser of the app); 408, 425, 429, 5xx and transport errors failed
 * (transient) with {@code Retry-After} honoured. Unparseable subscriptions are rejected with the
 * token invalid; endpoints refused only by policy ({@code http}, local addresses) are rejected
 * without invalidating. A payload over {@link WebPushEncryption#MAX_PLAINTEXT} bytes is rejected
 * before anything is sent.
 *
 * <p>Thread-safe and long-lived: build one per process. Encryption runs on the caller's thread;
 * {@link #send} then blocks while {@code max-in-flight} requests are awaiting answers (or a
 * connection), so a slow push service slows the caller down instead of queueing unbounded work.
 * The returned future completes on a Netty I/O thread, after the request's slot is freed:
 * continuations must not block. Nothing depends on the common {@code ForkJoinPool}, so calling
 * {@code send} from any thread is safe.
 */
public final class WebPushProvider implements PushProvider {

    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    private static final int MAX_REASON_BODY = 160;

    private final CredentialSource<VapidKeys> credentials;
    private final WebPushProperties properties;
    private final VapidTokens tokens;
    private final Semaphore inFlight;
    private final PushHttpClient client;

    // Slots are freed on the client's I/O threads, never on the common ForkJoinPool, so callers
    // blocked in send() on common-pool threads (one worker on a 2-core machine) cannot starve the
    // very completions that would free their slots (a deadlock once seen with HttpClient.sendAsync).
    private WebPushProvider(Builder builder) {
        this.credentials = builder.credentials;
        this.properties = builder.properties;
        this.tokens = new VapidTokens(builder.clock, properties.subject());
        this.inFlight = new Semaphore(properties.maxInFlight());
        this.client = new PushHttpClient("webpush", properties.connectTimeout(), properties.requestTimeout(), builder.trusted);
        CryptoProviders.description(); // logs once, at start, which crypto provider is in use
    }

    /** @param credentials where each app's VAPID keys come from (decrypted) */
    public static Builder builder(CredentialSource<VapidKeys> credentials) {
        return new Builder(credentials);
    }

    @Override
    public Platform platform() {
        return Platform.WEB;
    }

    @Override
    public CompletableFuture<DeliveryResult> send(PushMessage message) {
        if (message.platform() != Platform.WEB) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("the Web Push provider got a " + message.platform().value() + " message"));
        }
        WebPushSubscription subscription;
        try {
            subscription = WebPushSubscription.parse(message.token(), properties.allowInsecureEndpoints());
        } catch (WebPushSubscription.InvalidSubscriptionException e) {
            return done(new DeliveryResult.Rejected(e.getMessage(), !e.refusedByPolicy(), null));
        }
        Optional<CredentialSource.Versioned<VapidKeys>> keys = credentials.find(message.appId());
        if (keys.isEmpty()) {
            return done(new DeliveryResult.Rejected("no VAPID key pair is configured for this app", false, null));
        }
        byte[] payload = WebPushPayload.encode(message);
        if (payload.length > WebPushEncryption.MAX_PLAINTEXT) {
            return done(new DeliveryResult.Rejected("payload too large for Web Push: " + payload.length
                    + " bytes of JSON, at most " + WebPushEncryption.MAX_PLAINTEXT, false, null));
        }
        byte[] body = WebPushEncryption.encrypt(payload, subscription);
        String authorization = tokens.authorization(message.appId(), keys.get().version(), keys.get().credentials(),
                subscription.origin());

        String topic = topic(message.collapseId());
        String ttl = Long.toString(ttlSeconds(message));
        String[] headers = topic == null
                ? new String[] {"ttl", ttl, "urgency", urgency(message), "content-encoding", "aes128gcm",
                        "content-type", "application/octet-stream", "authorization", authorization}
                : new String[] {"ttl", ttl, "urgency", urgency(message), "content-encoding", "aes128gcm",
                        "content-type", "application/octet-stream", "authorization", authorization, "topic", topic};

        try {
            inFlight.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done(new DeliveryResult.Failed("interrupted while waiting for a sending slot", null));
        }
        CompletableFuture<DeliveryResult> result = new CompletableFuture<>();
        try {
            client.post(subscription.endpoint(), headers, body).whenComplete((response, error) -> {
                inFlight.release();
                try {
                    result.complete(error == null ? result(response, subscription) : transportFailure(error));
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                }
            });
        } catch (RuntimeException e) {
            inFlight.release();
            return CompletableFuture.failedFuture(e);
        }
        return result;
    }

    /** Requests currently awaiting a push service's answer. */
    public int inFlight() {
        return properties.maxInFlight() - inFlight.availablePermits();
    }

    /**
     * Waits for requests already sent to finish (at most the request timeout, after which they
     * have failed anyway), then closes the connections.
     */
    @Override
    public void close() {
        int max = properties.maxInFlight();
        try {
            if (inFlight.tryAcquire(max, properties.requestTimeout().toMillis() + 1_000, TimeUnit.MILLISECONDS)) {
                inFlight.release(max);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        client.close();
    }

    /**
     * RFC 8030 §5.3 {@code Urgency} from the spec's interruption-level table: passive → {@code low};
     * time_sensitive and critical → {@code high}; active → from the queue priority (transactional
     * and high → {@code high}, normal → {@code normal}, bulk → {@code low}).
     */
    static String urgency(PushMessage message) {
        return switch (message.interruptionLevel()) {
            case PASSIVE -> "low";
            case TIME_SENSITIVE, CRITICAL -> "high";
            case ACTIVE -> switch (message.priority()) {
                case TRANSACTIONAL, HIGH -> "high";
                case NORMAL -> "normal";
                case BULK -> "low";
            };
        };
    }

    /**
     * RFC 8030 §5.4 {@code Topic}: at most 32 characters of the base64url alphabet. A
     * {@code collapse_id} that already is one is sent as is (readable at the push service); any
     * other is replaced by the first 32 characters of the base64url SHA-256 of its UTF-8 bytes, so
     * equal collapse ids still collapse. Null when there is no collapse id.
     */
    static String topic(String collapseId) {
        if (collapseId == null || collapseId.isEmpty()) {
            return null;
        }
        if (TOPIC.matcher(collapseId).matches()) {
            return collapseId;
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(collapseId.getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(hash).substring(0, 32);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private long ttlSeconds(PushMessage message) {
        return message.ttlSeconds() != null ? Math.max(0, message.ttlSeconds()) : properties.defaultTtl().toSeconds();
    }

    static DeliveryResult result(PushHttpClient.Response response, WebPushSubscription subscription) {
        int status = response.status();
        return switch (status) {
            case 200, 201, 202 -> new DeliveryResult.Accepted(response.location());
            case 404, 410 -> new DeliveryResult.Rejected(
                    "push service says the subscription is gone (HTTP " + status + ")", true, null);
            case 413 -> new DeliveryResult.Rejected("push service says the payload is too large (HTTP 413)", false, null);
            case 408, 425, 429 -> new DeliveryResult.Failed("push service answered HTTP " + status,
                    retryAfter(response.retryAfter()));
            default -> status >= 500 || status < 200 || (status >= 300 && status < 400)
                    ? new DeliveryResult.Failed("push service answered HTTP " + status, retryAfter(response.retryAfter()))
                    : new DeliveryResult.Rejected("push service refused the message (HTTP " + status + ")"
                            + detail(new String(response.body(), StandardCharsets.UTF_8), subscription), false, null);
        };
    }

    private static DeliveryResult transportFailure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof PushHttpClient.RequestTimeout) {
            return new DeliveryResult.Failed("push service did not answer in time", null);
        }
        // Only the client's own descriptions are shown: other messages may carry the endpoint, a capability.
        String why = cause instanceof PushHttpClient.RequestFailure ? cause.getMessage() : cause.getClass().getSimpleName();
        return new DeliveryResult.Failed("could not reach the push service (" + why + ")", null);
    }

    /** The push service's explanation (e.g. FCM's "VAPID credentials mismatch"), short and without the endpoint. */
    private static String detail(String body, WebPushSubscription subscription) {
        if (body == null || body.isBlank()) {
            return "";
        }
        String text = body.replace(subscription.endpoint().toString(), "<endpoint>");
        String path = subscription.endpoint().getRawPath();
        if (path != null && path.length() > 1) {
            text = text.replace(path, "<endpoint>");
        }
        text = text.replaceAll("\\s+", " ").strip();
        return ": " + (text.length() > MAX_REASON_BODY ? text.substring(0, MAX_REASON_BODY) + "…" : text);
    }

    /** {@code Retry-After} as delta-seconds or an HTTP-date; null when absent or unparseable. */
    static Duration retryAfter(String header) {
        String value = header == null ? "" : header.strip();
        if (value.isEmpty()) {
            return null;
        }
        try {
            return Duration.ofSeconds(Math.max(0, Long.parseLong(value)));
        } catch (NumberFormatException notSeconds) {
            try {
                ZonedDateTime at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME);
                Duration wait = Duration.between(java.time.Instant.now(), at.toInstant());
                return wait.isNegative() ? Duration.ZERO : wait;
            } catch (DateTimeParseException notDate) {
                return null;
            }
        }
    }

    private static CompletableFuture<DeliveryResult> done(DeliveryResult result) {
        return CompletableFuture.completedFuture(result);
    }

    /** Configures a {@link WebPushProvider}; {@link #build()} checks the configuration. */
    public static final class Builder {
        private final CredentialSource<VapidKeys> credentials;
        private WebPushProperties properties = WebPushProperties.defaults();
        private Clock clock = Clock.systemUTC();
        private List<X509Certificate> trusted = List.of();

        private Builder(CredentialSource<VapidKeys> credentials) {
            this.credentials = Objects.requireNonNull(credentials, "credentials");
        }

        public Builder properties(WebPushProperties properties) {
            this.properties = Objects.requireNonNull(properties, "properties");
            return this;
        }

        /** The clock VAPID token lifetimes are measured with. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Trust these CA certificates for {@code https} push services instead of the JDK's default
         * trust store (tests and local peers; production uses the default).
         */
        public Builder trustedCertificates(Collection<X509Certificate> certificates) {
            this.trusted = List.copyOf(certificates);
            return this;
        }

        public WebPushProvider build() {
            return new WebPushProvider(this);
        }
    }
}
