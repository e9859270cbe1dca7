package dev.pushservice.support;

import dev.pushservice.delivery.apns.TestCertificates;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2PingFrame;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.resources.LoopResources;

/**
 * Reactor Netty's {@link HttpServer} on loopback, as the local protocol peers (FCM, Web Push) use
 * it: the peer says what to answer to a {@link Request}; this class does the protocols and keeps
 * the connections at hand.
 *
 * <p>Protocols: cleartext HTTP/2 by prior knowledge or by the HTTP/1.1 {@code Upgrade: h2c}, and
 * plain HTTP/1.1; or, {@linkplain Builder#tls() with TLS} (a certificate for 127.0.0.1 signed by
 * {@link TestCertificates#shared()}'s CA), ALPN {@code h2} or {@code http/1.1}. An
 * {@linkplain Builder#http1Only() HTTP/1.1-only} server offers only {@code http/1.1} and answers
 * the HTTP/2 preface with a 400, as an old server does. HTTP/2 connections advertise
 * {@link Builder#maxConcurrentStreams} streams.
 *
 * <p>{@link #closeConnections()} closes the open connections as a restarting server does (HTTP/2
 * ones with a GOAWAY, letting the streams already accepted finish: Reactor Netty turns this
 * graceful shutdown on when the server has a channel group); {@link #dropConnections()} drops them
 * without a word. Thread-safe.
 */
public final class LocalHttpServer implements AutoCloseable {

    /**
     * One request, whichever protocol carried it. {@code protocol} is {@code h2} (HTTP/2 over TLS),
     * {@code h2c} (cleartext HTTP/2) or {@code http/1.1}; header names are in lower case; the path
     * has no query; {@code arrivedNanos}: {@link System#nanoTime()} when its headers reached the server.
     */
    public record Request(String protocol, boolean tls, String method, String path, Map<String, String> headers,
            byte[] body, long arrivedNanos) {
        public String header(String name) {
            return headers.get(name);
        }
    }

    /** An answer; a null {@code body} sends none. */
    public record Response(int status, Map<String, String> headers, String body) {
    }

    /** Shared by every peer in the JVM: a server that owns its event loops waits a quiet period on shutdown. */
    private static final LoopResources LOOPS = LoopResources.create("local-peer", 2, true);
    private static final byte[] NO_BODY = new byte[0];
    private static final long GOAWAY_PING = 0x60A11A1L;

    private final boolean tls;
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final AtomicLong accepted = new AtomicLong();
    private final DisposableServer server;

    private LocalHttpServer(Builder options, Function<Request, Mono<Response>> handler) {
        this.tls = options.tls;
        HttpServer http = HttpServer.create()
                .runOn(LOOPS)
                .host("127.0.0.1")
                .port(options.port)
                .http2Settings(settings -> settings.maxConcurrentStreams(options.maxConcurrentStreams))
                // The JDK HttpClient upgrades to h2c on a POST with its body; Reactor Netty refuses bodies there by default.
                .httpRequestDecoder(decoder -> decoder.h2cMaxContentLength(1 << 20))
                // Streams and connections; having a group is what makes closing an HTTP/2 connection graceful.
                .channelGroup(new DefaultChannelGroup(GlobalEventExecutor.INSTANCE))
                .doOnChannelInit((observer, channel, address) -> {
                    accepted.incrementAndGet();
                    connections.add(channel);
                })
                .handle((request, response) -> {
                    long arrived = System.nanoTime(); // its headers are in; the body may still be on its way
                    return request.receive().aggregate().asByteArray().defaultIfEmpty(NO_BODY)
                            .flatMap(body -> handler.apply(request(request, body, arrived)))
                            .flatMap(answer -> write(response, answer));
                });
        if (tls) {
            TestCertificates pki = TestCertificates.shared();
            http = options.http2
                    ? http.protocol(HttpProtocol.H2, HttpProtocol.HTTP11).secure(spec -> spec.sslContext(
                            Http2SslContextSpec.forServer(pki.serverKeys.getPrivate(), pki.server, pki.ca)))
                    : http.protocol(HttpProtocol.HTTP11).secure(spec -> spec.sslContext(
                            Http11SslContextSpec.forServer(pki.serverKeys.getPrivate(), pki.server, pki.ca)));
        } else {
            http = options.http2 ? http.protocol(HttpProtocol.H2C, HttpProtocol.HTTP11) : http.protocol(HttpProtocol.HTTP11);
        }
        this.server = http.bindNow();
    }

    public static Builder builder() {
        return new Builder();
    }

    public int port() {
        return server.port();
    }

    /** TCP connections accepted so far. */
    public long connectionsAccepted() {
        return accepted.get();
    }

    /**
     * Closes every open connection as a restarting server does: an HTTP/2 one gets a GOAWAY, finishes
     * the streams it has accepted and then closes; an HTTP/1.1 one closes at once. Returns once each
     * HTTP/2 client has read its GOAWAY (a PING written after it came back acknowledged, and frames
     * are read in order), so a request sent from then on cannot go to a closing connection.
     */
    public void closeConnections() {
        List<CompletableFuture<Void>> goAwaysSeen = new ArrayList<>();
        for (Channel c : connections) {
            if (c.pipeline().get(Http2FrameCodec.class) == null) {
                c.close();
                continue;
            }
            CompletableFuture<Void> seen = new CompletableFuture<>();
            goAwaysSeen.add(seen);
            c.closeFuture().addListener(f -> seen.complete(null));
            c.eventLoop().execute(() -> {
                c.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        if (msg instanceof Http2PingFrame ping && ping.ack() && ping.content() == GOAWAY_PING) {
                            seen.complete(null);
                        }
                        ctx.fireChannelRead(msg);
                    }
                });
                c.close(); // the codec sends GOAWAY and closes when the accepted streams are done
                c.writeAndFlush(new DefaultHttp2PingFrame(GOAWAY_PING));
            });
        }
        CompletableFuture.allOf(goAwaysSeen.toArray(CompletableFuture[]::new)).orTimeout(10, TimeUnit.SECONDS).join();
    }

    /** Drops every open connection abruptly (no GOAWAY, no answers), as a crashed server or network would. */
    public void dropConnections() {
        for (Channel c : connections) {
            c.eventLoop().execute(() -> c.unsafe().closeForcibly());
        }
    }

    /** Stops listening, lets the requests in flight finish for up to 5 s, then drops what is left. */
    @Override
    public void close() {
        try {
            server.disposeNow(Duration.ofSeconds(5));
        } catch (IllegalStateException stillBusy) {
            // a request still unanswered after 5 s: dropped below, as a stopping test peer may
        }
        dropConnections();
    }

    private Request request(HttpServerRequest request, byte[] body, long arrivedNanos) {
        String protocol = request.version().majorVersion() == 2 ? (tls ? "h2" : "h2c") : "http/1.1";
        Map<String, String> headers = new HashMap<>();
        request.requestHeaders().forEach(h -> headers.putIfAbsent(h.getKey().toLowerCase(Locale.ROOT), h.getValue()));
        return new Request(protocol, tls, request.method().name(), request.fullPath(), Map.copyOf(headers), body, arrivedNanos);
    }

    private static Mono<Void> write(HttpServerResponse response, Response answer) {
        response.status(answer.status());
        answer.headers().forEach(response::header);
        return answer.body() == null ? response.send() : response.sendString(Mono.just(answer.body())).then();
    }

    /** How to start one; {@link #start} binds it. */
    public static final class Builder {
        private int port;
        private boolean tls;
        private boolean http2 = true;
        private int maxConcurrentStreams = 100;

        private Builder() {
        }

        /** The loopback port; 0, the default, picks a free one. */
        public Builder port(int port) {
            this.port = port;
            return this;
        }

        public Builder tls() {
            this.tls = true;
            return this;
        }

        public Builder http1Only() {
            this.http2 = false;
            return this;
        }

        /** {@code SETTINGS_MAX_CONCURRENT_STREAMS} of every HTTP/2 connection; 100 by default. */
        public Builder maxConcurrentStreams(int streams) {
            this.maxConcurrentStreams = streams;
            return this;
        }

        /** Binds the server; {@code handler} may answer at once or later (a slow or held answer). */
        public LocalHttpServer start(Function<Request, Mono<Response>> handler) {
            return new LocalHttpServer(this, handler);
        }
    }
}
