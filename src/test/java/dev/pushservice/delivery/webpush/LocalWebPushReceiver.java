package dev.pushservice.delivery.webpush;

import dev.pushservice.delivery.apns.TestCertificates;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerUpgradeHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2FrameStream;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2ServerUpgradeCodec;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
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
import java.security.cert.X509Certificate;
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
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.regex.Pattern;
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
 * and auth secret each, endpoint {@code http://127.0.0.1:<port>/push/<id>}, or {@code https://}
 * from {@link #subscribeTls()}), and for every push: checks the VAPID {@code Authorization} (ES256
 * signature against {@code k=}, {@code aud} = the origin the push was sent to, {@code exp} in the
 * future and at most 24 h ahead, {@code sub} a mailto:/https: URL), the {@code Content-Encoding},
 * {@code TTL}, {@code Urgency} and {@code Topic} headers, and decrypts the body as a browser would
 * (RFC 8291/8188, written independently of the production code, on the JDK's own providers), then
 * records and counts it.
 *
 * <p>Protocols, all on one port, as real push services speak them: TLS (a certificate for
 * 127.0.0.1 signed by {@link #trustedCertificate()}) with ALPN {@code h2} or {@code http/1.1};
 * cleartext HTTP/2 by prior knowledge ({@code h2c}) or by the HTTP/1.1 {@code Upgrade: h2c} the
 * JDK {@code HttpClient} uses; and plain HTTP/1.1. HTTP/2 connections advertise
 * {@link #DEFAULT_MAX_CONCURRENT_STREAMS} concurrent streams unless {@link #maxConcurrentStreams}
 * changes it. {@link #startHttp1Only()} starts one that speaks HTTP/1.1 only, as an old server
 * would (ALPN offers only {@code http/1.1}; the HTTP/2 preface gets a 400).
 *
 * <p>Answers: 201 with a {@code Location} when all checks pass; 404 for an unknown subscription;
 * 410 for one that was {@link #unsubscribe unsubscribed}; 401/403 for VAPID problems and 400 for
 * bad headers or an undecryptable body (each also noted in {@link #problems()}); or whatever was
 * set with {@link #answerAll} / {@link #answer} (e.g. 429 with {@code Retry-After}, 413, 500).
 *
 * <p>{@link #benchMode(boolean) Bench mode} counts instead of recording: every push is routed and
 * its headers checked, each distinct VAPID token is verified in full once, and one push in
 * {@link #BENCH_SAMPLE} gets every check (VAPID signature and claims, decryption); the others skip
 * decryption and reuse the verified token. {@link #fullyChecked()} says how many were checked in
 * full. Tests leave it off, so every push is checked in full.
 *
 * <p>Thread-safe. {@link #start()} binds a free port; {@link #close()} stops it.
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
    private static final ECParameterSpec P256_PARAMS = p256();
    private static final Pattern DIGITS = Pattern.compile("[0-9]+");
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    private static final Set<String> URGENCIES = Set.of("very-low", "low", "normal", "high");

    /**
     * Shared by every receiver in the JVM: a server that owns its event loops waits a quiet period
     * on shutdown, which would dominate each test.
     */
    private static final EventLoopGroup EVENT_LOOPS = new MultiThreadIoEventLoopGroup(2,
            new DefaultThreadFactory("webpush-receiver", true), NioIoHandler.newFactory());

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

    /** One request, whichever protocol carried it; header names in lower case. */
    private record Request(String protocol, boolean tls, String method, String path, Map<String, String> headers,
            byte[] body) {
    }

    /** What to send back. */
    private record Reply(int status, String location, String retryAfter, String body) {
        static Reply of(int status, String body) {
            return new Reply(status, null, null, body);
        }
    }

    private final boolean http2;
    private final Channel server;
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final SslContext tls;
    private final String origin;
    private final String tlsOrigin;
    private final AtomicLong messageIds = new AtomicLong();
    private final Map<String, Subscriber> subscriptions = new ConcurrentHashMap<>();
    private final Map<String, Boolean> unsubscribed = new ConcurrentHashMap<>();
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    private final AtomicReference<Answer> answerAll = new AtomicReference<>();
    private final Map<String, Instant> verifiedTokens = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> byProtocol = new ConcurrentHashMap<>();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong fullyChecked = new AtomicLong();
    private final AtomicLong accepts = new AtomicLong();
    private final AtomicLong sampled = new AtomicLong();
    private List<Runnable> held; // guarded by this
    private volatile int maxConcurrentStreams = DEFAULT_MAX_CONCURRENT_STREAMS;
    private volatile boolean benchMode;

    private LocalWebPushReceiver(int port, boolean http2) throws InterruptedException {
        this.http2 = http2;
        TestCertificates pki = TestCertificates.shared();
        try {
            tls = SslContextBuilder.forServer(pki.serverKeys.getPrivate(), pki.server, pki.ca)
                    .sslProvider(SslProvider.JDK)
                    .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                            http2 ? List.of(ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1)
                                    : List.of(ApplicationProtocolNames.HTTP_1_1)))
                    .build();
        } catch (javax.net.ssl.SSLException e) {
            throw new IllegalStateException(e);
        }
        server = new ServerBootstrap()
                .group(EVENT_LOOPS)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepts.incrementAndGet();
                        connections.add(ch);
                        ch.pipeline().addLast(new DetectTls());
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        origin = "http://127.0.0.1:" + port();
        tlsOrigin = "https://127.0.0.1:" + port();
    }

    /** Starts on a free loopback port, speaking HTTP/2 and HTTP/1.1, with and without TLS. */
    public static LocalWebPushReceiver start() throws InterruptedException {
        return new LocalWebPushReceiver(0, true);
    }

    /** Starts on the given loopback port (0: any free one). */
    public static LocalWebPushReceiver start(int port) throws InterruptedException {
        return new LocalWebPushReceiver(port, true);
    }

    /** Starts a receiver that speaks only HTTP/1.1 (with and without TLS), on a free port. */
    public static LocalWebPushReceiver startHttp1Only() throws InterruptedException {
        return new LocalWebPushReceiver(0, false);
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** {@code http://127.0.0.1:<port>}: the {@code aud} every VAPID token sent here in cleartext must carry. */
    public String origin() {
        return origin;
    }

    /** {@code https://127.0.0.1:<port>}: the {@code aud} for pushes sent over TLS. */
    public String tlsOrigin() {
        return tlsOrigin;
    }

    /** The CA that signed this receiver's TLS certificate: what a client must trust for {@link #subscribeTls()}. */
    public static X509Certificate trustedCertificate() {
        return TestCertificates.shared().ca;
    }

    /** HTTP/2 concurrent streams to advertise on connections opened from now on. */
    public void maxConcurrentStreams(int streams) {
        this.maxConcurrentStreams = streams;
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
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair keys = generator.generateKeyPair();
            byte[] auth = new byte[16];
            RANDOM.nextBytes(auth);
            String id = UUID.randomUUID().toString();
            Subscriber s = new Subscriber(id, base + "/push/" + id, keys, point((ECPublicKey) keys.getPublic()), auth);
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

    /** Hold every request (counted, unanswered) until {@link #release()}: a slow push service. */
    public synchronized void hold() {
        if (held == null) held = new ArrayList<>();
    }

    /** Answers the held requests and stops holding. */
    public void release() {
        List<Runnable> waiting;
        synchronized (this) {
            waiting = held;
            held = null;
        }
        if (waiting != null) waiting.forEach(Runnable::run);
    }

    /** Bench mode: count instead of recording, and check one push in {@link #BENCH_SAMPLE} in full. */
    public void benchMode(boolean on) {
        benchMode = on;
    }

    /** Every request that reached a push endpoint. */
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

    /** TCP connections accepted so far. */
    public long connectionCount() {
        return accepts.get();
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
        answerAll.set(null);
        release();
    }

    /** Closes every open connection as a restarting push service does: HTTP/2 ones with a GOAWAY first. */
    public void closeConnections() {
        connections.close().awaitUninterruptibly();
    }

    /** Drops every open connection abruptly (no GOAWAY, no answers), as a crashed server or network would. */
    public void dropConnections() {
        for (Channel c : connections) {
            c.eventLoop().execute(() -> c.unsafe().closeForcibly());
        }
    }

    @Override
    public void close() {
        release();
        server.close().syncUninterruptibly();
        connections.close().awaitUninterruptibly();
    }

    // ---- one push, whichever protocol carried it ----

    private void handle(Request request, Consumer<Reply> respond) {
        requests.incrementAndGet();
        byProtocol.computeIfAbsent(request.protocol(), p -> new AtomicLong()).incrementAndGet();
        Runnable work = () -> respond.accept(answer(request));
        synchronized (this) {
            if (held != null) {
                held.add(work);
                return;
            }
        }
        work.run();
    }

    private Reply answer(Request request) {
        if (!request.path().startsWith("/push/")) return Reply.of(404, null);
        if (!request.method().equals("POST")) return Reply.of(405, null);
        String id = request.path().substring("/push/".length());
        Subscriber subscriber = subscriptions.get(id);
        if (subscriber == null) return Reply.of(unsubscribed.containsKey(id) ? 410 : 404, null);
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
                return Reply.of(p.status, p.getMessage());
            }
            if (benchMode) verifiedTokens.put(audience + " " + authorization, vapid.expires());
        }
        String headerProblem = checkHeaders(headers);
        if (headerProblem != null) {
            problems.add(headerProblem);
            return Reply.of(400, headerProblem);
        }
        byte[] plaintext = null;
        if (full) {
            fullyChecked.incrementAndGet();
            try {
                plaintext = decrypt(subscriber, request.body());
            } catch (GeneralSecurityException | RuntimeException e) {
                problems.add("cannot decrypt: " + e);
                return Reply.of(400, "cannot decrypt the message");
            }
        }
        Answer answer = answers.getOrDefault(id, answerAll.get());
        int status = answer == null ? 201 : answer.status();
        if (!benchMode) {
            received.add(new Received(id, Instant.now(), Map.copyOf(headers), plaintext,
                    vapid == null ? null : vapid.jwt(), vapid == null ? null : vapid.claims(),
                    vapid == null ? null : vapid.k(), status, request.protocol()));
        }
        if (answer != null) return new Reply(answer.status(), null, answer.retryAfter(), answer.body());
        accepted.incrementAndGet();
        return new Reply(201, audience + "/message/" + messageIds.incrementAndGet(), null, null);
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
        String[] jwt = t.split("\\.");
        if (jwt.length != 3) throw new VapidProblem(401, "VAPID token is not a JWS");
        JsonNode claims;
        try {
            Base64.Decoder d = Base64.getUrlDecoder();
            JsonNode header = JSON.readTree(d.decode(jwt[0]));
            if (!"ES256".equals(header.path("alg").asString(null))) throw new VapidProblem(401, "VAPID alg must be ES256");
            claims = JSON.readTree(d.decode(jwt[1]));
            Signature verifier = Signature.getInstance("SHA256withECDSAinP1363Format");
            verifier.initVerify(publicKey(d.decode(k)));
            verifier.update((jwt[0] + "." + jwt[1]).getBytes(StandardCharsets.US_ASCII));
            if (!verifier.verify(d.decode(jwt[2]))) throw new VapidProblem(403, "VAPID signature does not verify with k");
        } catch (VapidProblem p) {
            throw p;
        } catch (GeneralSecurityException | RuntimeException e) {
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

    // ---- transport: TLS or not, then HTTP/2 or HTTP/1.1 ----

    /** Looks at the first bytes: a TLS record starts TLS with ALPN, anything else is cleartext. */
    private final class DetectTls extends ByteToMessageDecoder {
        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            if (in.readableBytes() < 5) return;
            ChannelPipeline pipeline = ctx.pipeline();
            if (SslHandler.isEncrypted(in, false)) {
                pipeline.addAfter(ctx.name(), "alpn", new Alpn());
                pipeline.replace(this, "tls", tls.newHandler(ctx.alloc()));
            } else {
                cleartext(pipeline, ctx.name());
                pipeline.remove(this);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // a client going away (reset, failed handshake) is normal for a test peer
        }
    }

    private final class Alpn extends ApplicationProtocolNegotiationHandler {
        Alpn() {
            super(ApplicationProtocolNames.HTTP_1_1);
        }

        @Override
        protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
            if (http2 && ApplicationProtocolNames.HTTP_2.equals(protocol)) {
                ctx.pipeline().addLast(http2Codec(), new Http2Handler("h2", true), new CloseOnError());
            } else {
                ctx.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20), new Http1Handler(true),
                        new CloseOnError());
            }
        }

        @Override
        protected void handshakeFailure(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    private void cleartext(ChannelPipeline pipeline, String after) {
        if (!http2) {
            pipeline.addAfter(after, "h1", new HttpServerCodec());
            pipeline.addAfter("h1", "aggregator", new HttpObjectAggregator(1 << 20));
            pipeline.addAfter("aggregator", "handler", new Http1Handler(false));
            pipeline.addLast(new CloseOnError());
            return;
        }
        HttpServerCodec http1 = new HttpServerCodec();
        HttpServerUpgradeHandler.UpgradeCodecFactory upgrades = protocol ->
                AsciiString.contentEquals(Http2CodecUtil.HTTP_UPGRADE_PROTOCOL_NAME, protocol)
                        ? new Http2ServerUpgradeCodec(http2Codec(), new Http2Handler("h2c", false))
                        : null;
        HttpServerUpgradeHandler upgrade = new HttpServerUpgradeHandler(http1, upgrades, 1 << 20);
        ChannelHandler priorKnowledge = new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel c) {
                c.pipeline().addLast(http2Codec(), new Http2Handler("h2c", false));
            }
        };
        pipeline.addAfter(after, "h2c", new CleartextHttp2ServerUpgradeHandler(http1, upgrade, priorKnowledge));
        // Reached only by HTTP/1.1 requests that did not upgrade.
        pipeline.addLast(new SimpleChannelInboundHandler<HttpMessage>() {
            @Override
            protected void channelRead0(ChannelHandlerContext ctx, HttpMessage msg) {
                ctx.pipeline().addAfter(ctx.name(), "http1", new Http1Handler(false));
                ctx.pipeline().replace(this, "aggregator", new HttpObjectAggregator(1 << 20));
                ctx.fireChannelRead(ReferenceCountUtil.retain(msg));
            }
        });
        pipeline.addLast(new CloseOnError());
    }

    private Http2FrameCodec http2Codec() {
        return Http2FrameCodecBuilder.forServer()
                .initialSettings(Http2Settings.defaultSettings().maxConcurrentStreams(maxConcurrentStreams))
                // Closing sends GOAWAY and lets the streams already accepted finish, as a push service
                // draining a connection does (the frame codec's default is to close at once).
                .gracefulShutdownTimeoutMillis(10_000)
                .build();
    }

    /** A client going away (reset, abrupt close) is normal for a test peer: close quietly. */
    private static final class CloseOnError extends ChannelInboundHandlerAdapter {
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    private final class Http1Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final boolean overTls;

        Http1Handler(boolean overTls) {
            this.overTls = overTls;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            if (!req.decoderResult().isSuccess() || req.protocolVersion().majorVersion() != 1) {
                // e.g. the HTTP/2 preface sent to an HTTP/1.1-only server
                FullHttpResponse bad = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_REQUEST);
                bad.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                ctx.writeAndFlush(bad).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            Map<String, String> headers = new HashMap<>();
            req.headers().forEach(e -> headers.putIfAbsent(e.getKey().toLowerCase(Locale.ROOT), e.getValue()));
            String path = req.uri();
            int query = path.indexOf('?');
            Request request = new Request("http/1.1", overTls, req.method().name(),
                    query < 0 ? path : path.substring(0, query), headers, ByteBufUtil.getBytes(req.content()));
            handle(request, reply -> {
                ByteBuf content = reply.body() == null ? Unpooled.EMPTY_BUFFER
                        : Unpooled.copiedBuffer(reply.body(), StandardCharsets.UTF_8);
                FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        HttpResponseStatus.valueOf(reply.status()), content);
                response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
                if (reply.location() != null) response.headers().set(HttpHeaderNames.LOCATION, reply.location());
                if (reply.retryAfter() != null) response.headers().set(HttpHeaderNames.RETRY_AFTER, reply.retryAfter());
                HttpUtil.setKeepAlive(response, keepAlive);
                write(ctx, response, !keepAlive);
            });
        }

        private void write(ChannelHandlerContext ctx, Object response, boolean close) {
            if (!ctx.executor().inEventLoop()) {
                ctx.executor().execute(() -> write(ctx, response, close));
                return;
            }
            var future = ctx.writeAndFlush(response);
            if (close) future.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /**
     * HTTP/2 straight on the frame codec (no child channel per stream): collects each stream's
     * headers and data, answers on end of stream, and flushes once per read burst.
     */
    private final class Http2Handler extends ChannelDuplexHandler {
        private final String protocol;
        private final boolean overTls;
        private final IntObjectHashMap<StreamState> streams = new IntObjectHashMap<>();
        private boolean reading;

        Http2Handler(String protocol, boolean overTls) {
            this.protocol = protocol;
            this.overTls = overTls;
        }

        private static final class StreamState {
            Http2Headers headers;
            final ByteArrayOutputStream body = new ByteArrayOutputStream(512);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            reading = true;
            try {
                if (msg instanceof Http2HeadersFrame frame) {
                    StreamState state = state(frame.stream());
                    if (state.headers == null) state.headers = frame.headers();
                    if (frame.isEndStream()) complete(ctx, frame.stream(), streams.remove(frame.stream().id()));
                } else if (msg instanceof Http2DataFrame frame) {
                    StreamState state = state(frame.stream());
                    ByteBuf data = frame.content();
                    data.readBytes(state.body, data.readableBytes());
                    // return the flow-control window for what was consumed
                    if (frame.initialFlowControlledBytes() > 0) {
                        ctx.write(new DefaultHttp2WindowUpdateFrame(frame.initialFlowControlledBytes()).stream(frame.stream()));
                    }
                    if (frame.isEndStream()) complete(ctx, frame.stream(), streams.remove(frame.stream().id()));
                } else if (msg instanceof Http2ResetFrame frame) {
                    streams.remove(frame.stream().id());
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private StreamState state(Http2FrameStream stream) {
            StreamState state = streams.get(stream.id());
            if (state == null) {
                state = new StreamState();
                streams.put(stream.id(), state);
            }
            return state;
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            reading = false;
            ctx.flush();
        }

        private void complete(ChannelHandlerContext ctx, Http2FrameStream stream, StreamState state) {
            if (state == null || state.headers == null) return;
            Map<String, String> headers = new HashMap<>();
            state.headers.forEach(e -> {
                CharSequence name = e.getKey();
                if (name.length() > 0 && name.charAt(0) != ':') {
                    headers.putIfAbsent(name.toString().toLowerCase(Locale.ROOT), e.getValue().toString());
                }
            });
            CharSequence method = state.headers.method();
            CharSequence path = state.headers.path();
            String p = path == null ? "" : path.toString();
            int query = p.indexOf('?');
            Request request = new Request(protocol, overTls, method == null ? "" : method.toString(),
                    query < 0 ? p : p.substring(0, query), headers, state.body.toByteArray());
            handle(request, reply -> respond(ctx, stream, reply));
        }

        private void respond(ChannelHandlerContext ctx, Http2FrameStream stream, Reply reply) {
            if (!ctx.executor().inEventLoop()) {
                ctx.executor().execute(() -> respond(ctx, stream, reply));
                return;
            }
            Http2Headers headers = new DefaultHttp2Headers().status(String.valueOf(reply.status()));
            if (reply.location() != null) headers.set(HttpHeaderNames.LOCATION, reply.location());
            if (reply.retryAfter() != null) headers.set(HttpHeaderNames.RETRY_AFTER, reply.retryAfter());
            if (reply.body() == null) {
                ctx.write(new DefaultHttp2HeadersFrame(headers, true).stream(stream));
            } else {
                headers.set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=UTF-8");
                ctx.write(new DefaultHttp2HeadersFrame(headers, false).stream(stream));
                ctx.write(new DefaultHttp2DataFrame(Unpooled.copiedBuffer(reply.body(), StandardCharsets.UTF_8), true)
                        .stream(stream));
            }
            if (!reading) ctx.flush();
        }
    }
}
