package dev.pushservice.delivery.fcm;

import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.crypto.RSASSAVerifier;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.LocalHttpServer.Request;
import dev.pushservice.support.LocalHttpServer.Response;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A local FCM HTTP v1 endpoint and OAuth2 token endpoint on one loopback port, for tests, benchmarks
 * and the "local peers" command, on {@link LocalHttpServer} (Reactor Netty).
 *
 * <p>Protocols: FCM sends arrive over cleartext HTTP/2 ({@code h2c}), by prior knowledge or by the
 * HTTP/1.1 {@code Upgrade: h2c}; the token endpoint also answers plain HTTP/1.1, since google-auth
 * fetches tokens with {@code HttpURLConnection}. HTTP/2 connections allow 10,000 concurrent streams.
 *
 * <ul>
 * <li>{@code POST /token}: an RFC 7523 JWT-bearer grant. The assertion must be RS256-signed by the key of a
 *     service account {@linkplain #registerServiceAccount registered} here, be unexpired and ask for the FCM
 *     scope; the answer is a fresh random access token living {@link #tokenLifetime}.</li>
 * <li>{@code POST /v1/projects/{project}/messages:send}: needs {@code Authorization: Bearer} with a live token
 *     issued here (else 401 {@code UNAUTHENTICATED}) and a body with {@code message.token} (else 400
 *     {@code INVALID_ARGUMENT}); answers 200 {@code {"name": …}} unless a reply was
 *     {@linkplain #replyFor configured} for the message's registration token.</li>
 * </ul>
 *
 * <p>A {@linkplain #storm storm} (the provider-storm drill) answers a random share of sends with 429s and
 * 503s instead, whatever the token.
 *
 * <p>Thread-safe; counters are cumulative since start.
 */
public final class LocalFcmServer implements AutoCloseable {

    /**
     * What the server received for one send (recorded while {@link #recording} is on); {@code arrivedNanos}:
     * {@link System#nanoTime()} when its request reached the server (its headers were in), to compare with the test's own clock readings.
     */
    public record Received(String protocol, String project, String authorization, JsonNode body, long arrivedNanos) {
        public JsonNode message() {
            return body.get("message");
        }
    }

    /** A canned answer; {@code delay} holds the answer back to simulate a slow FCM. */
    public record Reply(int status, Map<String, String> headers, String body, Duration delay) {

        public static Reply ok() {
            return new Reply(200, Map.of(), null, Duration.ZERO);
        }

        /** An FCM v1 error body with an {@code FcmError} detail (errorCode may be null). */
        public static Reply error(int status, String grpcStatus, String errorCode, String message) {
            String details = errorCode == null ? "[]"
                    : "[{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":\"" + errorCode + "\"}]";
            return new Reply(status, Map.of(), "{\"error\":{\"code\":" + status + ",\"message\":\"" + message
                    + "\",\"status\":\"" + grpcStatus + "\",\"details\":" + details + "}}", Duration.ZERO);
        }

        public static Reply unregistered() {
            return error(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.");
        }

        /** What FCM answers for a malformed registration token: INVALID_ARGUMENT with a message.token violation. */
        public static Reply invalidToken() {
            return new Reply(400, Map.of(), """
                    {"error":{"code":400,"message":"The registration token is not a valid FCM registration token",
                    "status":"INVALID_ARGUMENT","details":[
                    {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},
                    {"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[
                    {"field":"message.token","description":"Invalid registration token"}]}]}}""", Duration.ZERO);
        }

        public Reply withHeader(String name, String value) {
            Map<String, String> h = new HashMap<>(headers);
            h.put(name, value);
            return new Reply(status, Map.copyOf(h), body, delay);
        }

        public Reply delayed(Duration by) {
            return new Reply(status, headers, body, by);
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
    private static final String JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
    private static final String SEND_PREFIX = "/v1/projects/";
    private static final String SEND_SUFFIX = "/messages:send";
    private static final Map<String, String> JSON_CONTENT = Map.of("content-type", "application/json; charset=UTF-8");

    private final int requestedPort;
    private final Map<String, RSAPublicKey> serviceAccounts = new ConcurrentHashMap<>();
    private final Map<String, Long> tokens = new ConcurrentHashMap<>(); // access token -> expiry millis
    private final Map<String, Reply> replies = new ConcurrentHashMap<>();
    private final List<Received> received = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong sendsAnswered = new AtomicLong();
    private final AtomicLong sendsAccepted = new AtomicLong();
    private final AtomicLong http2Sends = new AtomicLong();
    private final AtomicLong tokenRequests = new AtomicLong();
    private final AtomicLong tokensRefused = new AtomicLong();
    private final AtomicLong unauthorizedSends = new AtomicLong();
    private final AtomicInteger concurrent = new AtomicInteger();
    private final AtomicInteger maxConcurrent = new AtomicInteger();
    private final AtomicLong messageIds = new AtomicLong();
    private volatile Duration tokenLifetime = Duration.ofHours(1);
    private volatile boolean recording = true;
    private volatile Consumer<String> onAccepted;
    private volatile Storm storm;
    private final AtomicLong stormReplies = new AtomicLong();

    /**
     * Shares (0 to 1) of sends answered 429 with {@code Retry-After: retryAfterSeconds}, 429 without it,
     * and 503 {@code UNAVAILABLE}; the rest as usual.
     */
    public record Storm(double rateLimitedWithRetryAfter, double rateLimited, double unavailable, int retryAfterSeconds) {
    }
    private LocalHttpServer server;

    /** @param port the loopback port to listen on; 0 picks a free one (see {@link #port()}) */
    public LocalFcmServer(int port) {
        this.requestedPort = port;
    }

    public synchronized LocalFcmServer start() {
        if (server == null) {
            server = LocalHttpServer.builder().port(requestedPort).maxConcurrentStreams(10_000).start(this::answer);
        }
        return this;
    }

    public synchronized void stop() {
        if (server == null) return;
        server.close();
        server = null;
    }

    @Override
    public void close() {
        stop();
    }

    public int port() {
        return server.port();
    }

    /** The FCM base URL to configure ({@code push.fcm.base-url}). */
    public URI baseUrl() {
        return URI.create("http://127.0.0.1:" + port());
    }

    /** The {@code token_uri} to put into a service-account JSON. */
    public URI tokenUri() {
        return URI.create(baseUrl() + "/token");
    }

    /** Trust token requests signed by {@code publicKey} for the service account {@code clientEmail}. */
    public void registerServiceAccount(String clientEmail, RSAPublicKey publicKey) {
        serviceAccounts.put(clientEmail, publicKey);
    }

    /** How long issued access tokens live ({@code expires_in}); one hour by default. */
    public void tokenLifetime(Duration lifetime) {
        this.tokenLifetime = lifetime;
    }

    /** Answer sends to this registration token with {@code reply} from now on. */
    public void replyFor(String registrationToken, Reply reply) {
        replies.put(registrationToken, reply);
    }

    /** Answer a random share of sends with errors from now on ({@code null}: stop). */
    public void storm(Storm storm) {
        this.storm = storm;
    }

    /** Sends answered with an error of a {@linkplain #storm storm} so far. */
    public long stormReplies() {
        return stormReplies.get();
    }

    /** Record each send's body (on by default; benchmarks turn it off to save memory). */
    public void recording(boolean on) {
        this.recording = on;
    }

    /**
     * Called with the registration token of every send answered 200, as it is answered (null: none).
     * Counts what a benchmark or drill delivered per device without {@link #recording} each body.
     */
    public void onAccepted(Consumer<String> listener) {
        this.onAccepted = listener;
    }

    public List<Received> received() {
        synchronized (received) {
            return List.copyOf(received);
        }
    }

    /** The sends recorded for one registration token, in arrival order. */
    public List<Received> receivedFor(String registrationToken) {
        return received().stream()
                .filter(r -> registrationToken.equals(r.message().path("token").stringValue(null)))
                .toList();
    }

    public long sendsAnswered() {
        return sendsAnswered.get();
    }

    public long sendsAccepted() {
        return sendsAccepted.get();
    }

    /** Sends that arrived as HTTP/2 streams (all of them, when the client speaks HTTP/2). */
    public long http2Sends() {
        return http2Sends.get();
    }

    public long tokenRequests() {
        return tokenRequests.get();
    }

    public long tokensRefused() {
        return tokensRefused.get();
    }

    public long unauthorizedSends() {
        return unauthorizedSends.get();
    }

    /** The most sends ever being handled at once (delayed replies count until answered). */
    public int maxConcurrentSends() {
        return maxConcurrent.get();
    }

    /** TCP connections accepted so far. */
    public long connections() {
        return server.connectionsAccepted();
    }

    private Mono<Response> answer(Request request) {
        String path = request.path();
        if (!request.method().equals("POST")) return Mono.just(error(405, "METHOD_NOT_ALLOWED", "POST only"));
        if (path.equals("/token")) return Mono.just(token(request));
        if (path.startsWith(SEND_PREFIX) && path.endsWith(SEND_SUFFIX)) {
            return send(request, path.substring(SEND_PREFIX.length(), path.length() - SEND_SUFFIX.length()));
        }
        return Mono.just(error(404, "NOT_FOUND", "no such endpoint"));
    }

    private Response token(Request request) {
        tokenRequests.incrementAndGet();
        Map<String, List<String>> form = new QueryStringDecoder(new String(request.body(), StandardCharsets.UTF_8), false)
                .parameters();
        String assertion = form.getOrDefault("assertion", List.of()).stream().findFirst().orElse(null);
        String problem = !List.of(JWT_BEARER).equals(form.get("grant_type")) ? "unsupported grant_type"
                : assertion == null ? "no assertion" : checkAssertion(assertion);
        if (problem != null) {
            tokensRefused.incrementAndGet();
            return new Response(400, JSON_CONTENT, "{\"error\":\"invalid_grant\",\"error_description\":\"" + problem + "\"}");
        }
        String accessToken = "ya29.local-" + UUID.randomUUID();
        Duration lifetime = tokenLifetime;
        tokens.put(accessToken, System.currentTimeMillis() + lifetime.toMillis());
        return new Response(200, JSON_CONTENT, "{\"access_token\":\"" + accessToken + "\",\"expires_in\":"
                + lifetime.toSeconds() + ",\"token_type\":\"Bearer\"}");
    }

    /** Null when the JWT is signed by a registered service account, unexpired and scoped for FCM. */
    private String checkAssertion(String assertion) {
        try {
            SignedJWT jwt = SignedJWT.parse(assertion);
            if (!JWSAlgorithm.RS256.equals(jwt.getHeader().getAlgorithm())) return "alg must be RS256";
            JWTClaimsSet claims = jwt.getJWTClaimsSet();
            RSAPublicKey key = claims.getIssuer() == null ? null : serviceAccounts.get(claims.getIssuer());
            if (key == null) return "unknown service account";
            if (!jwt.verify(new RSASSAVerifier(key))) return "bad signature";
            Date now = new Date();
            if (claims.getExpirationTime() == null || claims.getExpirationTime().before(now)) return "assertion expired";
            if (claims.getIssueTime() == null || claims.getIssueTime().getTime() > now.getTime() + 60_000) {
                return "assertion issued in the future";
            }
            String scope = claims.getStringClaim("scope");
            if (scope == null || !List.of(scope.split(" ")).contains(SCOPE)) return "missing scope";
            return null;
        } catch (Exception e) {
            return "unreadable assertion";
        }
    }

    private Mono<Response> send(Request request, String project) {
        String authorization = request.header("authorization");
        String bearer = authorization != null && authorization.startsWith("Bearer ") ? authorization.substring(7) : null;
        Long expiry = bearer == null ? null : tokens.get(bearer);
        if (expiry == null || expiry < System.currentTimeMillis()) {
            unauthorizedSends.incrementAndGet();
            return Mono.just(new Response(401, Map.of("www-authenticate", "Bearer"), "{\"error\":{\"code\":401,"
                    + "\"message\":\"Request had invalid authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}"));
        }
        if (request.protocol().startsWith("h2")) http2Sends.incrementAndGet();
        JsonNode body;
        try {
            body = JSON.readTree(request.body());
        } catch (RuntimeException e) {
            body = null;
        }
        String registrationToken = body == null ? null : body.path("message").path("token").stringValue(null);
        if (registrationToken == null) {
            return Mono.just(error(400, "INVALID_ARGUMENT", "Invalid JSON payload or missing message.token"));
        }
        if (recording) received.add(new Received(request.protocol(), project, authorization, body, request.arrivedNanos()));
        Reply stormed = stormReply();
        if (stormed != null) stormReplies.incrementAndGet();
        Reply reply = stormed != null ? stormed : replies.getOrDefault(registrationToken, Reply.ok());
        String answer = reply.status() == 200 && reply.body() == null
                ? "{\"name\":\"projects/" + project + "/messages/" + messageIds.incrementAndGet() + "\"}"
                : reply.body();
        Map<String, String> headers = new HashMap<>(JSON_CONTENT);
        reply.headers().forEach((name, value) -> headers.put(name.toLowerCase(Locale.ROOT), value));
        maxConcurrent.accumulateAndGet(concurrent.incrementAndGet(), Math::max);
        Mono<Response> response = Mono.fromSupplier(() -> {
            concurrent.decrementAndGet();
            if (reply.status() == 200) {
                sendsAccepted.incrementAndGet();
                Consumer<String> listener = onAccepted;
                if (listener != null) listener.accept(registrationToken);
            }
            sendsAnswered.incrementAndGet();
            return new Response(reply.status(), headers, answer);
        });
        return reply.delay().isZero() ? response
                : Mono.delay(reply.delay()).then(response).doOnCancel(concurrent::decrementAndGet);
    }

    /** A storm's error for this send, or null (no storm, or this send is answered as usual). */
    private Reply stormReply() {
        Storm current = storm;
        if (current == null) return null;
        double r = java.util.concurrent.ThreadLocalRandom.current().nextDouble();
        if (r < current.rateLimitedWithRetryAfter()) {
            return Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded.")
                    .withHeader("Retry-After", Integer.toString(current.retryAfterSeconds()));
        }
        r -= current.rateLimitedWithRetryAfter();
        if (r < current.rateLimited()) return Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded.");
        r -= current.rateLimited();
        if (r < current.unavailable()) return Reply.error(503, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.");
        return null;
    }

    private static Response error(int status, String grpcStatus, String message) {
        return new Response(status, JSON_CONTENT, "{\"error\":{\"code\":" + status + ",\"message\":\"" + message
                + "\",\"status\":\"" + grpcStatus + "\"}}");
    }
}
