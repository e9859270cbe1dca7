package dev.pushservice.bench;

import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.fcm.FcmCredentials;
import dev.pushservice.delivery.fcm.FcmProperties;
import dev.pushservice.delivery.fcm.FcmProvider;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.platform.rules.Platform;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Raw FCM sends/s: {@link FcmProvider} → {@link LocalFcmServer} (HTTP/2 on loopback, same JVM), at a
 * fixed number of requests in flight. One sender thread calls {@code send} back to back; the provider's
 * in-flight bound (set to the concurrency) is what keeps exactly that many outstanding.
 * Prints figures; asserts nothing. Run with {@code bench/fcm.sh [messages] [concurrency...]}.
 */
public final class FcmBench {

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int[] levels = args.length > 1
                ? java.util.Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[] {100, 1000};
        try (LocalFcmServer server = new LocalFcmServer(0).start()) {
            server.recording(false);
            LocalServiceAccount account = LocalServiceAccount.registeredWith(server, "bench-project");
            FcmCredentials credentials = account.credentials(server.tokenUri());
            CredentialSource<FcmCredentials> source =
                    id -> Optional.of(new CredentialSource.Versioned<>(credentials, 1));
            UUID appId = UUID.randomUUID();
            PushMessage message = new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), Platform.ANDROID,
                    "bench-registration-token-" + "x".repeat(140), "Flash sale", "Everything 20% off until midnight",
                    "https://img.example/sale.png", "myapp://sale", Map.of("campaign", "sale-42", "rank", 3), 3600,
                    "sale", "default", 1, null, null, false, null, Priority.NORMAL, InterruptionLevel.ACTIVE);
            System.out.printf("FCM raw provider bench: %,d messages per run, JDK %s, %d CPUs%n", messages,
                    Runtime.version(), Runtime.getRuntime().availableProcessors());
            for (int concurrency : levels) {
                try (FcmProvider provider = FcmProvider.builder(source).properties(FcmProperties.defaults()
                        .withBaseUrl(server.baseUrl()).withMaxInFlight(concurrency).withRequestTimeout(Duration.ofSeconds(30)))
                        .build()) {
                    run(provider, message, Math.min(messages, 20_000), concurrency, "warm-up");
                    run(provider, message, messages, concurrency, "measured");
                }
            }
            System.out.printf("server: %,d sends answered (%,d over HTTP/2), %d token requests, %d connections%n",
                    server.sendsAnswered(), server.http2Sends(), server.tokenRequests(), server.connections());
        }
    }

    /** CPU time of this whole JVM: on a shared machine, sends per CPU-second is steadier than wall-clock rate. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static void run(FcmProvider provider, PushMessage message, int messages, int concurrency, String label)
            throws InterruptedException {
        AtomicLong accepted = new AtomicLong();
        AtomicLong other = new AtomicLong();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(messages);
        long start = System.nanoTime();
        long cpuStart = processCpuNanos();
        for (int i = 0; i < messages; i++) {
            provider.send(message).whenComplete((r, e) -> {
                if (r instanceof DeliveryResult.Accepted) accepted.incrementAndGet();
                else other.incrementAndGet();
                done.countDown();
            });
        }
        if (!done.await(5, TimeUnit.MINUTES)) System.out.println("  (timed out waiting for answers)");
        double seconds = (System.nanoTime() - start) / 1e9;
        double cpuSeconds = (processCpuNanos() - cpuStart) / 1e9;
        System.out.printf("  concurrency %5d  %-8s  %,9d sends in %6.2f s  = %,8.0f sends/s  (%,.0f sends per CPU-second,"
                        + " client and server together; accepted %,d, other %,d)%n",
                concurrency, label, messages, seconds, messages / seconds, messages / cpuSeconds, accepted.get(), other.get());
    }
}
