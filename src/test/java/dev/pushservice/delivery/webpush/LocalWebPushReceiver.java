package dev.pushservice.delivery.webpush;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jose.util.Base64URL;
import com.nimbusds.jwt.SignedJWT;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.LocalHttpServer.Request;
import dev.pushservice.support.LocalHttpServer.Response;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.interfaces.ECPublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A Web Push service on loopback, playing both the push service and the browser behind it, for
 * tests, benchmarks and the local-peers command. It creates subscriptions (a fresh P-256 key pair
 * and auth secret each, endpoint {@code http://127.0.0.1:<port>/push/<id>}, or {@code https://}
 * from {@link #subscribeTls()}), and for every push: checks the VAPID {@code Authorization} (ES256
 * signature against {@code k=}, {@code aud} = the origin the push was sent to, {@code exp} in the
 * future and at most 24 h ahead, {@code sub} a mailto:/https: URL), the {@code Content-Encoding},
 * {@code TTL}, {@code Urgency} and {@code Topic} headers, and decrypts the body as a browser would
 * (RFC 8291/8188, written independently of the production code, on the JDK's own providers and
 * nimbus-jose-jwt), then records and counts it.
 *
 * <p>Protocols, as real push services speak them, on two {@link LocalHttpServer}s (Reactor
 * Netty): {@link #origin()} in cleartext, HTTP/2 by prior knowledge ({@code h2c}) or by the
 * HTTP/1.1 {@code Upgrade: h2c}, and plain HTTP/1.1; {@link #tlsOrigin()} over TLS (a certificate
 * for 127.0.0.1 signed by {@link #trustedCertificate()}) with ALPN {@code h2} or {@code http/1.1}.
 * HTTP/2 connections allow {@link #DEFAULT_MAX_CONCURRENT_STREAMS} concurrent streams unless
 * {@link #startAllowingStreams} says otherwise. {@link #startHttp1Only()} starts one that speaks
 * HTTP/1.1 only, as an old server would (ALPN offers only {@code http/1.1}; the HTTP/2 preface
 * gets a 400).
 *
 * <p>Answers: 201 with a {@code Location} when all checks pass; 404 for an unknown subscription;
 * 410 for one that was {@link #unsubscribe unsubscribed}; 401/403 for VAPID problems and 400 for
 * bad headers or an undecryptable body (each also noted in {@link #problems()}); or whatever was
 * set with {@link #answerAll} / {@link #answer} (e.g. 429 with {@code Retry-After}, 413, 500).
 * {@link #hold()} holds every answer back until {@link #release()}; {@link #closeConnections()}
 * sends GOAWAY and lets the streams in flight finish; {@link #dropConnections()} drops them.
 *
 * <p>{@link #benchMode(boolean) Bench mode} counts instead of recording: every push is routed and
 * its headers checked, each distinct VAPID token is verified in full once, and one push in
 * {@link #BENCH_SAMPLE} gets every check (VAPID signature and claims, decryption); the others skip
 * decryption and reuse the verified token. {@link #fullyChecked()} says how many were checked in
 * full. Tests leave it off, so every push is checked in full.
 *
 * <p>Thread-safe. {@link #start()} binds free ports; {@link #close()} stops it.
 */
public final class LocalWebPushReceiver implements AutoCloseable {

    /** HTTP/2 {@code SETTINGS_MAX_CONCURRENT_STREAMS} by default: 100, a common front-end limit. */
    public static final int DEFAULT_MAX_CONCURRENT_STREAMS = 100;
    /** In bench mode, one push in this many is checked in full (VAPID signature, decryption on the JDK providers, ~1 ms each). */
    public static final int BENCH_SAMPLE = 1_000;

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration MAX_JWT_LIFETIME = Duration.ofHours(24);
    private static final Duration CLOCK_SKEW = Duration.ofMinutes(1);
    private static final Pattern DIGITS = Pattern.compile("[0-9]+");
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    private static final Set<String> URGENCIES = Set.of("very-low", "low", "normal", "high");

    /** A canned answer: status, optional {@code Retry-After} and body. */
    public record Answer(int status, String retryAfter, String body) {
        public static Answer status(int status) {
            return new Answer(status, null, null);
        }

        public static Answer retryAfter(int status, String retryAfter) {
            return new Answer(status, retryAfter, null);
        }
    }

    /** A browser's side of one subscription. {@link #json()} is what the browser hands the app server. */
    public record Subscriber(String id, String endpoint, KeyPair keys, byte[] publicKey, byte[] auth) {
        public String json() {
            Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
            return "{\"endpoint\":\"" + endpoint + "\",\"expirationTime\":null,\"keys\":{\"p256dh\":\""
                    + b64.encodeToString(publicKey) + "\",\"auth\":\"" + b64.encodeToString(auth) + "\"}}";
        }
    }

    /**
     * One push as received. {@code plaintext} is the decrypted payload (null when it could not be
     * decrypted); {@code answered} is the status sent back; {@code protocol} is {@code h2} (TLS),
     * {@code h2c} (cleartext HTTP/2) or {@code http/1.1}.
     */
    public record Received(String subscriptionId, Instant at, Map<String, String> headers, byte[] plaintext,
            String jwt, JsonNode claims, String vapidPublicKey, int answered, String protocol) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        public String plaintextString() {
            return plaintext == null ? null : new String(plaintext, StandardCharsets.UTF_8);
        }
    }

    private final LocalHttpServer cleartext;
    private final LocalHttpServer tls;
    private final String origin;
    private final String tlsOrigin;
    private final AtomicLong messageIds = new AtomicLong();
    private final Map<String, Subscriber> subscriptions = new ConcurrentHashMap<>();
    private final Set<String> unsubscribed = ConcurrentHashMap.newKeySet();
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    /** Subscriptions whose answers come this much late (their requests stay open meanwhile). */
    private final Map<String, java.time.Duration> delays = new ConcurrentHashMap<>();
    private final AtomicReference<Answer> answerAll = new AtomicReference<>();
    private final AtomicReference<CompletableFuture<Void>> held = new AtomicReference<>();
    /** Nanoseconds between two answers ({@link #answerRate}); 0: no pacing. */
    private volatile long answerInterval;
    /** When the last paced answer goes out ({@link System#nanoTime()}). */
    private final AtomicLong nextAnswer = new AtomicLong(Long.MIN_VALUE / 2);
    private final Map<String, Instant> verifiedTokens = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> byProtocol = new ConcurrentHashMap<>();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong fullyChecked = new AtomicLong();
    private final AtomicLong sampled = new AtomicLong();
    private volatile boolean benchMode;

    private LocalWebPushReceiver(boolean http2, int maxConcurrentStreams) {
        LocalHttpServer.Builder options = LocalHttpServer.builder().maxConcurrentStreams(maxConcurrentStreams);
        if (!http2) options.http1Only();
        cleartext = options.start(this::handle);
        tls = options.tls().start(this::handle);
        origin = "http://127.0.0.1:" + cleartext.port();
        tlsOrigin = "https://127.0.0.1:" + tls.port();
    }

    /** Starts on free loopback ports, speaking HTTP/2 and HTTP/1.1, with and without TLS. */
    public static LocalWebPushReceiver start() {
        return new LocalWebPushReceiver(true, DEFAULT_MAX_CONCURRENT_STREAMS);
    }

    /** Like {@link #start()}, with HTTP/2 connections that allow {@code maxConcurrentStreams} streams. */
    public static LocalWebPushReceiver startAllowingStreams(int maxConcurrentStreams) {
        return new LocalWebPushReceiver(true, maxConcurrentStreams);
    }

    /** Starts a receiver that speaks only HTTP/1.1 (with and without TLS), on free ports. */
    public static LocalWebPushReceiver startHttp1Only() {
        return new LocalWebPushReceiver(false, DEFAULT_MAX_CONCURRENT_STREAMS);
    }

    /** The cleartext port, the one in {@link #origin()}. */
    public int port() {
        return cleartext.port();
    }

    /** {@code http://127.0.0.1:<port>}: the {@code aud} every VAPID token sent here in cleartext must carry. */
    public String origin() {
        return origin;
    }

    /** {@code https://127.0.0.1:<tls port>}: the {@code aud} for pushes sent over TLS. */
    public String tlsOrigin() {
        return tlsOrigin;
    }

    /** The CA that signed this receiver's TLS certificate: what a client must trust for {@link #subscribeTls()}. */
    public static X509Certificate trustedCertificate() {
        return TestCertificates.shared().ca;
    }

    /** A new subscription with an {@code http://} endpoint, as a browser would create it. */
    public Subscriber subscribe() {
        return subscribe(origin);
    }

    /** A new subscription with an {@code https://} endpoint (TLS, see {@link #trustedCertificate()}). */
    public Subscriber subscribeTls() {
        return subscribe(tlsOrigin);
    }

    private Subscriber subscribe(String base) {
        try {
            ECKey key = new ECKeyGenerator(Curve.P_256).generate();
            byte[] auth = new byte[16];
            RANDOM.nextBytes(auth);
            String id = UUID.randomUUID().toString();
            Subscriber s = new Subscriber(id, base + "/push/" + id, key.toKeyPair(), point(key), auth);
            subscriptions.put(id, s);
            return s;
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
    }

    /** From now on pushes to this subscription get 410 Gone, as after the user unsubscribed. */
    public void unsubscribe(String id) {
        subscriptions.remove(id);
        unsubscribed.add(id);
    }

    /** Answer every push with {@code answer} (after the checks); null restores normal answers. */
    public void answerAll(Answer answer) {
        answerAll.set(answer);
    }

    /** Answer pushes to one subscription with {@code answer}; null restores normal answers. */
    public void answer(String subscriptionId, Answer answer) {
        if (answer == null) answers.remove(subscriptionId);
        else answers.put(subscriptionId, answer);
    }

    /** Answer pushes to one subscription {@code by} late (a slow push service for them only); null: at once. */
    public void delay(String subscriptionId, java.time.Duration by) {
        if (by == null) delays.remove(subscriptionId);
        else delays.put(subscriptionId, by);
    }

    /**
     * Answer at most {@code perSecond} pushes a second, one after another, whatever the concurrency
     * (a push service that handles a few hundred pushes a second); 0: as fast as they come.
     */
    public void answerRate(int perSecond) {
        answerInterval = perSecond <= 0 ? 0 : 1_000_000_000L / perSecond;
    }

    /** Hold every request (counted, unanswered) until {@link #release()}: a slow push service. */
    public void hold() {
        held.compareAndSet(null, new CompletableFuture<>());
    }

    /** Answers the held requests and stops holding. */
    public void release() {
        CompletableFuture<Void> gate = held.getAndSet(null);
        if (gate != null) gate.complete(null);
    }

    /** Bench mode: count instead of recording, and check one push in {@link #BENCH_SAMPLE} in full. */
    public void benchMode(boolean on) {
        benchMode = on;
    }

    /** Every request that reached the receiver. */
    public long requestCount() {
        return requests.get();
    }

    /** Requests that arrived over {@code protocol} ({@code h2}, {@code h2c} or {@code http/1.1}). */
    public long requestCount(String protocol) {
        AtomicLong n = byProtocol.get(protocol);
        return n == null ? 0 : n.get();
    }

    /** Requests answered 201. */
    public long acceptedCount() {
        return accepted.get();
    }

    /** Requests checked in full: all of them, except in bench mode. */
    public long fullyChecked() {
        return fullyChecked.get();
    }

    /** TCP connections accepted so far, with and without TLS. */
    public long connectionCount() {
        return cleartext.connectionsAccepted() + tls.connectionsAccepted();
    }

    public List<Received> received() {
        return new ArrayList<>(received);
    }

    public List<Received> received(String subscriptionId) {
        return received.stream().filter(r -> r.subscriptionId().equals(subscriptionId)).toList();
    }

    /** Checks that failed (bad VAPID, undecryptable body, wrong headers); empty when all was well. */
    public List<String> problems() {
        return new ArrayList<>(problems);
    }

    /** Forgets what was received, counted and configured; subscriptions stay. */
    public void reset() {
        received.clear();
        problems.clear();
        requests.set(0);
        accepted.set(0);
        fullyChecked.set(0);
        byProtocol.clear();
        answers.clear();
        delays.clear();
        answerInterval = 0;
        answerAll.set(null);
        release();
    }

    /** Closes every open connection as a restarting push service does (see {@link LocalHttpServer#closeConnections()}). */
    public void closeConnections() {
        cleartext.closeConnections();
        tls.closeConnections();
    }

    /** Drops every open connection abruptly (no GOAWAY, no answers), as a crashed server or network would. */
    public void dropConnections() {
        cleartext.dropConnections();
        tls.dropConnections();
    }

    @Override
    public void close() {
        release();
        cleartext.close();
        tls.close();
    }

    // ---- one push, whichever protocol carried it ----

    private Mono<Response> handle(Request request) {
        requests.incrementAndGet();
        byProtocol.computeIfAbsent(request.protocol(), p -> new AtomicLong()).incrementAndGet();
        Mono<Response> answer = Mono.fromSupplier(() -> answer(request));
        java.time.Duration delay = request.path().startsWith("/push/")
                ? delays.get(request.path().substring("/push/".length())) : null;
        if (delay != null) answer = Mono.delay(delay).then(answer);
        long interval = answerInterval;
        if (interval > 0) {
            // the next free answer slot: answers go out one interval apart
            long now = System.nanoTime();
            long slot = nextAnswer.accumulateAndGet(now, (last, n) -> Math.max(last + interval, n));
            if (slot > now) answer = Mono.delay(java.time.Duration.ofNanos(slot - now)).then(answer);
        }
        CompletableFuture<Void> gate = held.get();
        // suppressCancel: a client giving up on one held request must not release the others
        return gate == null ? answer : Mono.fromFuture(gate, true).then(answer);
    }

    private Response answer(Request request) {
        if (!request.path().startsWith("/push/")) return reply(404, null, null, null);
        if (!request.method().equals("POST")) return reply(405, null, null, null);
        String id = request.path().substring("/push/".length());
        Subscriber subscriber = subscriptions.get(id);
        if (subscriber == null) return reply(unsubscribed.contains(id) ? 410 : 404, null, null, null);
        Map<String, String> headers = request.headers();
        String audience = request.tls() ? tlsOrigin : origin;
        boolean full = !benchMode || sampled.incrementAndGet() % BENCH_SAMPLE == 1;

        Vapid vapid = null;
        String authorization = headers.get("authorization");
        Instant knownUntil = full || authorization == null ? null : verifiedTokens.get(audience + " " + authorization);
        if (knownUntil == null || !knownUntil.isAfter(Instant.now())) {
            try {
                vapid = verifyVapid(authorization, audience);
            } catch (VapidProblem p) {
                problems.add(p.getMessage());
                return reply(p.status, null, null, p.getMessage());
            }
            if (benchMode) verifiedTokens.put(audience + " " + authorization, vapid.expires());
        }
        String headerProblem = checkHeaders(headers);
        if (headerProblem != null) {
            problems.add(headerProblem);
            return reply(400, null, null, headerProblem);
        }
        byte[] plaintext = null;
        if (full) {
            fullyChecked.incrementAndGet();
            try {
                plaintext = decrypt(subscriber, request.body());
            } catch (GeneralSecurityException | RuntimeException e) {
                problems.add("cannot decrypt: " + e);
                return reply(400, null, null, "cannot decrypt the message");
            }
        }
        Answer answer = answers.getOrDefault(id, answerAll.get());
        int status = answer == null ? 201 : answer.status();
        if (!benchMode) {
            received.add(new Received(id, Instant.now(), headers, plaintext,
                    vapid == null ? null : vapid.jwt(), vapid == null ? null : vapid.claims(),
                    vapid == null ? null : vapid.k(), status, request.protocol()));
        }
        if (answer != null) return reply(answer.status(), null, answer.retryAfter(), answer.body());
        accepted.incrementAndGet();
        return reply(201, audience + "/message/" + messageIds.incrementAndGet(), null, null);
    }

    private static Response reply(int status, String location, String retryAfter, String body) {
        Map<String, String> headers = new HashMap<>();
        if (location != null) headers.put("location", location);
        if (retryAfter != null) headers.put("retry-after", retryAfter);
        if (body != null) headers.put("content-type", "text/plain; charset=UTF-8");
        return new Response(status, headers, body);
    }

    private static String checkHeaders(Map<String, String> headers) {
        if (!"aes128gcm".equals(headers.get("content-encoding"))) return "Content-Encoding must be aes128gcm";
        String ttl = headers.get("ttl");
        if (ttl == null || !DIGITS.matcher(ttl).matches()) return "TTL header missing or not a number";
        String urgency = headers.get("urgency");
        if (urgency != null && !URGENCIES.contains(urgency)) return "bad Urgency " + urgency;
        String topic = headers.get("topic");
        if (topic != null && !TOPIC.matcher(topic).matches()) return "Topic is not RFC 8030-valid";
        return null;
    }

    // ---- VAPID (RFC 8292), checked as a push service does ----

    private record Vapid(String jwt, JsonNode claims, String k, Instant expires) {
    }

    private static final class VapidProblem extends Exception {
        final int status;

        VapidProblem(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    private static Vapid verifyVapid(String authorization, String audience) throws VapidProblem {
        if (authorization == null || !authorization.startsWith("vapid ")) {
            throw new VapidProblem(401, "no vapid Authorization");
        }
        String t = null;
        String k = null;
        for (String part : authorization.substring(6).split(",")) {
            String p = part.strip();
            if (p.startsWith("t=")) t = p.substring(2);
            else if (p.startsWith("k=")) k = p.substring(2);
        }
        if (t == null || k == null) throw new VapidProblem(401, "vapid Authorization needs t= and k=");
        JsonNode claims;
        try {
            SignedJWT jwt = SignedJWT.parse(t);
            if (!JWSAlgorithm.ES256.equals(jwt.getHeader().getAlgorithm())) throw new VapidProblem(401, "VAPID alg must be ES256");
            if (!jwt.verify(new ECDSAVerifier(publicKey(Base64.getUrlDecoder().decode(k))))) {
                throw new VapidProblem(403, "VAPID signature does not verify with k");
            }
            claims = JSON.readTree(jwt.getPayload().toBytes());
        } catch (VapidProblem p) {
            throw p;
        } catch (java.text.ParseException | JOSEException | RuntimeException e) {
            throw new VapidProblem(401, "VAPID token unreadable: " + e);
        }
        if (!audience.equals(claims.path("aud").asString(null))) {
            throw new VapidProblem(403, "VAPID aud is " + claims.path("aud") + ", not " + audience);
        }
        JsonNode exp = claims.get("exp");
        Instant now = Instant.now();
        if (exp == null || !exp.isIntegralNumber()) throw new VapidProblem(403, "VAPID exp missing");
        Instant expires = Instant.ofEpochSecond(exp.asLong());
        if (!expires.isAfter(now)) throw new VapidProblem(403, "VAPID token expired");
        if (expires.isAfter(now.plus(MAX_JWT_LIFETIME).plus(CLOCK_SKEW))) {
            throw new VapidProblem(403, "VAPID exp more than 24 h ahead");
        }
        String sub = claims.path("sub").asString(null);
        if (sub == null || !(sub.startsWith("mailto:") || sub.startsWith("https://"))) {
            throw new VapidProblem(403, "VAPID sub missing or not mailto:/https:");
        }
        return new Vapid(t, claims, k, expires);
    }

    // ---- the browser's side of RFC 8291 / RFC 8188 ----

    private static byte[] decrypt(Subscriber subscriber, byte[] body) throws GeneralSecurityException {
        ByteBuffer in = ByteBuffer.wrap(body);
        byte[] salt = new byte[16];
        in.get(salt);
        int recordSize = in.getInt();
        int keyIdLength = in.get() & 0xff;
        if (keyIdLength != 65) throw new GeneralSecurityException("keyid must be the 65-byte sender key");
        byte[] senderKey = new byte[keyIdLength];
        in.get(senderKey);
        byte[] ciphertext = new byte[in.remaining()];
        in.get(ciphertext);
        if (ciphertext.length > recordSize || recordSize < 18) {
            throw new GeneralSecurityException("expected exactly one record");
        }

        KeyAgreement ecdh = KeyAgreement.getInstance("ECDH");
        ecdh.init(subscriber.keys().getPrivate());
        try {
            ecdh.doPhase(publicKey(senderKey), true);
        } catch (JOSEException e) {
            throw new GeneralSecurityException(e);
        }
        byte[] shared = ecdh.generateSecret();

        byte[] keyInfo = concat("WebPush: info\0".getBytes(StandardCharsets.US_ASCII), subscriber.publicKey(), senderKey);
        byte[] ikm = hkdf(subscriber.auth(), shared, keyInfo, 32);
        byte[] cek = hkdf(salt, ikm, "Content-Encoding: aes128gcm\0".getBytes(StandardCharsets.US_ASCII), 16);
        byte[] nonce = hkdf(salt, ikm, "Content-Encoding: nonce\0".getBytes(StandardCharsets.US_ASCII), 12);

        Cipher gcm = Cipher.getInstance("AES/GCM/NoPadding");
        gcm.init(Cipher.DECRYPT_MODE, new SecretKeySpec(cek, "AES"), new GCMParameterSpec(128, nonce));
        byte[] padded = gcm.doFinal(ciphertext);
        // Strip padding: zeros after the delimiter; the last record's delimiter is 0x02.
        int end = padded.length - 1;
        while (end >= 0 && padded[end] == 0) end--;
        if (end < 0 || padded[end] != 2) throw new GeneralSecurityException("last record delimiter 0x02 missing");
        return Arrays.copyOf(padded, end);
    }

    /** RFC 5869 HKDF-SHA256, extract then expand, for {@code length} ≤ 32. */
    private static byte[] hkdf(byte[] salt, byte[] ikm, byte[] info, int length) throws GeneralSecurityException {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(salt, "HmacSHA256"));
        byte[] prk = mac.doFinal(ikm);
        mac.init(new SecretKeySpec(prk, "HmacSHA256"));
        mac.update(info);
        mac.update((byte) 1);
        return Arrays.copyOf(mac.doFinal(), length);
    }

    /** An uncompressed P-256 point (0x04 | x | y) as a public key; nimbus checks it is on the curve. */
    private static ECPublicKey publicKey(byte[] point) throws JOSEException {
        if (point.length != 65 || point[0] != 4) throw new JOSEException("not an uncompressed P-256 point");
        return new ECKey.Builder(Curve.P_256, Base64URL.encode(Arrays.copyOfRange(point, 1, 33)),
                Base64URL.encode(Arrays.copyOfRange(point, 33, 65))).build().toECPublicKey();
    }

    /** The uncompressed point of a key (nimbus pads each coordinate to 32 bytes). */
    private static byte[] point(ECKey key) {
        return concat(new byte[] {4}, key.getX().decode(), key.getY().decode());
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
