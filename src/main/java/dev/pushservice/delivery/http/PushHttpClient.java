package dev.pushservice.delivery.http;

import dev.pushservice.platform.net.TargetAddresses;
import dev.pushservice.platform.rules.Priority;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.resolver.AddressResolverGroup;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLException;
import reactor.core.publisher.Mono;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.client.Http2AllocationStrategy;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.client.PrematureCloseException;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

/**
 * The HTTP client push requests go out on (FCM, Web Push): a thin facade over Reactor Netty's
 * {@link HttpClient}, which does the protocol work. HTTP/2 where the server offers it (ALPN
 * {@code h2} over TLS, as FCM, Mozilla's autopush and Apple's web push service do), HTTP/1.1
 * otherwise (ALPN {@code http/1.1} or no ALPN). Plain {@code http://} servers, which only local
 * testing uses, are spoken to in HTTP/2 by prior knowledge ({@code h2c}); one that answers the
 * HTTP/2 preface in HTTP/1.x is remembered and spoken to in HTTP/1.1 from then on (the request
 * that found out is sent again: the server never read it). Prior knowledge rather than the
 * {@code Upgrade: h2c} dance, because an upgrading connection takes no other request until the
 * first one is answered. Only {@code POST} is needed, so only {@code POST} is offered.
 *
 * <p>Each delivery lane ({@link Priority}) has its own connections: a pool per lane, per origin.
 * A bulk send that keeps hundreds of requests open at a slow push service fills only the bulk
 * lane's connections (and, at the server's stream limit, its pool's queue); a transactional push
 * to the same origin goes out at once on the transactional lane's own connection instead of
 * queueing behind them on a shared one. Connections are opened on first use, so a lane that sends
 * nothing to an origin holds none there. The lanes share the I/O threads.
 *
 * <p>Connections are pooled per origin (scheme, host, port) by Reactor Netty's HTTP/2 pool. HTTP/2
 * requests are multiplexed: a new connection is opened only when every open one has as many
 * streams as the server allows ({@code SETTINGS_MAX_CONCURRENT_STREAMS}; strict connection reuse),
 * up to {@link #MAX_CONNECTIONS} per lane; HTTP/1.1 connections carry one request at a time, up to the same
 * number. Requests beyond that wait in the pool's queue, which the caller must bound (the providers
 * let at most their {@code max-in-flight} requests exist at once). Connections idle for
 * {@link #IDLE_CLOSE} are closed; a connection that got a GOAWAY takes no new requests.
 *
 * <p>A request fails (the future completes exceptionally with a {@link RequestFailure} whose
 * message never names the endpoint) when it gets no answer within the request timeout (its HTTP/2
 * stream is reset, the connection kept; an HTTP/1.1 connection is closed), when its connection
 * cannot be opened or closes before the answer, or when the server resets its stream. Nothing is
 * retried here. Futures complete on a Netty I/O thread (or the timer's): continuations must not
 * block.
 *
 * <p>Names are resolved by the resolver given at construction: Web Push, whose endpoints come from
 * browsers through the public API, gives {@link TargetAddresses#resolverGroup}, and a request whose
 * host resolves to a forbidden address fails with {@link AddressRefused} before any connection is
 * opened; FCM, whose endpoint the operator configures, uses Reactor Netty's default. Address literals
 * are connected to without a lookup: the caller checks them first.
 *
 * <p>Thread-safe and long-lived (one per provider); {@link #close()} closes every connection.
 */
public final class PushHttpClient implements AutoCloseable {

    /** Connections per origin and lane: HTTP/2 ones opened only when the open ones have no stream to spare. */
    public static final int MAX_CONNECTIONS = 64;
    /** Connections with nothing to do for this long are closed. */
    public static final Duration IDLE_CLOSE = Duration.ofMinutes(2);
    /** How much of a response body is kept: answers are short (a message name, an error explanation). */
    public static final int MAX_BODY = 16 * 1024;

    private static final byte[] NO_BODY = new byte[0];
    /** "HTTP/" as Netty's hex dump of the first bytes of a server's answer shows it. */
    private static final String HTTP_IN_HEX = "485454502f";

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

    /**
     * The client's resolver refused the endpoint's addresses ({@link TargetAddresses.ForbiddenAddress}):
     * nothing was connected to, and the same name will be refused again.
     */
    public static final class AddressRefused extends RequestFailure {
        AddressRefused() {
            super("the host resolves to a loopback, private, link-local or reserved address");
        }
    }

    /** One lane's connections: its pool, and the pool's clients for each way of speaking. */
    private record LanePool(ConnectionProvider pool, HttpClient secure, HttpClient cleartext, HttpClient http1) {
    }

    private final LoopResources loops;
    private final Map<Priority, LanePool> lanes = new EnumMap<>(Priority.class);
    /** Cleartext origins (host:port) found to speak only HTTP/1.x. */
    private final Set<String> http1Only = ConcurrentHashMap.newKeySet();
    private final Duration requestTimeout;
    private volatile boolean closed;

    /**
     * @param name    names its threads ({@code <name>-io-*}) and connection pool
     * @param trusted CA certificates to trust instead of the JDK's default trust store (tests, local
     *                peers); null or empty for the default
     */
    public PushHttpClient(String name, Duration connectTimeout, Duration requestTimeout, List<X509Certificate> trusted) {
        this(name, connectTimeout, requestTimeout, trusted, null);
    }

    /**
     * @param resolver how host names become addresses, for every connection this client opens (a
     *                 {@link TargetAddresses#resolverGroup} where the endpoints are chosen by clients of
     *                 this service, so only checked addresses are connected to); null for Reactor
     *                 Netty's default, for endpoints the operator configured
     */
    public PushHttpClient(String name, Duration connectTimeout, Duration requestTimeout, List<X509Certificate> trusted,
            AddressResolverGroup<? extends SocketAddress> resolver) {
        this.requestTimeout = requestTimeout;
        this.loops = LoopResources.create(name + "-io", Math.min(2, Runtime.getRuntime().availableProcessors()), true);
        int connectMillis = (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis());
        Http2SslContextSpec tls = Http2SslContextSpec.forClient();
        if (trusted != null && !trusted.isEmpty()) {
            List<X509Certificate> certificates = List.copyOf(trusted);
            tls = tls.configure(builder -> builder.trustManager(certificates));
        }
        Http2SslContextSpec sslContext = tls;
        for (Priority lane : Priority.values()) {
            ConnectionProvider pool = ConnectionProvider.builder(name + "-" + lane.value())
                    .maxConnections(MAX_CONNECTIONS)
                    .allocationStrategy(Http2AllocationStrategy.builder()
                            .maxConnections(MAX_CONNECTIONS)
                            .minConnections(0)
                            .strictConnectionReuse(true)
                            .build())
                    .pendingAcquireMaxCount(-1) // bounded by the callers' max-in-flight
                    .pendingAcquireTimeout(requestTimeout.plus(connectTimeout))
                    .maxIdleTime(IDLE_CLOSE)
                    .evictInBackground(Duration.ofSeconds(30))
                    .build();
            HttpClient base = HttpClient.create(pool)
                    .runOn(loops, false)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectMillis)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .disableRetry(true);
            if (resolver != null) base = base.resolver(resolver);
            lanes.put(lane, new LanePool(pool,
                    base.protocol(HttpProtocol.H2, HttpProtocol.HTTP11)
                            .secure(spec -> spec.sslContext(sslContext).handshakeTimeout(connectTimeout)),
                    base.protocol(HttpProtocol.H2C),
                    base.protocol(HttpProtocol.HTTP11)));
        }
    }

    /**
     * POSTs {@code body} to {@code endpoint} (an absolute http or https URL) on {@code lane}'s connections.
     *
     * @param headers name/value pairs, names in lower case; {@code content-length}, {@code host} and
     *                the pseudo-headers are added here
     */
    public CompletableFuture<Response> post(Priority lane, URI endpoint, String[] headers, byte[] body) {
        return post(lane, endpoint, headers, body, null);
    }

    /**
     * As {@link #post(Priority, URI, String[], byte[])}; {@code written} (may be null) runs once the request
     * is written to its connection, or once it is known never to be (the exchange ended first): exactly once,
     * on a Netty I/O thread or the caller's. A cancel waits for it (delivery's {@code SendFence}).
     */
    public CompletableFuture<Response> post(Priority lane, URI endpoint, String[] headers, byte[] body, Runnable written) {
        Runnable out = written == null ? null : once(written);
        CompletableFuture<Response> answer = request(lane, endpoint, headers, body, out);
        if (out != null) answer.whenComplete((response, error) -> out.run());
        return answer;
    }

    /** {@code action}, run the first time the returned runnable is, never again. */
    private static Runnable once(Runnable action) {
        AtomicBoolean ran = new AtomicBoolean();
        return () -> {
            if (ran.compareAndSet(false, true)) action.run();
        };
    }

    private CompletableFuture<Response> request(Priority lane, URI endpoint, String[] headers, byte[] body, Runnable written) {
        if (closed) return CompletableFuture.failedFuture(new RequestFailure("client is closed"));
        LanePool clients = lanes.get(lane);
        HttpClient secure = clients.secure();
        HttpClient cleartext = clients.cleartext();
        HttpClient http1 = clients.http1();
        Mono<Response> exchange;
        if ("https".equalsIgnoreCase(endpoint.getScheme())) {
            exchange = exchange(secure, "h2", endpoint, headers, body, written);
        } else {
            String origin = endpoint.getHost().toLowerCase(Locale.ROOT) + ":" + endpoint.getPort();
            exchange = http1Only.contains(origin)
                    ? exchange(http1, null, endpoint, headers, body, written)
                    : exchange(cleartext, "h2c", endpoint, headers, body, written).onErrorResume(PushHttpClient::answeredInHttp1, e -> {
                        // The server read the HTTP/2 preface as a bad HTTP/1.x request and never saw this
                        // one, so sending it again in HTTP/1.1 cannot deliver it twice.
                        http1Only.add(origin);
                        return exchange(http1, null, endpoint, headers, body, written);
                    });
        }
        return exchange.timeout(requestTimeout).onErrorMap(PushHttpClient::describe).toFuture();
    }

    private static Mono<Response> exchange(HttpClient client, String http2Name, URI endpoint, String[] headers,
            byte[] body, Runnable written) {
        return client.request(HttpMethod.POST)
                .uri(endpoint)
                .send((request, out) -> {
                    for (int i = 0; i < headers.length; i += 2) request.addHeader(headers[i], headers[i + 1]);
                    request.header(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(body.length));
                    return written == null ? out.sendByteArray(Mono.just(body))
                            : out.sendByteArray(Mono.just(body)).then().doFinally(signal -> written.run());
                })
                .response((response, content) -> {
                    String protocol = response.version().majorVersion() == 2 ? http2Name : "http/1.1";
                    return content.asByteArray()
                            .collect(() -> new ByteArrayOutputStream(256), PushHttpClient::keep)
                            .map(kept -> new Response(response.status().code(), protocol,
                                    response.responseHeaders().get(HttpHeaderNames.LOCATION),
                                    response.responseHeaders().get(HttpHeaderNames.RETRY_AFTER),
                                    kept.size() == 0 ? NO_BODY : kept.toByteArray()));
                })
                .single();
    }

    /**
     * Whether an h2c attempt failed because the server answered the HTTP/2 preface in HTTP/1.x
     * (Netty's client reports the first bytes it got instead of a SETTINGS frame: "HTTP/").
     */
    private static boolean answeredInHttp1(Throwable error) {
        for (Throwable e = error; e != null && e.getCause() != e; e = e.getCause()) {
            if (e instanceof Http2Exception h && h.error() == Http2Error.PROTOCOL_ERROR && h.getMessage() != null
                    && h.getMessage().contains(HTTP_IN_HEX)) {
                return true;
            }
        }
        return false;
    }

    /** Closes every connection; requests not answered yet fail. */
    @Override
    public void close() {
        closed = true;
        Mono.when(lanes.values().stream().map(l -> l.pool().disposeLater()).toList()).block(Duration.ofSeconds(3));
        loops.disposeLater(Duration.ZERO, Duration.ofSeconds(2)).block(Duration.ofSeconds(3));
    }

    private static void keep(ByteArrayOutputStream kept, byte[] chunk) {
        int n = Math.min(MAX_BODY - kept.size(), chunk.length);
        if (n > 0) kept.write(chunk, 0, n);
    }

    /** A failure as a {@link RequestFailure} whose message names neither the endpoint nor a token. */
    private static RequestFailure describe(Throwable error) {
        if (error instanceof RequestFailure f) return f;
        if (error instanceof TimeoutException) return new RequestTimeout();
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof TargetAddresses.ForbiddenAddress) return new AddressRefused();
            if (e instanceof ConnectException) return new RequestFailure("connection refused");
            if (e instanceof UnknownHostException) return new RequestFailure("unknown host");
            if (e instanceof io.netty.channel.ConnectTimeoutException) return new RequestFailure("connect timed out");
            if (e instanceof SSLException) return new RequestFailure("TLS failed (" + e.getClass().getSimpleName() + ")");
            if (e instanceof Http2Exception.StreamException s) {
                return new RequestFailure("push service reset the request (" + s.error().name() + ")");
            }
            if (e instanceof PrematureCloseException || e instanceof ClosedChannelException) {
                return new RequestFailure("connection closed before the answer");
            }
            if (e.getCause() == e) break;
        }
        // Other exception messages may carry the address; only the type is told.
        return new RequestFailure(error.getClass().getSimpleName());
    }
}
