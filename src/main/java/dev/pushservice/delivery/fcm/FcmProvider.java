package dev.pushservice.delivery.fcm;

import com.google.auth.RequestMetadataCallback;
import com.google.auth.Retryable;
import com.google.auth.oauth2.GoogleCredentials;
import com.google.auth.oauth2.ServiceAccountCredentials;
import dev.pushservice.delivery.CredentialCheck;
import dev.pushservice.delivery.CredentialRejections;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ProviderPreview;
import dev.pushservice.delivery.PushProvider;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.delivery.http.PushHttpClient;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Platform;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Delivers Android pushes through FCM HTTP v1 ({@code POST {base}/v1/projects/{project_id}/messages:send}).
 *
 * <p>Thread-safe and long-lived: one {@link PushHttpClient} for the whole provider, with connections
 * of its own per delivery lane (the message's priority), so a transactional push never queues behind
 * a bulk send's open requests (HTTP/2: a lane's requests share a connection as concurrent streams,
 * more connections only beyond FCM's stream limit; an
 * {@code http://} base URL, for local testing, is spoken to as h2c) and one {@link GoogleCredentials}
 * per (app, credential version), so an app's access token is fetched once and refreshed in the
 * background before it expires (google-auth's refresh margin), never per request. Replacing an app's
 * credential (a new version) drops the old credentials object.
 *
 * <p>At most {@code maxInFlight} requests are outstanding; {@link #send} blocks its caller until a slot
 * is free, so a slow FCM applies back-pressure to the delivery workers. Returned futures complete on a
 * Netty I/O thread: continuations must not block.
 *
 * <p>Answers: see {@link FcmErrors} for how FCM errors map to reason codes. A transport error is a
 * transient {@code connection_failed}, no answer in time a {@code timeout}. An app without FCM credentials
 * is rejected {@code credentials_missing} (retrying cannot help until the app configures them); a message
 * that cannot be built {@code payload_invalid}, an empty token {@code token_invalid}, both before sending.
 * A token endpoint that refuses the credential (4xx) is {@code credentials_invalid}; one that is
 * unreachable or answers 5xx a transient {@code access_token_unavailable}. Neither the device token nor
 * the access token ever appears in a result detail or a log line.
 */
public final class FcmProvider implements PushProvider {

    /** The OAuth2 scope FCM HTTP v1 requires. */
    public static final String SCOPE = "https://www.googleapis.com/auth/firebase.messaging";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final CredentialSource<FcmCredentials> credentialSource;
    private final Clock clock;
    private final URI baseUrl;
    private final Duration requestTimeout;
    private final Duration refreshMargin;
    private final Duration expirationMargin;
    private final int maxInFlight;
    private final Semaphore inFlight;
    private final PushHttpClient http;
    private final ExecutorService tokenRefresher = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<UUID, AppClient> apps = new ConcurrentHashMap<>();
    /** Credential versions FCM refused: their later messages are rejected without a request. */
    private final CredentialRejections rejections;

    private FcmProvider(Builder b) {
        this.credentialSource = b.credentialSource;
        this.clock = b.clock;
        this.rejections = new CredentialRejections("FCM", b.credentialSource, b.clock);
        this.baseUrl = stripSlash(b.properties.baseUrl());
        this.requestTimeout = b.properties.requestTimeout();
        this.refreshMargin = b.refreshMargin;
        this.expirationMargin = b.expirationMargin;
        this.maxInFlight = b.properties.maxInFlight();
        this.inFlight = new Semaphore(maxInFlight);
        this.http = new PushHttpClient("fcm", b.properties.connectTimeout(), requestTimeout, null);
    }

    /** @param credentials where each app's service account comes from (decrypted) */
    public static Builder builder(CredentialSource<FcmCredentials> credentials) {
        return new Builder(credentials);
    }

    @Override
    public Platform platform() {
        return Platform.ANDROID;
    }

    @Override
    public ProviderPreview preview(PushMessage message) {
        if (message.platform() != Platform.ANDROID) {
            throw new IllegalArgumentException("FCM provider got a " + message.platform().value() + " message");
        }
        if (message.token() == null || message.token().isBlank()) {
            return new ProviderPreview.Refused(ReasonCode.TOKEN_INVALID, "empty FCM registration token");
        }
        ObjectNode body;
        try {
            body = (ObjectNode) JSON.readTree(FcmPayload.build(message));
        } catch (RuntimeException e) {
            return new ProviderPreview.Refused(ReasonCode.PAYLOAD_INVALID,
                    "the FCM message cannot be built (" + e.getClass().getSimpleName() + ")");
        }
        ((ObjectNode) body.get("message")).remove("token");
        return new ProviderPreview.Request(Map.of(), body);
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
        if (message.platform() != Platform.ANDROID) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("FCM provider got a " + message.platform().value() + " message"));
        }
        if (message.token() == null || message.token().isBlank()) {
            return done(new DeliveryResult.Rejected(ReasonCode.TOKEN_INVALID, "empty FCM registration token"));
        }
        Optional<CredentialSource.Versioned<FcmCredentials>> found;
        try {
            found = credentialSource.find(message.appId());
        } catch (CredentialSource.Unusable e) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, e.getMessage()));
        }
        if (found.isEmpty()) {
            return done(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "the app has no FCM credentials"));
        }
        byte[] body;
        try {
            body = FcmPayload.build(message);
        } catch (RuntimeException e) {
            // e.g. a data value Jackson cannot write; the message never changes, so retrying cannot help
            return done(new DeliveryResult.Rejected(ReasonCode.PAYLOAD_INVALID,
                    "the FCM message cannot be built (" + e.getClass().getSimpleName() + ")"));
        }
        DeliveryResult.Rejected refused = rejections.refused(message.appId(), found.get().version());
        if (refused != null) return done(refused); // FCM refused this service account already: no request
        AppClient app = appClient(message.appId(), found.get());
        try {
            inFlight.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done(new DeliveryResult.Failed(ReasonCode.INTERRUPTED, "before sending"));
        }
        CompletableFuture<DeliveryResult> result = new CompletableFuture<>();
        result.whenComplete((r, e) -> {
            inFlight.release();
            if (r instanceof DeliveryResult.Rejected x && x.reason() == ReasonCode.CREDENTIALS_INVALID) {
                rejections.reject(message.appId(), app.version, x.detail());
            }
        });
        try {
            app.credentials.getRequestMetadata(app.sendUri, tokenRefresher, new RequestMetadataCallback() {
                @Override
                public void onSuccess(Map<String, List<String>> metadata) {
                    try {
                        post(app, message.priority(), metadata, body, result, written);
                    } catch (RuntimeException e) {
                        result.completeExceptionally(e);
                    }
                }

                @Override
                public void onFailure(Throwable failure) {
                    result.complete(tokenFailure(failure));
                }
            });
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result;
    }

    /** What {@link #checkCredentials} asks FCM: validated only, to a topic, never delivered. */
    static final byte[] CHECK_BODY = "{\"validate_only\":true,\"message\":{\"topic\":\"push-service-credentials-check\",\"data\":{}}}"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);

    /**
     * Asks FCM about the app's service account with a {@code validate_only} message (FCM checks it and
     * delivers nothing): an access token must be issued and the send authorized.
     */
    @Override
    public CompletableFuture<CredentialCheck> checkCredentials(UUID appId) {
        Optional<CredentialSource.Versioned<FcmCredentials>> found;
        try {
            found = credentialSource.find(appId);
        } catch (CredentialSource.Unusable e) {
            return done(CredentialCheck.invalid(e.getMessage()));
        }
        if (found.isEmpty()) return done(CredentialCheck.notConfigured());
        AppClient app = appClient(appId, found.get());
        CompletableFuture<DeliveryResult> result = new CompletableFuture<>();
        try {
            app.credentials.getRequestMetadata(app.sendUri, tokenRefresher, new RequestMetadataCallback() {
                @Override
                public void onSuccess(Map<String, List<String>> metadata) {
                    try {
                        post(app, Priority.TRANSACTIONAL, metadata, CHECK_BODY, result, null);
                    } catch (RuntimeException e) {
                        result.completeExceptionally(e);
                    }
                }

                @Override
                public void onFailure(Throwable failure) {
                    result.complete(tokenFailure(failure));
                }
            });
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result.handle((answer, error) -> {
            if (error != null) return CredentialCheck.unavailable(error.getClass().getSimpleName());
            if (answer instanceof DeliveryResult.Rejected x && x.reason() == ReasonCode.CREDENTIALS_INVALID) {
                rejections.reject(appId, app.version, x.detail());
            }
            return CredentialCheck.of(answer);
        });
    }

    private void post(AppClient app, Priority lane, Map<String, List<String>> metadata, byte[] body,
                      CompletableFuture<DeliveryResult> result, Runnable written) {
        // The client pools connections itself: a burst at start waits for the first HTTP/2 connection
        // instead of each request opening one.
        List<String> headers = new java.util.ArrayList<>(8);
        headers.add("content-type");
        headers.add("application/json; charset=UTF-8");
        metadata.forEach((name, values) -> values.forEach(v -> {
            headers.add(name.toLowerCase(Locale.ROOT));
            headers.add(v);
        }));
        http.post(lane, app.sendUri, headers.toArray(String[]::new), body, written).whenComplete((response, error) -> {
            try {
                result.complete(error == null ? answer(response) : transportFailure(error));
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
    }

    private DeliveryResult answer(PushHttpClient.Response response) {
        if (response.status() == 200) return new DeliveryResult.Accepted(messageName(response.body()));
        return FcmErrors.map(response.status(), response.retryAfter(), response.body(), clock.instant());
    }

    private static String messageName(byte[] body) {
        try {
            JsonNode name = JSON.readTree(body).get("name");
            return name != null && name.isString() ? name.stringValue() : null;
        } catch (JacksonException e) {
            return null;
        }
    }

    private DeliveryResult transportFailure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof PushHttpClient.RequestTimeout) {
            return new DeliveryResult.Failed(ReasonCode.TIMEOUT, "no answer within " + requestTimeout.toMillis() + " ms");
        }
        return new DeliveryResult.Failed(ReasonCode.CONNECTION_FAILED, cause instanceof PushHttpClient.RequestFailure
                ? cause.getMessage() : cause.getClass().getSimpleName());
    }

    private static DeliveryResult tokenFailure(Throwable failure) {
        // google-auth marks token-endpoint answers: 4xx (invalid_grant, unknown account) is not retryable
        boolean retryable = !(failure instanceof Retryable r) || r.isRetryable();
        String detail = "access token request failed (" + failure.getClass().getSimpleName() + ")";
        return retryable
                ? new DeliveryResult.Failed(ReasonCode.ACCESS_TOKEN_UNAVAILABLE, detail)
                : new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, detail + "; check the app's service account");
    }

    private static <T> CompletableFuture<T> done(T result) {
        return CompletableFuture.completedFuture(result);
    }

    private AppClient appClient(UUID appId, CredentialSource.Versioned<FcmCredentials> versioned) {
        AppClient current = apps.get(appId);
        if (current != null && current.version == versioned.version()) return current;
        return apps.compute(appId, (id, existing) -> existing != null && existing.version == versioned.version()
                ? existing
                : newAppClient(versioned));
    }

    private AppClient newAppClient(CredentialSource.Versioned<FcmCredentials> versioned) {
        FcmCredentials c = versioned.credentials();
        ServiceAccountCredentials.Builder builder = ServiceAccountCredentials.newBuilder()
                .setClientEmail(c.clientEmail())
                .setPrivateKey(c.privateKey())
                .setPrivateKeyId(c.privateKeyId())
                .setProjectId(c.projectId())
                .setTokenServerUri(c.tokenUri())
                .setScopes(List.of(SCOPE));
        builder.setRefreshMargin(refreshMargin).setExpirationMargin(expirationMargin);
        URI sendUri = URI.create(baseUrl + "/v1/projects/" + c.projectId() + "/messages:send");
        return new AppClient(versioned.version(), builder.build(), sendUri);
    }

    /** Number of requests currently outstanding (for metrics and tests). */
    public int inFlight() {
        return maxInFlight - inFlight.availablePermits();
    }

    @Override
    public void close() {
        http.close();
        tokenRefresher.close();
    }

    private static URI stripSlash(URI uri) {
        String s = uri.toString();
        return s.endsWith("/") ? URI.create(s.substring(0, s.length() - 1)) : uri;
    }

    private record AppClient(long version, GoogleCredentials credentials, URI sendUri) {
    }

    /** Configures an {@link FcmProvider}; {@link #build()} checks the configuration. */
    public static final class Builder {
        private final CredentialSource<FcmCredentials> credentialSource;
        private FcmProperties properties = FcmProperties.defaults();
        private Clock clock = Clock.systemUTC();
        private Duration refreshMargin = Duration.ofMinutes(3).plusSeconds(45);
        private Duration expirationMargin = Duration.ofMinutes(3);

        private Builder(CredentialSource<FcmCredentials> credentialSource) {
            this.credentialSource = Objects.requireNonNull(credentialSource, "credentialSource");
        }

        /** Where FCM is and how long to wait ({@code push.fcm.*}); the defaults otherwise. */
        public Builder properties(FcmProperties properties) {
            this.properties = Objects.requireNonNull(properties, "properties");
            return this;
        }

        /** The clock {@code Retry-After} dates are measured with. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * When access tokens are renewed: in the background once less than {@code refresh} of their life
         * is left, and synchronously (senders wait) once less than {@code expiration} is left. The
         * defaults (3 min 45 s, 3 min) suit Google's one-hour tokens; tests with short-lived tokens shorten them.
         */
        public Builder tokenMargins(Duration refresh, Duration expiration) {
            this.refreshMargin = refresh;
            this.expirationMargin = expiration;
            return this;
        }

        public FcmProvider build() {
            URI baseUrl = properties.baseUrl();
            String scheme = baseUrl.getScheme();
            if (!"https".equalsIgnoreCase(scheme) && !"http".equalsIgnoreCase(scheme) || baseUrl.getHost() == null) {
                throw new IllegalArgumentException("FCM base URL must be an absolute http(s) URL: " + baseUrl);
            }
            if (refreshMargin == null || expirationMargin == null || expirationMargin.isNegative()
                    || refreshMargin.compareTo(expirationMargin) < 0) {
                throw new IllegalArgumentException("token margins: need refresh >= expiration >= 0");
            }
            return new FcmProvider(this);
        }
    }
}
