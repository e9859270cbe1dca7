package dev.pushservice.delivery.http;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2EventAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AsciiString;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLException;

/**
 * The HTTP client push requests go out on (FCM, Web Push), on Netty: HTTP/2 where the server
 * offers it (ALPN {@code h2} over TLS, as FCM, Mozilla's autopush and Apple's web push service
 * do), HTTP/1.1 otherwise (ALPN {@code http/1.1} or no ALPN). Plain {@code http://} servers, which
 * only local testing uses, are tried with HTTP/2 by prior knowledge ({@code h2c}); one that answers
 * the HTTP/2 preface in HTTP/1.x is spoken to in HTTP/1.1 from then on. Only {@code POST} is
 * needed, so only {@code POST} is offered.
 *
 * <p>Connections are pooled per origin (scheme, host, port). HTTP/2 requests are multiplexed: a new
 * connection is opened only when every open one has as many streams as the server allows
 * ({@code SETTINGS_MAX_CONCURRENT_STREAMS}), up to {@link #MAX_HTTP2_CONNECTIONS}; HTTP/1.1
 * connections carry one request at a time, up to {@link #MAX_HTTP1_CONNECTIONS}. Requests beyond
 * that wait in the origin's queue, which the caller must bound (the providers let at most their
 * {@code max-in-flight} requests exist at once). Connections idle for
 * {@link #IDLE_CLOSE} are closed.
 *
 * <p>A request fails (the future completes exceptionally with an {@link IOException} whose message
 * never names the endpoint) when it gets no answer within the request timeout, when its
 * connection cannot be opened or closes before the answer, or when the server resets its stream.
 * Nothing is retried here. Futures complete on a Netty I/O thread: continuations must not block.
 *
 * <p>Thread-safe and long-lived (one per provider); {@link #close()} closes every connection.
 */
public final class PushHttpClient implements AutoCloseable {

    /** HTTP/2 connections per origin, opened only when the open ones have no stream to spare. */
    public static final int MAX_HTTP2_CONNECTIONS = 8;
    /** HTTP/1.1 connections per origin (one request at a time each). */
    public static final int MAX_HTTP1_CONNECTIONS = 128;
    /** Connections with nothing to do for this long are closed. */
    public static final Duration IDLE_CLOSE = Duration.ofMinutes(2);
    /** How much of a response body is kept: answers are short (a message name, an error explanation). */
    public static final int MAX_BODY = 16 * 1024;

    private static final byte[] NO_BODY = new byte[0];
    private static final AsciiString POST = AsciiString.cached("POST");
    private static final AsciiString CONTENT_LENGTH = AsciiString.cached("content-length");

    /**
     * An answer: the status, the headers the providers read, and the first {@link #MAX_BODY} bytes
     * of the body (empty when there was none). {@code protocol} is {@code h2}, {@code h2c} or
     * {@code http/1.1}.
     */
    public record Response(int status, String protocol, String location, String retryAfter, byte[] body) {
    }

    /** A request that got no answer; the message is safe to show (no endpoint, no token). */
    public static class RequestFailure extends IOException {
        RequestFailure(String message) {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // a description, not a bug: the trace would only cost time
        }
    }

    /** No answer within the request timeout. */
    public static final class RequestTimeout extends RequestFailure {
        RequestTimeout() {
            super("no answer in time");
        }
    }

    private enum Protocol { HTTP2, HTTP1 }

    private final EventLoopGroup group;
    private final SslContext tls;
    private final Bootstrap bootstrap;
    private final HashedWheelTimer timer;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final ConcurrentHashMap<String, Origin> origins = new ConcurrentHashMap<>();
    private final long requestTimeoutMillis;
    private final long connectTimeoutMillis;
    private volatile boolean closed;

    /**
     * @param name    names its threads ({@code <name>-io}, {@code <name>-timeouts})
     * @param trusted CA certificates to trust instead of the JDK's default trust store (tests, local
     *                peers); null or empty for the default
     */
    public PushHttpClient(String name, Duration connectTimeout, Duration requestTimeout, List<X509Certificate> trusted) {
        this.timer = new HashedWheelTimer(new DefaultThreadFactory(name + "-timeouts", true), 50, TimeUnit.MILLISECONDS);
        this.connectTimeoutMillis = connectTimeout.toMillis();
        this.requestTimeoutMillis = requestTimeout.toMillis();
        try {
            SslContextBuilder builder = SslContextBuilder.forClient()
                    .sslProvider(SslProvider.JDK)
                    .endpointIdentificationAlgorithm("HTTPS")
                    .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                            ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1));
            if (trusted != null && !trusted.isEmpty()) builder.trustManager(trusted);
            this.tls = builder.build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot set up TLS", e);
        }
        this.group = new MultiThreadIoEventLoopGroup(Math.min(2, Runtime.getRuntime().availableProcessors()),
                new DefaultThreadFactory(name + "-io", true), NioIoHandler.newFactory());
        this.bootstrap = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeoutMillis))
                .option(ChannelOption.TCP_NODELAY, true);
    }

    /**
     * POSTs {@code body} to {@code endpoint} (an absolute http or https URL).
     *
     * @param headers name/value pairs, names in lower case; {@code content-length} and the request
     *                line or pseudo-headers are added here
     */
    public CompletableFuture<Response> post(URI endpoint, String[] headers, byte[] body) {
        if (closed) return CompletableFuture.failedFuture(new RequestFailure("client is closed"));
        String path = endpoint.getRawPath() == null || endpoint.getRawPath().isEmpty() ? "/" : endpoint.getRawPath();
        if (endpoint.getRawQuery() != null) path += "?" + endpoint.getRawQuery();
        String scheme = endpoint.getScheme().toLowerCase(Locale.ROOT);
        int port = endpoint.getPort() != -1 ? endpoint.getPort() : scheme.equals("https") ? 443 : 80;
        String origin = scheme + "://" + endpoint.getHost().toLowerCase(Locale.ROOT) + ":" + port;
        Exchange exchange = new Exchange(path, headers, body);
        exchange.timeout = timer.newTimeout(t -> exchange.timedOut(), requestTimeoutMillis, TimeUnit.MILLISECONDS);
        while (true) {
            Origin pool = origins.computeIfAbsent(origin, key -> new Origin(key, endpoint));
            if (pool.submit(exchange)) break;
            // the pool was retired (idle, all its connections closed) just now: take a fresh one
        }
        return exchange.result;
    }

    /** Open connections (for tests and monitoring). */
    public int connectionCount() {
        return channels.size();
    }

    /** Closes every connection; requests not answered yet fail. */
    @Override
    public void close() {
        closed = true;
        for (Origin origin : origins.values()) {
            List<Exchange> waiting;
            synchronized (origin) {
                waiting = new ArrayList<>(origin.waiting);
                origin.waiting.clear();
            }
            waiting.forEach(e -> e.fail(new RequestFailure("client is closed")));
        }
        channels.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
        timer.stop();
    }

    private static String describe(Throwable error) {
        if (error instanceof RequestFailure f) return f.getMessage();
        if (error instanceof ConnectException) return "connection refused";
        if (error instanceof UnknownHostException) return "unknown host";
        if (error instanceof io.netty.channel.ConnectTimeoutException) return "connect timed out";
        if (error instanceof SSLException) return "TLS failed (" + error.getClass().getSimpleName() + ")";
        if (error instanceof ClosedChannelException) return "connection closed";
        // Other exception messages may carry the address; only the type is told.
        return error.getClass().getSimpleName();
    }

    /** One request, from {@link #post} until it is answered, fails or times out. */
    private final class Exchange {
        final String path;
        final String[] headers;
        final byte[] body;
        final CompletableFuture<Response> result = new CompletableFuture<>();
        Timeout timeout;
        int streamId; // HTTP/2, on the event loop
        volatile Origin origin;
        volatile Connection connection;
        // response, filled on the connection's event loop
        int status;
        String location;
        String retryAfter;
        ByteArrayOutputStream responseBody;

        Exchange(String path, String[] headers, byte[] body) {
            this.path = path;
            this.headers = headers;
            this.body = body;
        }

        void append(ByteBuf data) {
            int room = MAX_BODY - (responseBody == null ? 0 : responseBody.size());
            int n = Math.min(room, data.readableBytes());
            if (n <= 0) return;
            if (responseBody == null) responseBody = new ByteArrayOutputStream(Math.min(n, 512));
            try {
                data.getBytes(data.readerIndex(), responseBody, n);
            } catch (IOException impossible) {
                throw new java.io.UncheckedIOException(impossible);
            }
        }

        void succeed(String protocol) {
            timeout.cancel();
            result.complete(new Response(status, protocol, location, retryAfter,
                    responseBody == null ? NO_BODY : responseBody.toByteArray()));
        }

        void fail(Throwable error) {
            timeout.cancel();
            result.completeExceptionally(error instanceof RequestFailure f ? f : new RequestFailure(describe(error)));
        }

        /** On the timer thread: fails the request now, then frees what it holds. */
        void timedOut() {
            if (!result.completeExceptionally(new RequestTimeout())) return;
            Connection c = connection;
            if (c != null) {
                try {
                    c.channel.eventLoop().execute(() -> c.abandon(this));
                } catch (RuntimeException shuttingDown) {
                    // the client is closing: the connection goes anyway
                }
            } else {
                Origin o = origin;
                if (o != null) o.forget(this);
            }
        }
    }

    /**
     * The connections to one push-service origin and the requests waiting for a slot on them.
     * Guarded by its own monitor; network work happens outside it.
     */
    private final class Origin {
        final String key;
        final String scheme;
        final String host;
        final int port;
        final boolean secure;
        final String authority;
        final List<Connection> connections = new ArrayList<>();
        final ArrayDeque<Exchange> waiting = new ArrayDeque<>();
        Protocol protocol; // null until the first connection has found out
        boolean retired;

        Origin(String key, URI endpoint) {
            this.scheme = endpoint.getScheme().toLowerCase(Locale.ROOT);
            this.secure = scheme.equals("https");
            String h = endpoint.getHost();
            this.host = h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
            this.port = endpoint.getPort() != -1 ? endpoint.getPort() : secure ? 443 : 80;
            this.authority = endpoint.getPort() == -1 ? h : h + ":" + endpoint.getPort();
            this.key = key;
        }

        /** False when this pool was retired and the caller must take a fresh one. */
        boolean submit(Exchange exchange) {
            Connection target;
            synchronized (this) {
                if (retired) return false;
                exchange.origin = this;
                target = available();
                if (target != null) {
                    target.active++;
                } else {
                    waiting.add(exchange);
                    openIfNeeded();
                }
            }
            if (target != null) target.send(exchange);
            return true;
        }

        /** A ready connection with a free slot; the first one, so load stays on few connections. */
        private Connection available() {
            for (Connection c : connections) {
                if (c.ready && !c.draining && c.active < c.capacity) return c;
            }
            return null;
        }

        /** Under the monitor: opens a connection when waiting requests need one and the limit allows. */
        private void openIfNeeded() {
            if (waiting.isEmpty() || closed) return;
            int opening = 0;
            int usable = 0;
            for (Connection c : connections) {
                if (!c.ready) opening++;
                else if (!c.draining) usable++;
            }
            boolean open;
            if (protocol == null) {
                open = opening == 0; // one connection finds out which protocol the server speaks
            } else if (protocol == Protocol.HTTP2) {
                open = opening == 0 && usable + opening < MAX_HTTP2_CONNECTIONS;
            } else {
                open = opening < waiting.size() && usable + opening < MAX_HTTP1_CONNECTIONS;
            }
            if (open) {
                Connection c = new Connection(this);
                connections.add(c);
                c.open();
            }
        }

        /** A connection is ready: hands it waiting requests up to its capacity. */
        void ready(Connection c, Protocol learned) {
            List<Exchange> batch = new ArrayList<>();
            synchronized (this) {
                protocol = learned;
                c.ready = true;
                while (c.active < c.capacity && !waiting.isEmpty()) {
                    batch.add(waiting.poll());
                    c.active++;
                }
                openIfNeeded();
            }
            for (Exchange e : batch) c.send(e);
        }

        /** A request finished on {@code c}: the slot goes to the next waiting request, if any. */
        void finished(Connection c) {
            Exchange next = null;
            boolean closeNow;
            synchronized (this) {
                c.active--;
                if (c.ready && !c.draining && c.active < c.capacity) {
                    next = waiting.poll();
                    if (next != null) c.active++;
                }
                closeNow = c.draining && c.active == 0;
            }
            if (next != null) c.send(next);
            if (closeNow) c.channel.close();
        }

        /** The server allows a different number of streams now (a new SETTINGS). */
        void capacity(Connection c, int streams) {
            List<Exchange> batch = new ArrayList<>();
            synchronized (this) {
                c.capacity = streams;
                while (c.ready && !c.draining && c.active < c.capacity && !waiting.isEmpty()) {
                    batch.add(waiting.poll());
                    c.active++;
                }
            }
            for (Exchange e : batch) c.send(e);
        }

        /** {@code c} takes no new requests (GOAWAY, stream ids used up, Connection: close). */
        void drain(Connection c) {
            boolean closeNow;
            synchronized (this) {
                c.draining = true;
                closeNow = c.active == 0;
                openIfNeeded();
            }
            if (closeNow) c.channel.close();
        }

        /** {@code c} closed or could not be set up; {@code error} is why (null: closed normally). */
        void gone(Connection c, Throwable error, boolean speaksHttp1) {
            List<Exchange> failed = List.of();
            synchronized (this) {
                connections.remove(c);
                if (speaksHttp1) {
                    protocol = Protocol.HTTP1;
                } else if (!c.ready && connections.stream().noneMatch(other -> other.ready && !other.draining)
                        && connections.stream().allMatch(other -> other.ready)) {
                    // Nothing usable is left or on its way: the waiting requests fail rather than wait for ever.
                    failed = new ArrayList<>(waiting);
                    waiting.clear();
                }
                openIfNeeded();
                if (connections.isEmpty() && waiting.isEmpty()) {
                    retired = true;
                    origins.remove(key, this);
                }
            }
            if (!failed.isEmpty()) {
                Throwable why = error != null ? error : new ClosedChannelException();
                for (Exchange e : failed) e.fail(why);
            }
        }

        /** A waiting request timed out. */
        synchronized void forget(Exchange exchange) {
            waiting.remove(exchange);
        }
    }

    /**
     * One connection: set up (TCP, TLS and ALPN, or the h2c probe), then HTTP/2 or HTTP/1.1.
     * {@code ready}, {@code draining}, {@code active} and {@code capacity} are guarded by the
     * origin's monitor; the rest belongs to the channel's event loop.
     */
    private final class Connection {
        final Origin origin;
        final Queue<Exchange> outbox = new ConcurrentLinkedQueue<>();
        final AtomicBoolean drainScheduled = new AtomicBoolean();
        volatile Channel channel;
        boolean ready;
        boolean draining;
        int active;
        int capacity = 1;
        // event loop only
        Http2Side http2;
        Http1Side http1;
        boolean reportedGone;

        Connection(Origin origin) {
            this.origin = origin;
        }

        void open() {
            // Names are resolved on a virtual thread: a slow DNS answer must not stall an event loop.
            Thread.ofVirtual().name("webpush-connect").start(() -> {
                InetSocketAddress address;
                try {
                    address = new InetSocketAddress(InetAddress.getByName(origin.host), origin.port);
                } catch (UnknownHostException e) {
                    gone(e, false);
                    return;
                } catch (RuntimeException e) {
                    gone(e, false);
                    return;
                }
                ChannelFuture connect;
                try {
                    connect = bootstrap.clone().handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            channel = ch;
                            channels.add(ch);
                            setUp(ch);
                        }
                    }).connect(address);
                } catch (RuntimeException e) { // the event loops are shutting down
                    gone(e, false);
                    return;
                }
                connect.addListener(f -> {
                    if (!f.isSuccess()) gone(f.cause(), false);
                });
            });
        }

        private void setUp(SocketChannel ch) {
            ChannelPipeline p = ch.pipeline();
            p.addLast("idle", new IdleStateHandler(0, 0, IDLE_CLOSE.toSeconds(), TimeUnit.SECONDS));
            if (origin.secure) {
                SslHandler ssl = tls.newHandler(ch.alloc(), origin.host, origin.port);
                ssl.setHandshakeTimeoutMillis(connectTimeoutMillis);
                p.addLast("tls", ssl);
                p.addLast("alpn", new ApplicationProtocolNegotiationHandler(ApplicationProtocolNames.HTTP_1_1) {
                    @Override
                    protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
                        if (ApplicationProtocolNames.HTTP_2.equals(protocol)) startHttp2(ctx.pipeline(), "h2");
                        else startHttp1(ctx.pipeline(), "http/1.1");
                    }

                    @Override
                    protected void handshakeFailure(ChannelHandlerContext ctx, Throwable cause) {
                        gone(cause, false);
                        ctx.close();
                    }
                });
            } else if (origin.protocol == Protocol.HTTP1) {
                p.addLast("ready", new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        ctx.pipeline().remove(this);
                        startHttp1(ctx.pipeline(), "http/1.1");
                        ctx.fireChannelActive();
                    }
                });
            } else {
                p.addLast("probe", new Http2Probe());
                startHttp2(p, "h2c");
            }
            p.addLast("events", new ChannelDuplexHandler() {
                @Override
                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                    if (evt instanceof IdleStateEvent idle && idle.state() == IdleState.ALL_IDLE) {
                        boolean idleNow;
                        synchronized (origin) {
                            idleNow = active == 0;
                            if (idleNow) draining = true;
                        }
                        if (idleNow) ctx.close();
                    }
                    ctx.fireUserEventTriggered(evt);
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                    closed(null);
                    ctx.fireChannelInactive();
                }

                @Override
                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                    closed(cause);
                    ctx.close();
                }
            });
            ch.eventLoop().schedule(() -> {
                if (!isReady()) {
                    gone(new RequestFailure("connection set-up timed out"), false);
                    ch.close();
                }
            }, connectTimeoutMillis, TimeUnit.MILLISECONDS);
        }

        private boolean isReady() {
            synchronized (origin) {
                return ready;
            }
        }

        private void startHttp2(ChannelPipeline p, String protocol) {
            http2 = new Http2Side(this, protocol);
            Http2Connection connection = new DefaultHttp2Connection(false);
            connection.addListener(http2);
            Http2ConnectionHandler handler = new Http2ConnectionHandlerBuilder()
                    .connection(connection)
                    .frameListener(http2.listener)
                    .initialSettings(Http2Settings.defaultSettings().pushEnabled(false))
                    .build();
            http2.handler = handler;
            String before = p.get("events") != null ? "events" : null;
            if (before != null) {
                p.addBefore(before, "http2", handler);
                p.addBefore(before, "requests", http2);
            } else {
                p.addLast("http2", handler);
                p.addLast("requests", http2);
            }
        }

        private void startHttp1(ChannelPipeline p, String protocol) {
            http1 = new Http1Side(this, protocol);
            String before = p.get("events") != null ? "events" : null;
            if (before != null) {
                p.addBefore(before, "http1", new HttpClientCodec());
                p.addBefore(before, "requests", http1);
            } else {
                p.addLast("http1", new HttpClientCodec());
                p.addLast("requests", http1);
            }
            origin.ready(this, Protocol.HTTP1);
        }

        /** Any thread: queue for the event loop; one flush per batch. */
        void send(Exchange exchange) {
            exchange.connection = this;
            outbox.offer(exchange);
            if (drainScheduled.compareAndSet(false, true)) channel.eventLoop().execute(this::drainOutbox);
        }

        private void drainOutbox() {
            drainScheduled.set(false);
            boolean wrote = false;
            for (Exchange e = outbox.poll(); e != null; e = outbox.poll()) {
                if (e.result.isDone()) { // timed out while queued
                    origin.finished(this);
                } else if (!channel.isActive()) {
                    e.fail(new ClosedChannelException());
                    origin.finished(this);
                } else if (http2 != null) {
                    wrote |= http2.write(e);
                } else {
                    wrote |= http1.write(e);
                }
            }
            if (wrote) {
                if (http2 != null) http2.flush();
                else channel.flush();
            }
        }

        /** On the event loop: a timed-out request gives back its stream or connection. */
        void abandon(Exchange exchange) {
            if (http2 != null) http2.abandon(exchange);
            else if (http1 != null) http1.abandon(exchange);
        }

        /** On the event loop: the channel closed or failed; what was sent on it fails. */
        private void closed(Throwable cause) {
            synchronized (origin) {
                draining = true; // freed slots must not take waiting requests
            }
            if (http2 != null) http2.failAll(cause);
            if (http1 != null) http1.failAll(cause);
            for (Exchange e = outbox.poll(); e != null; e = outbox.poll()) e.fail(cause != null ? cause : new ClosedChannelException());
            gone(cause, false);
        }

        void gone(Throwable error, boolean speaksHttp1) {
            synchronized (origin) {
                if (reportedGone) return;
                reportedGone = true;
            }
            origin.gone(this, error, speaksHttp1);
        }
    }

    /**
     * Reads the server's first bytes on an h2c connection: an HTTP/2 server starts with a small
     * SETTINGS frame (first byte 0), an HTTP/1.x server answers the preface with "HTTP/1.1 400".
     */
    private final class Http2Probe extends ByteToMessageDecoder {
        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            if (!in.isReadable()) return;
            if (in.getByte(in.readerIndex()) == 0) {
                ctx.pipeline().remove(this);
                return;
            }
            Connection c = ((Http2Side) ctx.pipeline().get("requests")).connection;
            in.skipBytes(in.readableBytes());
            c.gone(null, true);
            ctx.close();
        }
    }

    /** HTTP/2 on one connection: streams by id, answers by frame listener. */
    private final class Http2Side extends ChannelInboundHandlerAdapter implements Http2Connection.Listener {
        final Connection connection;
        final String protocol;
        final IntObjectHashMap<Exchange> streams = new IntObjectHashMap<>();
        Http2ConnectionHandler handler;
        ChannelHandlerContext ctx;
        ChannelHandlerContext h2;
        boolean settled;

        final Http2EventAdapter listener = new Http2EventAdapter() {
            @Override
            public void onSettingsRead(ChannelHandlerContext ignored, Http2Settings settings) {
                Long max = settings.maxConcurrentStreams();
                int streamsAllowed = max == null ? Integer.MAX_VALUE : (int) Math.min(Integer.MAX_VALUE, max);
                if (!settled) {
                    settled = true;
                    connection.capacity = streamsAllowed; // not yet visible to others: not ready
                    connection.origin.ready(connection, Protocol.HTTP2);
                } else if (max != null) {
                    connection.origin.capacity(connection, streamsAllowed);
                }
            }

            @Override
            public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers, int padding,
                    boolean endOfStream) {
                Exchange e = streams.get(streamId);
                if (e == null) return;
                CharSequence status = headers.status();
                if (status != null) {
                    int code = parseStatus(status);
                    if (code >= 100 && code < 200 && !endOfStream) return; // informational
                    e.status = code;
                    CharSequence location = headers.get(HttpHeaderNames.LOCATION);
                    CharSequence retry = headers.get(HttpHeaderNames.RETRY_AFTER);
                    e.location = location == null ? null : location.toString();
                    e.retryAfter = retry == null ? null : retry.toString();
                }
                if (endOfStream) finish(streamId);
            }

            @Override
            public void onHeadersRead(ChannelHandlerContext c, int streamId, Http2Headers headers, int streamDependency,
                    short weight, boolean exclusive, int padding, boolean endOfStream) {
                onHeadersRead(c, streamId, headers, padding, endOfStream);
            }

            @Override
            public int onDataRead(ChannelHandlerContext c, int streamId, ByteBuf data, int padding, boolean endOfStream) {
                int processed = data.readableBytes() + padding;
                Exchange e = streams.get(streamId);
                if (e != null) {
                    e.append(data);
                    if (endOfStream) finish(streamId);
                }
                return processed;
            }

            @Override
            public void onRstStreamRead(ChannelHandlerContext c, int streamId, long errorCode) {
                Exchange e = streams.remove(streamId);
                if (e != null) {
                    Http2Error error = Http2Error.valueOf(errorCode);
                    e.fail(new RequestFailure("push service reset the request ("
                            + (error == null ? "error " + errorCode : error.name()) + ")"));
                    connection.origin.finished(connection);
                }
            }

            @Override
            public void onGoAwayRead(ChannelHandlerContext c, int lastStreamId, long errorCode, ByteBuf debugData) {
                connection.origin.drain(connection);
            }
        };

        Http2Side(Connection connection, String protocol) {
            this.connection = connection;
            this.protocol = protocol;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
            this.h2 = ctx.pipeline().context(handler);
        }

        boolean write(Exchange e) {
            Http2Connection.Endpoint<?> local = handler.connection().local();
            int id = local.canOpenStream() ? local.incrementAndGetNextStreamId() : 0;
            if (id <= 0) {
                // Stream ids used up (this connection takes no more), or the server lowered its limit
                // just now: the request goes back to the origin for another slot.
                if (id < 0) connection.origin.drain(connection);
                connection.origin.finished(connection);
                e.connection = null;
                if (!connection.origin.submit(e)) e.fail(new ClosedChannelException());
                return false;
            }
            Http2Headers headers = new DefaultHttp2Headers(false, e.headers.length / 2 + 5)
                    .method(POST).scheme(connection.origin.scheme).authority(connection.origin.authority).path(e.path);
            for (int i = 0; i < e.headers.length; i += 2) headers.add(e.headers[i], e.headers[i + 1]);
            headers.setInt(CONTENT_LENGTH, e.body.length);
            streams.put(id, e);
            e.streamId = id;
            handler.encoder().writeHeaders(h2, id, headers, 0, false, h2.newPromise()).addListener(f -> {
                if (!f.isSuccess()) fail(id, f.cause());
            });
            handler.encoder().writeData(h2, id, Unpooled.wrappedBuffer(e.body), 0, true, h2.voidPromise());
            return true;
        }

        void flush() {
            ctx.flush(); // passes through the HTTP/2 handler, which writes what flow control holds
        }

        private void finish(int streamId) {
            Exchange e = streams.remove(streamId);
            if (e == null) return;
            e.succeed(protocol);
            connection.origin.finished(connection);
        }

        private void fail(int streamId, Throwable cause) {
            Exchange e = streams.remove(streamId);
            if (e == null) return;
            e.fail(cause);
            connection.origin.finished(connection);
        }

        void abandon(Exchange exchange) {
            if (exchange.streamId == 0 || streams.get(exchange.streamId) != exchange) return;
            streams.remove(exchange.streamId);
            handler.resetStream(h2, exchange.streamId, Http2Error.CANCEL.code(), h2.newPromise());
            flush();
            connection.origin.finished(connection);
        }

        void failAll(Throwable cause) {
            if (streams.isEmpty()) return;
            List<Exchange> open = new ArrayList<>(streams.values());
            streams.clear();
            for (Exchange e : open) {
                e.fail(cause != null ? cause : new RequestFailure("connection closed before the answer"));
                connection.origin.finished(connection);
            }
        }

        @Override
        public void onStreamClosed(Http2Stream stream) {
            // Closed without a complete answer: refused by GOAWAY, or the connection went away.
            fail(stream.id(), new RequestFailure("connection closed before the answer"));
        }

        @Override
        public void onStreamAdded(Http2Stream stream) {
        }

        @Override
        public void onStreamActive(Http2Stream stream) {
        }

        @Override
        public void onStreamHalfClosed(Http2Stream stream) {
        }

        @Override
        public void onStreamRemoved(Http2Stream stream) {
        }

        @Override
        public void onGoAwaySent(int lastStreamId, long errorCode, ByteBuf debugData) {
        }

        @Override
        public void onGoAwayReceived(int lastStreamId, long errorCode, ByteBuf debugData) {
        }
    }

    /** HTTP/1.1 on one connection: one request at a time. */
    private final class Http1Side extends ChannelInboundHandlerAdapter {
        final Connection connection;
        final String protocol;
        Exchange current;
        boolean keepAlive;

        Http1Side(Connection connection, String protocol) {
            this.connection = connection;
            this.protocol = protocol;
        }

        boolean write(Exchange e) {
            current = e;
            FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, e.path,
                    Unpooled.wrappedBuffer(e.body));
            request.headers().set(HttpHeaderNames.HOST, connection.origin.authority);
            for (int i = 0; i < e.headers.length; i += 2) request.headers().add(e.headers[i], e.headers[i + 1]);
            request.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, e.body.length);
            connection.channel.write(request);
            return true;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                Exchange e = current;
                if (e == null) return;
                if (msg instanceof HttpResponse response) {
                    int code = response.status().code();
                    if (code >= 100 && code < 200) return;
                    e.status = code;
                    e.location = response.headers().get(HttpHeaderNames.LOCATION);
                    e.retryAfter = response.headers().get(HttpHeaderNames.RETRY_AFTER);
                    keepAlive = HttpUtil.isKeepAlive(response);
                }
                if (msg instanceof HttpContent content) {
                    if (e.status != 0) e.append(content.content());
                    if (msg instanceof LastHttpContent && e.status != 0) {
                        current = null;
                        if (!keepAlive) connection.origin.drain(connection);
                        e.succeed(protocol);
                        connection.origin.finished(connection);
                    }
                }
            } finally {
                io.netty.util.ReferenceCountUtil.release(msg);
            }
        }

        void abandon(Exchange exchange) {
            if (current == exchange) {
                // HTTP/1.1 cannot cancel one request: the connection goes.
                current = null;
                connection.origin.drain(connection);
                connection.origin.finished(connection);
                connection.channel.close();
            }
        }

        void failAll(Throwable cause) {
            Exchange e = current;
            current = null;
            if (e != null) {
                e.fail(cause != null ? cause : new RequestFailure("connection closed before the answer"));
                connection.origin.finished(connection);
            }
        }
    }

    private static int parseStatus(CharSequence status) {
        int code = 0;
        for (int i = 0; i < status.length(); i++) {
            char c = status.charAt(i);
            if (c < '0' || c > '9') return 0;
            code = code * 10 + (c - '0');
        }
        return code;
    }
}
