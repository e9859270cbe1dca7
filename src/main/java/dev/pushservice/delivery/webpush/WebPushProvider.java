package dev.pushservice.delivery.webpush;

import dev.pushservice.delivery.CredentialCheck;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ProviderPreview;
import dev.pushservice.delivery.PushProvider;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.delivery.http.PushHttpClient;
import dev.pushservice.delivery.http.RetryAfter;
import dev.pushservice.platform.net.TargetAddresses;
import dev.pushservice.platform.rules.Platform;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@link PushProvider} for {@code web} devices: encrypts each message for its subscription
 * (RFC 8291), signs with the app's VAPID keys (RFC 8292, tokens cached per app, key and push-service
 * origin), or with the imported pair the subscription was made with ({@link #authorization}) and POSTs it to the subscription's endpoint (RFC 8030) with a {@link PushHttpClient}:
 * HTTP/2 where the push service offers it (ALPN {@code h2}), requests to one origin multiplexed
 * over few connections, else HTTP/1.1. Each delivery lane (the message's priority) has connections
 * of its own, so a transactional push never queues behind a bulk send's open requests.
 *
 * <p>Headers: {@code TTL} always (the message's, else {@code push.webpush.default-ttl}),
 * {@code Urgency} per {@link #urgency}, {@code Topic} from {@code collapse_id} per {@link #topic},
 * {@code Content-Encoding: aes128gcm}. The body a service worker decrypts is described in
 * {@link WebPushPayload}.
 *
 * <p>Results, with the push service's status (and its short explanation) as the detail: 200/201/202
 * accepted ({@code Location} as the provider id); 404 and 410 {@code token_unregistered} (the
 * subscription expired or was unsubscribed); 413 {@code payload_too_large}; 401 and 403
 * {@code sender_mismatch} (a 403 "VAPID key mismatch": the subscription was made with another key,
 * e.g. before the app's keys were replaced; invalidating would wipe every browser of the app, and as
 * the endpoint is chosen by whoever registers it, the answer stops no other recipient); 400 and other 4xx {@code provider_rejected};
 * 429 {@code rate_limited}; 408, 425, 5xx {@code provider_unavailable}; no answer in time
 * {@code timeout}; transport errors {@code connection_failed}; the transient ones with
 * {@code Retry-After} honoured. Before anything is sent: an unparseable subscription is
 * {@code token_invalid}; an {@code http} endpoint (refused only by policy) {@code endpoint_not_allowed},
 * the device kept; a payload over {@link WebPushEncryption#MAX_PLAINTEXT} bytes {@code payload_too_large}.
 *
 * <p>Endpoints are chosen by browsers (registered with the public key), so unless
 * {@code allow-insecure-endpoints} is set no request reaches a loopback, private, link-local, metadata
 * or reserved address ({@link TargetAddresses}): a host that is such an address as written is refused
 * before sending, and the client's only resolver refuses a name resolving to one (any of its
 * addresses, at every new connection, so DNS rebinding is caught) before connecting. Both end
 * {@code endpoint_address_refused}, permanent, the device invalidated. FCM shares the client class
 * but not this resolver: its endpoint is the operator's.
 *
 * <p>Thread-safe and long-lived: build one per process. Encryption runs on the caller's thread;
 * {@link #send} then blocks while {@code max-in-flight} requests are awaiting answers (or a
 * connection), so a slow push service slows the caller down instead of queueing unbounded work.
 * The returned future completes on a Netty I/O thread, after the request's slot is freed:
 * continuations must not block. Nothing depends on the common {@code ForkJoinPool}, so calling
 * {@code send} from any thread is safe.
 */
public final class WebPushProvider implements PushProvider {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    private static final int MAX_REASON_BODY = 160;

    private final CredentialSource<VapidKeys> credentials;
    private final ImportedKeys imported;
    private final Clock clock;
    private final WebPushProperties properties;
    private final VapidTokens tokens;
    private final Semaphore inFlight;
    private final PushHttpClient client;

    // Slots are freed on the client's I/O threads, never on the common ForkJoinPool, so callers
    // blocked in send() on common-pool threads (one worker on a 2-core machine) cannot starve the
    // very completions that would free their slots (a deadlock once seen with HttpClient.sendAsync).
    private WebPushProvider(Builder builder) {
        this.credentials = builder.credentials;
        this.imported = builder.imported;
        this.clock = builder.clock;
        this.properties = builder.properties;
        this.tokens = new VapidTokens(builder.clock, properties.subject());
        this.inFlight = new Semaphore(properties.maxInFlight());
        // Endpoints come from browsers through the public key: every address a name resolves to is
        // checked where the connection is made (DNS rebinding included), unless local testing allows all.
        this.client = new PushHttpClient("webpush", properties.connectTimeout(), properties.requestTimeout(), builder.trusted,
                TargetAddresses.resolverGroup(properties.allowInsecureEndpoints()));
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

    /**
     * Checks the app's VAPID key pair here, with nothing sent: push services take any well-formed pair,
     * so what can be wrong is a subject Apple's push service refuses (not {@code mailto:} or
     * {@code https:}) or a private key that does not belong to the public key browsers subscribed with.
     */
    @Override
    public CompletableFuture<CredentialCheck> checkCredentials(UUID appId) {
        Optional<CredentialSource.Versioned<VapidKeys>> keys;
        try {
            keys = credentials.find(appId);
        } catch (CredentialSource.Unusable e) {
            return CompletableFuture.completedFuture(CredentialCheck.invalid(e.getMessage()));
        }
        if (keys.isEmpty()) return CompletableFuture.completedFuture(CredentialCheck.notConfigured());
        VapidKeys pair = keys.get().credentials();
        String subject = pair.subject() != null ? pair.subject() : properties.subject();
        if (!VapidKeys.validSubject(subject)) {
            return CompletableFuture.completedFuture(CredentialCheck.invalid("the VAPID subject is not a mailto: or https: URL"));
        }
        if (!pair.matches()) {
            return CompletableFuture.completedFuture(CredentialCheck.invalid("the VAPID private key does not belong to the public key"));
        }
        return CompletableFuture.completedFuture(CredentialCheck.ok());
    }

    @Override
    public ProviderPreview preview(PushMessage message) {
        if (message.platform() != Platform.WEB) {
            throw new IllegalArgumentException("the Web Push provider got a " + message.platform().value() + " message");
        }
        try {
            WebPushSubscription.parse(message.token(), properties.allowInsecureEndpoints());
        } catch (WebPushSubscription.InvalidSubscriptionException e) {
            return new ProviderPreview.Refused(refusal(e), e.getMessage());
        }
        try {
            return new ProviderPreview.Request(deliveryHeaders(message), JSON.readTree(plaintext(message)));
        } catch (Unsendable e) {
            return new ProviderPreview.Refused(e.reason, e.getMessage());
        }
    }

    /** Why a subscription that does not pass {@link WebPushSubscription#parse} is never sent to. */
    private static ReasonCode refusal(WebPushSubscription.InvalidSubscriptionException e) {
        if (e.addressRefused()) return ReasonCode.ENDPOINT_ADDRESS_REFUSED;
        return e.refusedByPolicy() ? ReasonCode.ENDPOINT_NOT_ALLOWED : ReasonCode.TOKEN_INVALID;
    }

    /** The JSON the browser decrypts, or the permanent rejection decided before encrypting it. */
    private static byte[] plaintext(PushMessage message) throws Unsendable {
        byte[] payload;
        try {
            payload = WebPushPayload.encode(message);
        } catch (RuntimeException e) {
            // e.g. a data value Jackson cannot write; the message never changes, so retrying cannot help
            throw new Unsendable(ReasonCode.PAYLOAD_INVALID,
                    "the Web Push message cannot be built (" + e.getClass().getSimpleName() + ")");
        }
        if (payload.length > WebPushEncryption.MAX_PLAINTEXT) {
            throw new Unsendable(ReasonCode.PAYLOAD_TOO_LARGE, payload.length
                    + " bytes of JSON, Web Push allows " + WebPushEncryption.MAX_PLAINTEXT);
        }
        return payload;
    }

    /** The headers that shape delivery: {@code ttl}, {@code urgency}, {@code topic} (when there is a collapse id), {@code content-encoding}. */
    private Map<String, String> deliveryHeaders(PushMessage message) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("ttl", Long.toString(ttlSeconds(message)));
        headers.put("urgency", urgency(message));
        String topic = topic(message.collapseId());
        if (topic != null) headers.put("topic", topic);
        headers.put("content-encoding", "aes128gcm");
        return headers;
    }

    /** A message that can never be sent as it is. */
    private static final class Unsendable extends Exception {
        final ReasonCode reason;

        Unsendable(ReasonCode reason, String detail) {
            super(detail, null, false, false);
            this.reason = reason;
        }
    }

    @Override
    public CompletableFuture<DeliveryResult> send(PushMessage message) {
        return send(message, () -> {
        });
    }

    /** {@code written} runs once the request is written, or once it ends without one (refused here, failed). */
    @Override
    public CompletableFuture<DeliveryResult> send(PushMessage message, Runnable written) {
        return PushProvider.whenWritten(written, out -> request(message, out));
    }

    private CompletableFuture<DeliveryResult> request(PushMessage message, Runnable written) {
        if (message.platform() != Platform.WEB) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("the Web Push provider got a " + message.platform().value() + " message"));
        }
        WebPushSubscription subscription;
        try {
            subscription = WebPushSubscription.parse(message.token(), properties.allowInsecureEndpoints());
        } catch (WebPushSubscription.InvalidSubscriptionException e) {
            return done(new DeliveryResult.Rejected(refusal(e), e.getMessage()));
        }
        Optional<CredentialSource.Versioned<VapidKeys>> keys;
        try {
            keys = credentials.find(message.appId());
        } catch (CredentialSource.Unusable e) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, e.getMessage()));
        }
        if (keys.isEmpty()) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "no VAPID key pair is configured for this app"));
        }
        byte[] payload;
        try {
            payload = plaintext(message);
        } catch (Unsendable e) {
            return done(new DeliveryResult.Rejected(e.reason, e.getMessage()));
        }
        byte[] body = WebPushEncryption.encrypt(payload, subscription);
        String authorization;
        try {
            authorization = authorization(message.appId(), keys.get(), subscription);
        } catch (RuntimeException e) {
            // an imported pair that cannot be opened (e.g. the secret key changed): about this key, not the message
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID,
                    "the imported VAPID key pair the subscription was made with is unusable"));
        }

        List<String> headerList = new ArrayList<>(12);
        deliveryHeaders(message).forEach((name, value) -> {
            headerList.add(name);
            headerList.add(value);
        });
        headerList.addAll(List.of("content-type", "application/octet-stream", "authorization", authorization));
        String[] headers = headerList.toArray(String[]::new);

        try {
            inFlight.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done(new DeliveryResult.Failed(ReasonCode.INTERRUPTED, "while waiting for a sending slot"));
        }
        CompletableFuture<DeliveryResult> result = new CompletableFuture<>();
        try {
            client.post(message.priority(), subscription.endpoint(), headers, body, written).whenComplete((response, error) -> {
                inFlight.release();
                try {
                    result.complete(error == null ? result(response, subscription, clock) : transportFailure(error));
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

    /**
     * The {@code Authorization} header: signed with the key pair the subscription was made with when
     * it names one the app imported ({@link ImportedKeys}), else with the app's own pair (a
     * subscription naming no key, the app's key, or a key the app does not hold: a replaced app key,
     * which the push service answers with 403 {@code sender_mismatch}). The choice comes with the
     * token, so it costs no query per recipient (imported pairs are cached).
     */
    private String authorization(UUID appId, CredentialSource.Versioned<VapidKeys> appKeys, WebPushSubscription subscription) {
        String named = subscription.applicationServerKey();
        VapidKeys app = appKeys.credentials();
        if (named != null && !named.equals(app.publicKeyBase64Url())) {
            Optional<VapidKeys> pair = imported.find(appId, named);
            if (pair.isPresent()) {
                return tokens.authorization(appId, IMPORTED_VERSION, pair.get().withSubject(app.subject()), subscription.origin());
            }
        }
        return tokens.authorization(appId, appKeys.version(), app, subscription.origin());
    }

    /** Imported pairs never change, so their tokens live by the key alone. */
    private static final long IMPORTED_VERSION = -1;

    /** Where the key pairs an app imported from a previous provider come from, by (app, public key). */
    @FunctionalInterface
    public interface ImportedKeys {
        ImportedKeys NONE = (appId, publicKey) -> Optional.empty();

        /** The app's imported pair with this public key (canonical base64url), or empty. */
        Optional<VapidKeys> find(UUID appId, String publicKey);
    }

    @Override
    public boolean hasOrigins() {
        return true;
    }

    /** The endpoint's origin (scheme, host, port): the push service the lanes bound their requests to. */
    @Override
    public String origin(PushMessage message) {
        try {
            JsonNode endpoint = JSON.readTree(message.token()).get("endpoint");
            if (endpoint == null || !endpoint.isString()) return null;
            return WebPushSubscription.origin(URI.create(endpoint.stringValue()));
        } catch (RuntimeException unreadable) {
            return null;
        }
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

    static DeliveryResult result(PushHttpClient.Response response, WebPushSubscription subscription, Clock clock) {
        int status = response.status();
        if (status == 200 || status == 201 || status == 202) return new DeliveryResult.Accepted(response.location());
        ReasonCode reason = switch (status) {
            case 404, 410 -> ReasonCode.TOKEN_UNREGISTERED;
            case 413 -> ReasonCode.PAYLOAD_TOO_LARGE;
            case 401, 403 -> ReasonCode.SENDER_MISMATCH;
            case 429 -> ReasonCode.RATE_LIMITED;
            case 408, 425 -> ReasonCode.PROVIDER_UNAVAILABLE;
            // another 4xx, or a success code RFC 8030 does not use (retrying it could deliver twice)
            default -> status >= 200 && status < 500 && (status < 300 || status >= 400)
                    ? ReasonCode.PROVIDER_REJECTED : ReasonCode.PROVIDER_UNAVAILABLE;
        };
        String detail = "HTTP " + status + explanation(response.body(), subscription);
        return reason.permanent()
                ? new DeliveryResult.Rejected(reason, detail)
                : new DeliveryResult.Failed(reason, detail, RetryAfter.parse(response.retryAfter(), clock.instant()), status);
    }

    private static DeliveryResult transportFailure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof PushHttpClient.AddressRefused refused) {
            // permanent: the same name would be refused again, and the device is invalidated
            return new DeliveryResult.Rejected(ReasonCode.ENDPOINT_ADDRESS_REFUSED, "nothing sent: " + refused.getMessage());
        }
        if (cause instanceof PushHttpClient.RequestTimeout) {
            return new DeliveryResult.Failed(ReasonCode.TIMEOUT, "the push service did not answer in time");
        }
        // Only the client's own descriptions are shown: other messages may carry the endpoint, a capability.
        String why = cause instanceof PushHttpClient.RequestFailure ? cause.getMessage() : cause.getClass().getSimpleName();
        return new DeliveryResult.Failed(ReasonCode.CONNECTION_FAILED, why);
    }

    /** The push service's explanation (e.g. FCM's "VAPID credentials mismatch"), short and without the endpoint. */
    private static String explanation(byte[] body, WebPushSubscription subscription) {
        if (body == null || body.length == 0) {
            return "";
        }
        String text = new String(body, StandardCharsets.UTF_8).replace(subscription.endpoint().toString(), "<endpoint>");
        String path = subscription.endpoint().getRawPath();
        if (path != null && path.length() > 1) {
            text = text.replace(path, "<endpoint>");
        }
        text = text.replaceAll("\\s+", " ").strip();
        if (text.isEmpty()) return "";
        return ": " + (text.length() > MAX_REASON_BODY ? text.substring(0, MAX_REASON_BODY) + "…" : text);
    }

    private static CompletableFuture<DeliveryResult> done(DeliveryResult result) {
        return CompletableFuture.completedFuture(result);
    }

    /** Configures a {@link WebPushProvider}; {@link #build()} checks the configuration. */
    public static final class Builder {
        private final CredentialSource<VapidKeys> credentials;
        private ImportedKeys imported = ImportedKeys.NONE;
        private WebPushProperties properties = WebPushProperties.defaults();
        private Clock clock = Clock.systemUTC();
        private List<X509Certificate> trusted = List.of();

        private Builder(CredentialSource<VapidKeys> credentials) {
            this.credentials = Objects.requireNonNull(credentials, "credentials");
        }

        /** Key pairs imported from previous providers, for subscriptions made with them. */
        public Builder importedKeys(ImportedKeys imported) {
            this.imported = Objects.requireNonNull(imported, "imported");
            return this;
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
