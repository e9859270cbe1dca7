package dev.pushservice.delivery.webpush;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.interfaces.ECPublicKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.ECPoint;
import java.security.spec.ECPublicKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A Web Push service on loopback, playing both the push service and the browser behind it, for
 * tests, benchmarks and the local-peers command. It creates subscriptions (a fresh P-256 key pair
 * and auth secret each, endpoint {@code http://127.0.0.1:<port>/push/<id>}), and for every push:
 * checks the VAPID {@code Authorization} (ES256 signature against {@code k=}, {@code aud} = this
 * origin, {@code exp} in the future and at most 24 h ahead, {@code sub} a mailto:/https: URL), the
 * {@code Content-Encoding}, and decrypts the body as a browser would (RFC 8291/8188, written
 * independently of the production code, on the JDK's own providers), then records and counts it.
 *
 * <p>Answers: 201 with a {@code Location} when all checks pass; 404 for an unknown subscription;
 * 410 for one that was {@link #unsubscribe unsubscribed}; 401/403 for VAPID problems and 400 for
 * an undecryptable body (each also noted in {@link #problems()}); or whatever was set with
 * {@link #answerAll} / {@link #answer} (e.g. 429 with {@code Retry-After}, 413, 500).
 *
 * <p>{@link #benchMode(boolean) Bench mode} skips decryption and recording (only counting), and
 * verifies each distinct VAPID token once, so the receiver costs little next to the sender.
 * Thread-safe. {@link #start()} binds a free port; {@link #close()} stops it.
 */
public final class LocalWebPushReceiver implements AutoCloseable {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration MAX_JWT_LIFETIME = Duration.ofHours(24);
    private static final Duration CLOCK_SKEW = Duration.ofMinutes(1);
    private static final ECParameterSpec P256_PARAMS = p256();

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
     * One push as received. {@code plaintext} is the decrypted payload (null in bench mode or when
     * it could not be decrypted); {@code answered} is the status sent back.
     */
    public record Received(String subscriptionId, Instant at, Map<String, String> headers, byte[] plaintext,
            String jwt, JsonNode claims, String vapidPublicKey, int answered) {
        public String header(String name) {
            return headers.get(name.toLowerCase(java.util.Locale.ROOT));
        }

        public String plaintextString() {
            return plaintext == null ? null : new String(plaintext, StandardCharsets.UTF_8);
        }
    }

    static {
        // The JDK server keeps only 200 idle keep-alive connections by default and closes the rest,
        // which a client with 1,000 requests in flight then finds closed (IOException on reuse).
        if (System.getProperty("sun.net.httpserver.maxIdleConnections") == null) {
            System.setProperty("sun.net.httpserver.maxIdleConnections", "5000");
        }
    }

    private final AtomicLong messageIds = new AtomicLong();
    private final HttpServer server;
    private final ExecutorService executor;
    private final String origin;
    private final Map<String, Subscriber> subscriptions = new ConcurrentHashMap<>();
    private final Map<String, Boolean> unsubscribed = new ConcurrentHashMap<>();
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    private final AtomicReference<Answer> answerAll = new AtomicReference<>();
    private final AtomicReference<CountDownLatch> hold = new AtomicReference<>();
    private final Map<String, Boolean> verifiedTokens = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private volatile boolean benchMode;

    private LocalWebPushReceiver(int port) throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 4096);
        executor = Executors.newVirtualThreadPerTaskExecutor();
        server.setExecutor(executor);
        server.createContext("/push/", this::handle);
        server.start();
        origin = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Starts on a free loopback port. */
    public static LocalWebPushReceiver start() throws IOException {
        return new LocalWebPushReceiver(0);
    }

    /** Starts on the given loopback port (0: any free one). */
    public static LocalWebPushReceiver start(int port) throws IOException {
        return new LocalWebPushReceiver(port);
    }

    public int port() {
        return server.getAddress().getPort();
    }

    /** {@code http://127.0.0.1:<port>}: the {@code aud} every VAPID token sent here must carry. */
    public String origin() {
        return origin;
    }

    /** A new subscription, as a browser would create it. */
    public Subscriber subscribe() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair keys = generator.generateKeyPair();
            byte[] auth = new byte[16];
            RANDOM.nextBytes(auth);
            String id = UUID.randomUUID().toString();
            Subscriber s = new Subscriber(id, origin + "/push/" + id, keys, point((ECPublicKey) keys.getPublic()), auth);
            subscriptions.put(id, s);
            return s;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** From now on pushes to this subscription get 410 Gone, as after the user unsubscribed. */
    public void unsubscribe(String id) {
        subscriptions.remove(id);
        unsubscribed.put(id, true);
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

    /** Hold every request (unanswered) until {@link #release()}: a slow push service. */
    public void hold() {
        hold.set(new CountDownLatch(1));
    }

    public void release() {
        CountDownLatch latch = hold.getAndSet(null);
        if (latch != null) latch.countDown();
    }

    /** Bench mode: count only; no decryption, no recording, each VAPID token verified once. */
    public void benchMode(boolean on) {
        benchMode = on;
    }

    /** Every request that reached a push endpoint. */
    public long requestCount() {
        return requests.get();
    }

    /** Requests answered 201. */
    public long acceptedCount() {
        return accepted.get();
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
        answers.clear();
        answerAll.set(null);
        release();
    }

    @Override
    public void close() {
        release();
        server.stop(0);
        executor.shutdownNow();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange; InputStream in = exchange.getRequestBody()) {
            byte[] body = in.readAllBytes();
            requests.incrementAndGet();
            CountDownLatch latch = hold.get();
            if (latch != null) {
                latch.await(60, TimeUnit.SECONDS);
            }
            String id = exchange.getRequestURI().getPath().substring("/push/".length());
            if (!exchange.getRequestMethod().equals("POST")) {
                respond(exchange, 405, null, null);
                return;
            }
            Subscriber subscriber = subscriptions.get(id);
            if (subscriber == null) {
                respond(exchange, unsubscribed.containsKey(id) ? 410 : 404, null, null);
                return;
            }
            Map<String, String> headers = new java.util.HashMap<>();
            exchange.getRequestHeaders().forEach((k, v) -> headers.put(k.toLowerCase(java.util.Locale.ROOT), v.getFirst()));

            Vapid vapid;
            try {
                vapid = verifyVapid(headers.get("authorization"));
            } catch (VapidProblem p) {
                problems.add(p.getMessage());
                respond(exchange, p.status, null, p.getMessage());
                return;
            }
            String headerProblem = checkHeaders(headers);
            if (headerProblem != null) {
                problems.add(headerProblem);
                respond(exchange, 400, null, headerProblem);
                return;
            }
            byte[] plaintext = null;
            if (!benchMode) {
                try {
                    plaintext = decrypt(subscriber, body);
                } catch (GeneralSecurityException | RuntimeException e) {
                    problems.add("cannot decrypt: " + e);
                    respond(exchange, 400, null, "cannot decrypt the message");
                    return;
                }
            }
            Answer answer = answers.getOrDefault(id, answerAll.get());
            int status = answer == null ? 201 : answer.status();
            if (!benchMode) {
                received.add(new Received(id, Instant.now(), Map.copyOf(headers), plaintext, vapid == null ? null : vapid.jwt,
                        vapid == null ? null : vapid.claims, vapid == null ? null : vapid.k, status));
            }
            if (answer == null) {
                accepted.incrementAndGet();
                exchange.getResponseHeaders().add("Location", origin + "/message/" + messageIds.incrementAndGet());
                respond(exchange, 201, null, null);
            } else {
                respond(exchange, answer.status(), answer.retryAfter(), answer.body());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void respond(HttpExchange exchange, int status, String retryAfter, String body) throws IOException {
        if (retryAfter != null) exchange.getResponseHeaders().add("Retry-After", retryAfter);
        byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) exchange.getResponseBody().write(bytes);
    }

    private static String checkHeaders(Map<String, String> headers) {
        if (!"aes128gcm".equals(headers.get("content-encoding"))) return "Content-Encoding must be aes128gcm";
        String ttl = headers.get("ttl");
        if (ttl == null || !ttl.matches("[0-9]+")) return "TTL header missing or not a number";
        String urgency = headers.get("urgency");
        if (urgency != null && !List.of("very-low", "low", "normal", "high").contains(urgency)) return "bad Urgency " + urgency;
        String topic = headers.get("topic");
        if (topic != null && !topic.matches("[A-Za-z0-9_-]{1,32}")) return "Topic is not RFC 8030-valid";
        return null;
    }

    // ---- VAPID (RFC 8292), checked as a push service does ----

    private record Vapid(String jwt, JsonNode claims, String k) {
    }

    private static final class VapidProblem extends Exception {
        final int status;

        VapidProblem(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    private Vapid verifyVapid(String authorization) throws VapidProblem {
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
        String[] jwt = t.split("\\.");
        if (jwt.length != 3) throw new VapidProblem(401, "VAPID token is not a JWS");
        JsonNode claims;
        try {
            Base64.Decoder d = Base64.getUrlDecoder();
            JsonNode header = JSON.readTree(d.decode(jwt[0]));
            if (!"ES256".equals(header.path("alg").asString(null))) throw new VapidProblem(401, "VAPID alg must be ES256");
            claims = JSON.readTree(d.decode(jwt[1]));
            String cacheKey = t + " " + k;
            if (!(benchMode && verifiedTokens.containsKey(cacheKey))) {
                Signature verifier = Signature.getInstance("SHA256withECDSAinP1363Format");
                verifier.initVerify(publicKey(d.decode(k)));
                verifier.update((jwt[0] + "." + jwt[1]).getBytes(StandardCharsets.US_ASCII));
                if (!verifier.verify(d.decode(jwt[2]))) throw new VapidProblem(403, "VAPID signature does not verify with k");
                if (benchMode) verifiedTokens.put(cacheKey, true);
            }
        } catch (VapidProblem p) {
            throw p;
        } catch (GeneralSecurityException | RuntimeException e) {
            throw new VapidProblem(401, "VAPID token unreadable: " + e);
        }
        if (!origin.equals(claims.path("aud").asString(null))) {
            throw new VapidProblem(403, "VAPID aud is " + claims.path("aud") + ", not " + origin);
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
        return new Vapid(t, claims, k);
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
        ecdh.doPhase(publicKey(senderKey), true);
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

    private static PublicKey publicKey(byte[] point) throws GeneralSecurityException {
        if (point.length != 65 || point[0] != 4) throw new GeneralSecurityException("not an uncompressed P-256 point");
        ECPoint w = new ECPoint(new BigInteger(1, Arrays.copyOfRange(point, 1, 33)), new BigInteger(1, Arrays.copyOfRange(point, 33, 65)));
        return KeyFactory.getInstance("EC").generatePublic(new ECPublicKeySpec(w, P256_PARAMS));
    }

    private static ECParameterSpec p256() {
        try {
            AlgorithmParameters parameters = AlgorithmParameters.getInstance("EC");
            parameters.init(new ECGenParameterSpec("secp256r1"));
            return parameters.getParameterSpec(ECParameterSpec.class);
        } catch (GeneralSecurityException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static byte[] point(ECPublicKey key) {
        byte[] out = new byte[65];
        out[0] = 4;
        byte[] x = key.getW().getAffineX().toByteArray();
        byte[] y = key.getW().getAffineY().toByteArray();
        int xl = Math.min(32, x.length);
        int yl = Math.min(32, y.length);
        System.arraycopy(x, x.length - xl, out, 33 - xl, xl);
        System.arraycopy(y, y.length - yl, out, 65 - yl, yl);
        return out;
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
