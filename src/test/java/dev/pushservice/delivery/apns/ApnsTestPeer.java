package dev.pushservice.delivery.apns;

import com.eatthepath.pushy.apns.server.MockApnsServer;
import com.eatthepath.pushy.apns.server.MockApnsServerBuilder;
import com.eatthepath.pushy.apns.server.MockApnsServerListener;
import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import com.eatthepath.pushy.apns.server.PushNotificationHandlerFactory;
import com.eatthepath.pushy.apns.server.RejectionReason;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLPeerUnverifiedException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A real APNs peer on loopback: Pushy's {@link MockApnsServer} over TLS with a certificate from
 * {@link TestCertificates}. What it receives is recorded ({@link #next()}); how it answers is
 * {@link #answer(PushNotificationHandler)} (default: accept everything).
 */
public final class ApnsTestPeer implements AutoCloseable {

    /** One request as the server saw it. {@code clientCertificate}: the TLS client's subject, or null. */
    public record Received(Map<String, String> headers, JsonNode payload, String clientCertificate) {
        public String header(String name) {
            return headers.get(name);
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /**
     * Shared by every peer in the JVM: a server that owns its event loops waits a 2 s quiet period
     * on shutdown, which would dominate each test.
     */
    @SuppressWarnings("deprecation") // MockApnsServer picks its channel class from NioEventLoopGroup
    private static final EventLoopGroup EVENT_LOOPS = new NioEventLoopGroup(2, new DefaultThreadFactory("apns-peer", true));

    private final BlockingQueue<Received> received = new LinkedBlockingQueue<>();
    private final MockApnsServer server;
    private final int port;
    private volatile PushNotificationHandler handler = (headers, payload) -> { };
    private volatile String clientSubject;
    private volatile PushNotificationHandlerFactory handlerFactory;

    private ApnsTestPeer(boolean requestClientCertificates, boolean record) throws Exception {
        TestCertificates pki = TestCertificates.shared();
        PushNotificationHandlerFactory factory = session -> {
            String subject = null;
            try {
                subject = ((X509Certificate) session.getPeerCertificates()[0]).getSubjectX500Principal().getName();
            } catch (SSLPeerUnverifiedException e) {
                // token auth: no client certificate
            }
            String connectionSubject = subject;
            return (headers, payload) -> {
                clientSubject = connectionSubject;
                PushNotificationHandlerFactory perConnection = handlerFactory;
                if (perConnection != null) {
                    perConnection.buildHandler(session).handlePushNotification(headers, payload);
                } else {
                    handler.handlePushNotification(headers, payload);
                }
            };
        };
        MockApnsServerBuilder builder = new MockApnsServerBuilder()
                .setServerCredentials(new X509Certificate[] {pki.server, pki.ca}, pki.serverKeys.getPrivate(), null)
                .setHandlerFactory(factory)
                .setEventLoopGroup(EVENT_LOOPS)
                .generateApnsUniqueId(false);
        if (requestClientCertificates) {
            builder.setTrustedClientCertificateChain(
                    new ByteArrayInputStream(TestCertificates.pem(pki.ca).getBytes(StandardCharsets.US_ASCII)));
        }
        if (record) {
            builder.setListener(new MockApnsServerListener() {
                @Override
                public void handlePushNotificationAccepted(Http2Headers headers, ByteBuf payload) {
                    record(headers, payload);
                }

                @Override
                public void handlePushNotificationRejected(Http2Headers headers, ByteBuf payload,
                                                           RejectionReason reason, Instant deviceTokenExpiration) {
                    record(headers, payload);
                }
            });
        }
        server = builder.build();
        port = (Integer) server.start(0).get(10, TimeUnit.SECONDS);
    }

    /** A peer that records every request. */
    public static ApnsTestPeer start() throws Exception {
        return new ApnsTestPeer(false, true);
    }

    /** A peer that asks TLS clients for a certificate signed by the test CA (certificate auth). */
    public static ApnsTestPeer startWithClientCertificates() throws Exception {
        return new ApnsTestPeer(true, true);
    }

    /** A peer that accepts everything and records nothing (benchmarks). */
    public static ApnsTestPeer startAcceptingSilently() throws Exception {
        return new ApnsTestPeer(false, false);
    }

    public int port() {
        return port;
    }

    public void answer(PushNotificationHandler handler) {
        this.handler = handler;
    }

    /** Answers with handlers that see the connection's TLS session (such as Pushy's validating ones). */
    public void answer(PushNotificationHandlerFactory factory) {
        this.handlerFactory = factory;
    }

    /** The next request the server received, waiting at most 10 s. */
    public Received next() throws InterruptedException {
        Received r = received.poll(10, TimeUnit.SECONDS);
        if (r == null) throw new AssertionError("APNs peer received nothing within 10 s");
        return r;
    }

    public int receivedCount() {
        return received.size();
    }

    /** Writes the test CA as PEM (for {@code push.apns.trusted-ca-file}). */
    public static Path writeCa(Path dir) throws Exception {
        return Files.writeString(dir.resolve("apns-test-ca.pem"), TestCertificates.pem(TestCertificates.shared().ca));
    }

    /** The device token a request is for (the last segment of its {@code :path}). */
    public static String deviceToken(Http2Headers headers) {
        String path = headers.path().toString();
        return path.substring(path.lastIndexOf('/') + 1);
    }

    /**
     * Points an application under test at this peer through {@code localhost}, trusting the test CA
     * written to {@code caFile} ({@link #writeCa}).
     */
    public void pointApplicationAt(org.springframework.test.context.DynamicPropertyRegistry registry, Path caFile) {
        registry.add("push.apns.host", () -> "localhost");
        registry.add("push.apns.port", this::port);
        registry.add("push.apns.trusted-ca-file", caFile::toString);
    }

    /** Settings pointing the provider at this peer through {@code localhost} (hostname verified). */
    public ApnsProperties properties(Path caFile, int connections, int maxInFlight, java.time.Duration requestTimeout) {
        return properties(port, caFile, connections, maxInFlight, requestTimeout);
    }

    public static ApnsProperties properties(int port, Path caFile, int connections, int maxInFlight,
                                            java.time.Duration requestTimeout) {
        return new ApnsProperties("localhost", port, caFile, connections, maxInFlight, requestTimeout, null);
    }

    private void record(Http2Headers headers, ByteBuf payload) {
        Map<String, String> map = new LinkedHashMap<>();
        headers.forEach(e -> map.put(e.getKey().toString(), e.getValue().toString()));
        JsonNode json = payload == null ? null : JSON.readTree(payload.toString(StandardCharsets.UTF_8));
        received.add(new Received(map, json, clientSubject));
    }

    @Override
    public void close() throws Exception {
        server.shutdown().get(10, TimeUnit.SECONDS);
    }
}
