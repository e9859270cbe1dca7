package dev.pushservice.delivery.fcm;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameStream;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.HashMap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
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
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2ServerUpgradeCodec;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.PublicKey;
import java.security.Signature;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A local FCM HTTP v1 endpoint and OAuth2 token endpoint on one loopback port, for tests, benchmarks
 * and the "local peers" command.
 *
 * <p>Protocols: FCM sends arrive over HTTP/2 in cleartext (h2c), either by prior knowledge or by the
 * HTTP/1.1 {@code Upgrade: h2c} that the JDK {@code HttpClient} uses for {@code http://} URLs; after
 * the upgrade every request on the connection is an HTTP/2 stream. The token endpoint also answers
 * plain HTTP/1.1, since google-auth fetches tokens with {@code HttpURLConnection}.
 *
 * <ul>
 * <li>{@code POST /token}: an RFC 7523 JWT-bearer grant. The assertion must be RS256-signed by the key of a
 *     service account {@linkplain #registerServiceAccount registered} here, be unexpired and ask for the FCM
 *     scope; the answer is a fresh random access token living {@link #tokenLifetime}.</li>
 * <li>{@code POST /v1/projects/{project}/messages:send}: needs {@code Authorization: Bearer} with a live token
 *     issued here (else 401 {@code UNAUTHENTICATED}); answers 200 {@code {"name": …}} unless a reply was
 *     {@linkplain #replyFor configured} for the message's registration token.</li>
 * </ul>
 *
 * <p>Thread-safe; counters are cumulative since start.
 */
public final class LocalFcmServer implements AutoCloseable {

    /** What the server received for one send (recorded while {@link #recording} is on). */
    public record Received(String protocol, String project, String authorization, JsonNode body) {
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
            Map<String, String> h = new java.util.HashMap<>(headers);
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

    private final int requestedPort;
    private final Map<String, PublicKey> serviceAccounts = new ConcurrentHashMap<>();
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
    private final AtomicLong connections = new AtomicLong();
    private volatile Duration tokenLifetime = Duration.ofHours(1);
    private volatile boolean recording = true;
    private EventLoopGroup group;
    private Channel channel;

    /** @param port the loopback port to listen on; 0 picks a free one (see {@link #port()}) */
    public LocalFcmServer(int port) {
        this.requestedPort = port;
    }

    public synchronized LocalFcmServer start() throws InterruptedException {
        if (channel != null) return this;
        group = new MultiThreadIoEventLoopGroup(Math.max(2, Runtime.getRuntime().availableProcessors()),
                NioIoHandler.newFactory());
        channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        configure(ch);
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", requestedPort)).sync().channel();
        return this;
    }

    public synchronized void stop() {
        if (channel == null) return;
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        channel = null;
        group = null;
    }

    @Override
    public void close() {
        stop();
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
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
    public void registerServiceAccount(String clientEmail, PublicKey publicKey) {
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

    /** Record each send's body (on by default; benchmarks turn it off to save memory). */
    public void recording(boolean on) {
        this.recording = on;
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
        return connections.get();
    }

    private void configure(SocketChannel ch) {
        connections.incrementAndGet();
        HttpServerCodec http1 = new HttpServerCodec();
        HttpServerUpgradeHandler.UpgradeCodecFactory upgrades = protocol ->
                AsciiString.contentEquals(Http2CodecUtil.HTTP_UPGRADE_PROTOCOL_NAME, protocol)
                        ? new Http2ServerUpgradeCodec(http2Codec(), new Http2Handler())
                        : null;
        HttpServerUpgradeHandler upgrade = new HttpServerUpgradeHandler(http1, upgrades, 1 << 20);
        ChannelHandler priorKnowledge = new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel c) {
                c.pipeline().addLast(http2Codec(), new Http2Handler());
            }
        };
        ch.pipeline().addLast(new CleartextHttp2ServerUpgradeHandler(http1, upgrade, priorKnowledge));
        // Reached only by HTTP/1.1 requests that did not upgrade (the token endpoint's client).
        ch.pipeline().addLast(new SimpleChannelInboundHandler<HttpMessage>() {
            @Override
            protected void channelRead0(ChannelHandlerContext ctx, HttpMessage msg) {
                ctx.pipeline().addAfter(ctx.name(), "http1", new Http1Handler());
                ctx.pipeline().replace(this, "aggregator", new HttpObjectAggregator(1 << 20));
                ctx.fireChannelRead(ReferenceCountUtil.retain(msg));
            }
        });
        // A client going away (reset, abrupt close) is normal for a test peer: close quietly.
        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                ctx.close();
            }
        });
    }

    private static Http2FrameCodec http2Codec() {
        return Http2FrameCodecBuilder.forServer()
                .initialSettings(Http2Settings.defaultSettings().maxConcurrentStreams(10_000))
                .build();
    }

    /** One request, whichever protocol carried it. */
    private record Exchange(String protocol, String method, String path, String authorization, byte[] body) {
    }

    /** What to answer; {@code delay} holds it back. */
    private record Answer(int status, Map<String, String> headers, String body, Duration delay, Runnable onSent) {
        Answer(int status, Map<String, String> headers, String body) {
            this(status, headers, body, Duration.ZERO, null);
        }
    }

    private Answer answer(Exchange exchange) {
        if (exchange.method().equals("POST") && exchange.path().equals("/token")) return token(exchange);
        String path = exchange.path();
        if (exchange.method().equals("POST") && path.startsWith("/v1/projects/") && path.endsWith("/messages:send")) {
            return send(exchange, path.substring("/v1/projects/".length(), path.length() - "/messages:send".length()));
        }
        return new Answer(404, Map.of(), "{\"error\":{\"code\":404,\"status\":\"NOT_FOUND\"}}");
    }

    private Answer token(Exchange exchange) {
        tokenRequests.incrementAndGet();
        QueryStringDecoder params = new QueryStringDecoder(new String(exchange.body(), StandardCharsets.UTF_8), false);
        String grant = first(params, "grant_type");
        String assertion = first(params, "assertion");
        String problem = !JWT_BEARER.equals(grant) ? "unsupported grant_type"
                : assertion == null ? "no assertion" : checkAssertion(assertion);
        if (problem != null) {
            tokensRefused.incrementAndGet();
            return new Answer(400, Map.of(), "{\"error\":\"invalid_grant\",\"error_description\":\"" + problem + "\"}");
        }
        String accessToken = "ya29.local-" + UUID.randomUUID();
        Duration lifetime = tokenLifetime;
        tokens.put(accessToken, System.currentTimeMillis() + lifetime.toMillis());
        return new Answer(200, Map.of(), "{\"access_token\":\"" + accessToken + "\",\"expires_in\":"
                + lifetime.toSeconds() + ",\"token_type\":\"Bearer\"}");
    }

    /** Null when the JWT is signed by a registered service account, unexpired and scoped for FCM. */
    private String checkAssertion(String jwt) {
        String[] parts = jwt.split("\\.");
        if (parts.length != 3) return "assertion is not a JWT";
        try {
            Base64.Decoder b64 = Base64.getUrlDecoder();
            JsonNode header = JSON.readTree(b64.decode(parts[0]));
            JsonNode claims = JSON.readTree(b64.decode(parts[1]));
            if (!"RS256".equals(header.path("alg").stringValue(null))) return "alg must be RS256";
            PublicKey key = serviceAccounts.get(claims.path("iss").stringValue(""));
            if (key == null) return "unknown service account";
            Signature rsa = Signature.getInstance("SHA256withRSA");
            rsa.initVerify(key);
            rsa.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
            if (!rsa.verify(b64.decode(parts[2]))) return "bad signature";
            long now = System.currentTimeMillis() / 1000;
            if (claims.path("exp").asLong(0) < now) return "assertion expired";
            if (claims.path("iat").asLong(Long.MAX_VALUE) > now + 60) return "assertion issued in the future";
            if (!List.of(claims.path("scope").stringValue("").split(" ")).contains(SCOPE)) return "missing scope";
            return null;
        } catch (Exception e) {
            return "unreadable assertion";
        }
    }

    private Answer send(Exchange exchange, String project) {
        String authorization = exchange.authorization();
        String bearer = authorization != null && authorization.startsWith("Bearer ") ? authorization.substring(7) : null;
        Long expiry = bearer == null ? null : tokens.get(bearer);
        if (expiry == null || expiry < System.currentTimeMillis()) {
            unauthorizedSends.incrementAndGet();
            return new Answer(401, Map.of("www-authenticate", "Bearer"), "{\"error\":{\"code\":401,"
                    + "\"message\":\"Request had invalid authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}");
        }
        if ("h2".equals(exchange.protocol())) http2Sends.incrementAndGet();
        JsonNode body;
        try {
            body = JSON.readTree(exchange.body());
        } catch (RuntimeException e) {
            body = null;
        }
        String registrationToken = body == null ? null : body.path("message").path("token").stringValue(null);
        if (registrationToken == null) {
            return new Answer(400, Map.of(), "{\"error\":{\"code\":400,\"message\":\"Invalid JSON payload or "
                    + "missing message.token\",\"status\":\"INVALID_ARGUMENT\"}}");
        }
        if (recording) received.add(new Received(exchange.protocol(), project, authorization, body));
        Reply reply = replies.get(registrationToken);
        if (reply == null) {
            reply = new Reply(200, Map.of(), "{\"name\":\"projects/" + project + "/messages/"
                    + messageIds.incrementAndGet() + "\"}", Duration.ZERO);
        }
        int now = concurrent.incrementAndGet();
        maxConcurrent.accumulateAndGet(now, Math::max);
        boolean accepted = reply.status() == 200;
        return new Answer(reply.status(), reply.headers(), reply.body(), reply.delay(), () -> {
            concurrent.decrementAndGet();
            if (accepted) sendsAccepted.incrementAndGet();
            sendsAnswered.incrementAndGet();
        });
    }

    /** Answers now, or later on the channel's event loop when the answer is delayed. */
    private static void deliver(ChannelHandlerContext ctx, Answer answer, Runnable write) {
        Runnable finish = () -> {
            if (answer.onSent() != null) answer.onSent().run();
            write.run();
        };
        if (answer.delay().isZero()) {
            finish.run();
        } else {
            ctx.executor().schedule(() -> {
                finish.run();
                ctx.flush();
            }, answer.delay().toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** HTTP/1.1, used by google-auth's token requests. */
    private final class Http1Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            byte[] body = ByteBufUtil.getBytes(req.content());
            Exchange exchange = new Exchange("http/1.1", req.method().name(), new QueryStringDecoder(req.uri()).path(),
                    req.headers().get(HttpHeaderNames.AUTHORIZATION), body);
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            Answer answer = answer(exchange);
            deliver(ctx, answer, () -> {
                ByteBuf content = answer.body() == null ? Unpooled.EMPTY_BUFFER
                        : Unpooled.copiedBuffer(answer.body(), StandardCharsets.UTF_8);
                FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        HttpResponseStatus.valueOf(answer.status()), content);
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json; charset=UTF-8");
                response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
                answer.headers().forEach((k, v) -> response.headers().set(k, v));
                HttpUtil.setKeepAlive(response, keepAlive);
                ctx.writeAndFlush(response);
            });
        }
    }

    /**
     * HTTP/2 straight on the frame codec (no child channel per stream): collects each stream's
     * headers and data, answers on end of stream, and flushes once per read burst.
     */
    private final class Http2Handler extends ChannelDuplexHandler {
        private final Map<Integer, StreamState> streams = new HashMap<>();

        private static final class StreamState {
            Http2Headers headers;
            ByteArrayOutputStream body = new ByteArrayOutputStream(512);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame frame) {
                    StreamState state = streams.computeIfAbsent(frame.stream().id(), id -> new StreamState());
                    if (state.headers == null) state.headers = frame.headers();
                    if (frame.isEndStream()) complete(ctx, frame.stream(), streams.remove(frame.stream().id()));
                } else if (msg instanceof Http2DataFrame frame) {
                    StreamState state = streams.computeIfAbsent(frame.stream().id(), id -> new StreamState());
                    ByteBuf data = frame.content();
                    data.getBytes(data.readerIndex(), state.body, data.readableBytes());
                    // return the flow-control window for what was consumed
                    if (frame.initialFlowControlledBytes() > 0) {
                        ctx.write(new DefaultHttp2WindowUpdateFrame(frame.initialFlowControlledBytes()).stream(frame.stream()));
                    }
                    if (frame.isEndStream()) complete(ctx, frame.stream(), streams.remove(frame.stream().id()));
                } else if (msg instanceof Http2ResetFrame frame) {
                    streams.remove(frame.stream().id());
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        private void complete(ChannelHandlerContext ctx, Http2FrameStream stream, StreamState state) {
            if (state == null || state.headers == null) return;
            CharSequence authorization = state.headers.get(HttpHeaderNames.AUTHORIZATION);
            CharSequence path = state.headers.path();
            CharSequence method = state.headers.method();
            Exchange exchange = new Exchange("h2", method == null ? "" : method.toString(),
                    path == null ? "" : new QueryStringDecoder(path.toString()).path(),
                    authorization == null ? null : authorization.toString(), state.body.toByteArray());
            Answer answer = answer(exchange);
            deliver(ctx, answer, () -> {
                Http2Headers headers = new DefaultHttp2Headers().status(String.valueOf(answer.status()));
                headers.set(HttpHeaderNames.CONTENT_TYPE, "application/json; charset=UTF-8");
                answer.headers().forEach((k, v) -> headers.set(k.toLowerCase(java.util.Locale.ROOT), v));
                if (answer.body() == null) {
                    ctx.write(new DefaultHttp2HeadersFrame(headers, true).stream(stream));
                } else {
                    ctx.write(new DefaultHttp2HeadersFrame(headers, false).stream(stream));
                    ctx.write(new DefaultHttp2DataFrame(
                            Unpooled.copiedBuffer(answer.body(), StandardCharsets.UTF_8), true).stream(stream));
                }
            });
        }
    }

    private static String first(QueryStringDecoder params, String name) {
        List<String> values = params.parameters().get(name);
        return values == null || values.isEmpty() ? null : values.getFirst();
    }
}
