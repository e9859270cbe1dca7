package dev.pushservice.bench;

import ch.qos.logback.classic.Level;
import com.eatthepath.pushy.apns.ApnsClient;
import com.eatthepath.pushy.apns.ApnsClientBuilder;
import com.eatthepath.pushy.apns.auth.ApnsSigningKey;
import com.eatthepath.pushy.apns.util.SimpleApnsPushNotification;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.apns.ApnsCredentials;
import dev.pushservice.delivery.apns.ApnsProperties;
import dev.pushservice.delivery.apns.ApnsProvider;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.platform.rules.Platform;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.LoggerFactory;

/**
 * Raw sends/s through {@link ApnsProvider} to a local {@code MockApnsServer} over TLS (token auth,
 * one app), at 100 and 1,000 requests in flight. Client and server share this JVM and this machine's
 * cores, so the figure is a floor for the provider path. Prints; never asserts.
 *
 * <p>Arguments: {@code [sends] [connections...]}, default {@code 100000 1 2 4}.
 */
public final class ApnsBench {

    public static void main(String[] args) throws Exception {
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(Level.WARN);
        int sends = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int[] connectionCounts = args.length > 1
                ? java.util.Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[] {1, 2, 4};

        Path dir = Files.createTempDirectory("apns-bench");
        Path ca = ApnsTestPeer.writeCa(dir);
        ApnsCredentials credentials = ApnsCredentials.token(
                TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate()),
                "BENCH12345", "TEAM123456", "com.example.bench", "sandbox");
        CredentialSource<ApnsCredentials> source = id -> Optional.of(new CredentialSource.Versioned<>(credentials, 1));

        System.out.printf("APNs provider -> MockApnsServer (TLS, loopback, same JVM), %,d sends per run, %d cores%n",
                sends, Runtime.getRuntime().availableProcessors());
        try (ApnsTestPeer peer = ApnsTestPeer.startAcceptingSilently()) {
            // JIT warm-up of the shared path (TLS, HTTP/2, Pushy) before anything is measured, so
            // the first configuration (and the provider against raw Pushy) is not penalised
            try (ApnsProvider provider = ApnsProvider.builder(source).properties(new ApnsProperties("localhost",
                    peer.port(), ca, 2, 1000, Duration.ofSeconds(30), null)).build()) {
                run(provider, sends);
            }
            if (System.getenv("APNS_BENCH_RAW") != null) rawPushy(peer.port(), ca, credentials, 2, 1000, sends);
            for (int connections : connectionCounts) {
                for (int concurrency : new int[] {100, 1000}) {
                    ApnsProperties properties = new ApnsProperties("localhost", peer.port(), ca, connections,
                            concurrency, Duration.ofSeconds(30), null);
                    try (ApnsProvider provider = ApnsProvider.builder(source).properties(properties).build()) {
                        run(provider, Math.max(sends / 5, 1_000)); // warm-up: connections, JIT
                        Result r = run(provider, sends);
                        System.out.printf("connections=%d in-flight=%-5d %,9.0f sends/s  %5.1f µs CPU/send  (%,d accepted, %,d other, %.2f s)%n",
                                connections, concurrency, sends / r.seconds, r.cpuMicrosPerSend, r.accepted,
                                sends - r.accepted, r.seconds);
                    }
                    if (System.getenv("APNS_BENCH_RAW") != null) {
                        Result raw = rawPushy(peer.port(), ca, credentials, connections, concurrency, sends);
                        System.out.printf("  raw Pushy, same settings:   %,9.0f sends/s  %5.1f µs CPU/send%n",
                                sends / raw.seconds, raw.cpuMicrosPerSend);
                    }
                }
            }
        }
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) Files.delete(p);
        }
        Files.delete(dir);
    }

    /** Pushy alone (same payload, same limits), to see what the provider adds. */
    private static Result rawPushy(int port, Path ca, ApnsCredentials credentials, int connections, int concurrency,
                                   int sends) throws Exception {
        var token = (ApnsCredentials.Token) credentials.auth();
        ApnsClient client = new ApnsClientBuilder().setApnsServer("localhost", port)
                .setTrustedServerCertificateChain(ca.toFile())
                .setSigningKey(new ApnsSigningKey(token.keyId(), token.teamId(), token.signingKey()))
                .setConcurrentConnections(connections).build();
        try {
            for (int pass = 0; pass < 2; pass++) {
                int n = pass == 0 ? Math.max(sends / 5, 1_000) : sends;
                Semaphore slots = new Semaphore(concurrency);
                CountDownLatch done = new CountDownLatch(n);
                LongAdder accepted = new LongAdder();
                long start = System.nanoTime();
                long cpuStart = cpuNanos();
                for (int i = 0; i < n; i++) {
                    String payload = "{\"aps\":{\"alert\":{\"title\":\"Benchmark\",\"body\":\"Message " + i
                            + "\"},\"sound\":\"default\"},\"n\":" + i + "}";
                    slots.acquire();
                    client.sendNotification(new SimpleApnsPushNotification(token(i),
                                    credentials.bundleId(), payload, Instant.now().plusSeconds(3600)))
                            .whenComplete((r, e) -> {
                                slots.release();
                                if (r != null && r.isAccepted()) accepted.increment();
                                done.countDown();
                            });
                }
                done.await(5, TimeUnit.MINUTES);
                if (pass == 1) {
                    return new Result((System.nanoTime() - start) / 1e9, accepted.sum(), (cpuNanos() - cpuStart) / 1e3 / n);
                }
            }
            throw new IllegalStateException();
        } finally {
            client.close().get(10, TimeUnit.SECONDS);
        }
    }

    /** Wall-clock seconds, accepted count and the whole JVM's CPU time (client and server) per send. */
    private record Result(double seconds, long accepted, double cpuMicrosPerSend) {
    }

    /** The {@code i}-th device token of a run: distinct, and the same in every run. */
    private static String token(int i) {
        byte[] token = new byte[32];
        token[0] = (byte) i;
        token[1] = (byte) (i >> 8);
        token[2] = (byte) (i >> 16);
        return HexFormat.of().formatHex(token);
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** One producer thread; {@code send} blocks when the provider's in-flight limit is reached. */
    private static Result run(ApnsProvider provider, int sends) throws InterruptedException {
        UUID app = UUID.fromString("00000000-0000-0000-0000-00000000a995");
        CountDownLatch done = new CountDownLatch(sends);
        LongAdder accepted = new LongAdder();
        long start = System.nanoTime();
        long cpuStart = cpuNanos();
        for (int i = 0; i < sends; i++) {
            PushMessage message = new PushMessage(app, null, null, Platform.IOS, token(i),
                    "Benchmark", "Message " + i, null, null, Map.of("n", i), 3600, null, "default", null, null,
                    null, false, null, Priority.NORMAL, InterruptionLevel.ACTIVE);
            provider.send(message).thenAccept(result -> {
                if (result instanceof DeliveryResult.Accepted) accepted.increment();
                done.countDown();
            });
        }
        if (!done.await(5, TimeUnit.MINUTES)) System.out.println("  (did not finish within 5 minutes)");
        return new Result((System.nanoTime() - start) / 1e9, accepted.sum(), (cpuNanos() - cpuStart) / 1e3 / sends);
    }
}
