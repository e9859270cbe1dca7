package dev.pushservice.webhooks;

import com.standardwebhooks.Webhook;
import com.standardwebhooks.exceptions.WebhookSigningException;
import dev.pushservice.delivery.http.RetryAfter;
import dev.pushservice.platform.crypto.TrustedCertificates;
import dev.pushservice.platform.net.TargetAddresses;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufMono;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

/**
 * Sends one signed delivery attempt. Its own Reactor Netty client, connection pool and event loop
 * (never the push providers'), HTTP/1.1, redirects not followed, every attempt (connect, TLS
 * handshake, request and the whole answer) bounded by {@link WebhookProperties#timeout()}, addresses
 * checked where they are resolved ({@link TargetAddresses#resolverGroup}). TLS verifies the chain
 * against the JVM's trusted CAs, plus {@link WebhookProperties#trustedCaFile()} when set, and the
 * host name. Thread-safe; {@link #close} on shutdown.
 *
 * <p>Signing follows Standard Webhooks: {@code webhook-signature} holds {@code v1,<base64
 * HMAC-SHA256 of "id.timestamp.body">} for the current secret and, during a rotation's grace
 * period, a second one for the previous secret, space-separated. The signature is computed by the
 * official {@code com.standardwebhooks} library.
 */
final class WebhookSender implements AutoCloseable {

    /** What one attempt came to. A {@code status} of 0 is a transport failure described by {@code error}. */
    record Answer(int status, Duration retryAfter, String error, long latencyMillis) {
    }

    private final HttpClient client;
    private final LoopResources loops;
    private final ConnectionProvider pool;
    private final Duration timeout;
    private final Clock clock;
    private final boolean allowInsecure;

    WebhookSender(WebhookProperties properties, Clock clock) {
        this.allowInsecure = properties.allowInsecure();
        this.timeout = properties.timeout();
        this.clock = clock;
        this.loops = LoopResources.create("webhooks-io", 1, true);
        this.pool = ConnectionProvider.builder("webhooks").maxConnections(properties.maxInFlight())
                .pendingAcquireMaxCount(-1).maxIdleTime(Duration.ofSeconds(30)).build();
        Http11SslContextSpec tls = Http11SslContextSpec.forClient();
        if (properties.trustedCaFile() != null) {
            List<X509Certificate> trusted = TrustedCertificates.withDefaults(properties.trustedCaFile(), "push.webhooks.trusted-ca-file");
            tls = tls.configure(builder -> builder.trustManager(trusted));
        }
        Http11SslContextSpec sslContext = tls;
        this.client = HttpClient.create(pool).runOn(loops)
                .resolver(TargetAddresses.resolverGroup(properties.allowInsecure()))
                .secure(spec -> spec.sslContext(sslContext).handshakeTimeout(timeout))
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) timeout.toMillis())
                .responseTimeout(timeout)
                .followRedirect(false)
                .compress(false);
    }

    /** Signature header value for {@code id}, {@code timestamp} and {@code body} by each secret given. */
    static String signature(String id, long timestamp, String body, List<String> secrets) {
        StringBuilder out = new StringBuilder();
        for (String secret : secrets) {
            try {
                if (!out.isEmpty()) out.append(' ');
                out.append(new Webhook(secret).sign(id, timestamp, body));
            } catch (WebhookSigningException e) {
                throw new IllegalStateException("HMAC-SHA256 unavailable", e);
            }
        }
        return out.toString();
    }

    /** One attempt; blocks the calling (virtual) thread for at most about the timeout. */
    Answer send(String url, UUID deliveryId, String body, List<String> secrets) {
        Instant now = clock.instant();
        long timestamp = now.getEpochSecond();
        String id = deliveryId.toString();
        String signature = signature(id, timestamp, body, secrets);
        long started = System.nanoTime();
        if (!allowInsecure && refusedLiteral(url)) return new Answer(0, null, "address_refused", 0);
        try {
            Answer answer = client
                    .headers(h -> h.set(HttpHeaderNames.CONTENT_TYPE, "application/json")
                            .set(HttpHeaderNames.USER_AGENT, "push-service-webhooks")
                            .set("webhook-id", id)
                            .set("webhook-timestamp", Long.toString(timestamp))
                            .set("webhook-signature", signature))
                    .post().uri(url)
                    .send(ByteBufMono.fromString(Mono.just(body), StandardCharsets.UTF_8, io.netty.buffer.ByteBufAllocator.DEFAULT))
                    .response((response, content) -> content.then(Mono.fromSupplier(() -> new Answer(
                            response.status().code(),
                            RetryAfter.parse(response.responseHeaders().get("Retry-After"), clock.instant()),
                            null, millisSince(started)))))
                    .next()
                    .timeout(timeout.plusSeconds(1))
                    .block();
            return answer != null ? answer : new Answer(0, null, "no response", millisSince(started));
        } catch (RuntimeException e) {
            return new Answer(0, null, describe(e), millisSince(started));
        }
    }

    /** An address literal (never resolved, so never seen by the checking resolver) that must not be reached. */
    private static boolean refusedLiteral(String url) {
        String host;
        try {
            host = java.net.URI.create(url).getHost();
        } catch (IllegalArgumentException e) {
            return true;
        }
        if (host == null) return true;
        return TargetAddresses.refusedHost(host);
    }

    private static long millisSince(long started) {
        return Duration.ofNanos(System.nanoTime() - started).toMillis();
    }

    /** A transport failure as an operator can read it: the kind, never a URL's query or a secret. */
    private static String describe(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof TargetAddresses.ForbiddenAddress) return "address_refused";
            if (t instanceof java.util.concurrent.TimeoutException || t instanceof io.netty.handler.timeout.ReadTimeoutException
                    || t instanceof io.netty.channel.ConnectTimeoutException
                    || t instanceof io.netty.handler.ssl.SslHandshakeTimeoutException) {
                return "timeout";
            }
            if (t instanceof java.net.UnknownHostException) return "dns_failure";
            if (t instanceof java.net.ConnectException) return "connection_refused";
            if (t instanceof javax.net.ssl.SSLException) return tlsFailure(t);
        }
        return "connection_failed";
    }

    /**
     * Why a TLS handshake failed, as far as the JDK says: the endpoint's certificate does not chain to
     * a trusted CA, has expired, or does not name the host; anything else is {@code tls_failure}.
     */
    private static String tlsFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.security.cert.CertificateExpiredException) return "certificate_expired";
            if (t instanceof java.security.cert.CertPathBuilderException
                    || t instanceof java.security.cert.CertPathValidatorException) {
                return "certificate_untrusted";
            }
            if (t instanceof java.security.cert.CertificateException && t.getMessage() != null
                    && (t.getMessage().contains("subject alternative") || t.getMessage().contains("No name matching"))) {
                return "certificate_hostname_mismatch";
            }
        }
        return "tls_failure";
    }

    @Override
    public void close() {
        pool.disposeLater().block(Duration.ofSeconds(5));
        loops.disposeLater().block(Duration.ofSeconds(5));
    }
}
