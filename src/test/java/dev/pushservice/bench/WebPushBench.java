package dev.pushservice.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.webpush.CryptoProviders;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.delivery.webpush.WebPushEncryption;
import dev.pushservice.delivery.webpush.WebPushProperties;
import dev.pushservice.delivery.webpush.WebPushProvider;
import dev.pushservice.delivery.webpush.WebPushSubscription;
import dev.pushservice.platform.rules.Platform;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Web Push raw provider throughput: encryption cost per message, then sends/s through
 * {@link WebPushProvider} to a {@link LocalWebPushReceiver} on loopback at 100 and 1,000 requests
 * in flight, over cleartext HTTP/2 ({@code http://} endpoints, h2c) and over TLS with ALPN h2
 * ({@code https://}, as real push services are reached). The receiver runs in the same JVM, so
 * the figures include its HTTP (and TLS) work; by default it is in bench mode (every push routed
 * and its headers checked, each VAPID token verified once, one push in
 * {@link LocalWebPushReceiver#BENCH_SAMPLE} decrypted and verified in full), which the output
 * states. Prints figures; asserts nothing.
 *
 * <p>Arguments: {@code [messages per level, default 20000] [sender threads, default 4]}.
 * Environment: {@code WEBPUSH_BENCH_VERIFY=all} makes the receiver check every push in full (its
 * JDK-provider decryption then dominates); {@code WEBPUSH_BENCH_HTTP1=1} adds runs against an
 * HTTP/1.1-only receiver.
 */
public final class WebPushBench {

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        System.out.printf("Web Push bench: %d messages per level, %d sender threads, %d CPUs, Java %s%n",
                messages, threads, Runtime.getRuntime().availableProcessors(), Runtime.version());
        System.out.println("crypto provider: " + CryptoProviders.description());
        System.out.printf("system load average at start: %.1f (wall-clock figures shrink when other work shares the CPUs;"
                + " CPU-time figures much less)%n", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());

        boolean verifyAll = "all".equals(System.getenv("WEBPUSH_BENCH_VERIFY"));
        boolean http1 = "1".equals(System.getenv("WEBPUSH_BENCH_HTTP1"));
        VapidKeys keys = VapidKeys.generate();
        UUID app = UUID.randomUUID();
        CredentialSource<VapidKeys> credentials = id -> Optional.of(new CredentialSource.Versioned<>(keys, 1));
        boolean encryptionMeasured = false;
        for (String receiverKind : http1 ? List.of("HTTP/2", "HTTP/1.1-only") : List.of("HTTP/2")) {
            try (LocalWebPushReceiver receiver = receiverKind.equals("HTTP/2")
                    ? LocalWebPushReceiver.start() : LocalWebPushReceiver.startHttp1Only()) {
                List<String> cleartext = new ArrayList<>();
                List<String> tls = new ArrayList<>();
                for (int i = 0; i < 500; i++) {
                    cleartext.add(receiver.subscribe().json());
                    tls.add(receiver.subscribeTls().json());
                }
                if (!encryptionMeasured) {
                    encryption(cleartext.getFirst());
                    encryptionMeasured = true;
                    System.out.println(verifyAll
                            ? "receiver: checks every push in full (VAPID signature and claims, headers, decryption on JDK providers)"
                            : "receiver: bench mode: every push routed and its headers checked, each VAPID token verified once,"
                                    + " 1 push in " + LocalWebPushReceiver.BENCH_SAMPLE + " decrypted and verified in full"
                                    + " (WEBPUSH_BENCH_VERIFY=all checks every push)");
                }
                receiver.benchMode(!verifyAll);
                for (boolean overTls : new boolean[] {false, true}) {
                    List<String> tokens = overTls ? tls : cleartext;
                    String label = receiverKind + " receiver, " + (overTls ? "https (TLS)" : "http (cleartext)");
                    for (int inFlight : new int[] {100, 1_000}) {
                        WebPushProperties properties = WebPushProperties.defaults().withAllowInsecureEndpoints(true)
                                .withSubject("mailto:bench@example.com").withMaxInFlight(inFlight);
                        try (WebPushProvider provider = WebPushProvider.builder(credentials).properties(properties)
                                .trustedCertificates(List.of(LocalWebPushReceiver.trustedCertificate())).build()) {
                            run(provider, receiver, app, tokens, Math.min(messages, 20_000), threads, inFlight, null);
                            run(provider, receiver, app, tokens, messages, threads, inFlight, label);
                        }
                    }
                }
                System.out.printf("  receiver: %,d requests (h2 %,d, h2c %,d, http/1.1 %,d) on %,d connections;"
                                + " %,d checked in full; %d problems%s%n",
                        receiver.requestCount(), receiver.requestCount("h2"), receiver.requestCount("h2c"),
                        receiver.requestCount("http/1.1"), receiver.connectionCount(), receiver.fullyChecked(),
                        receiver.problems().size(), receiver.problems().isEmpty() ? "" : " " + receiver.problems().getFirst());
            }
        }
    }

    private static void encryption(String token) {
        byte[] payload = ("{\"notification_id\":\"" + UUID.randomUUID() + "\",\"title\":\"Your order shipped\","
                + "\"body\":\"It arrives on Tuesday between 9 and 12.\",\"url\":\"https://shop.example/orders/42\","
                + "\"data\":{\"order_id\":\"42\"}}").getBytes(StandardCharsets.UTF_8);
        WebPushSubscription subscription = WebPushSubscription.parse(token, true);
        long sink = 0;
        for (int i = 0; i < 3_000; i++) sink += WebPushEncryption.encrypt(payload, subscription).length;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int n = 10_000;
        long start = System.nanoTime();
        long cpu = threads.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) sink += WebPushEncryption.encrypt(payload, subscription).length;
        double encryptUs = (System.nanoTime() - start) / 1_000.0 / n;
        double encryptCpuUs = (threads.getCurrentThreadCpuTime() - cpu) / 1_000.0 / n;
        start = System.nanoTime();
        cpu = threads.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            sink += WebPushEncryption.encrypt(payload, WebPushSubscription.parse(token, true)).length;
        }
        double withParseUs = (System.nanoTime() - start) / 1_000.0 / n;
        double withParseCpuUs = (threads.getCurrentThreadCpuTime() - cpu) / 1_000.0 / n;
        System.out.printf("encryption per message (one thread, %d-byte payload): %.1f µs CPU (%.1f µs wall);"
                + " with subscription parsing: %.1f µs CPU (%.1f µs wall)%s%n",
                payload.length, encryptCpuUs, encryptUs, withParseCpuUs, withParseUs, sink == 42 ? "!" : "");
    }

    private static void run(WebPushProvider provider, LocalWebPushReceiver receiver, UUID app, List<String> tokens,
            int messages, int threads, int inFlight, String label) throws Exception {
        long before = receiver.requestCount();
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(messages);
        AtomicInteger next = new AtomicInteger();
        long start = System.nanoTime();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            senders.add(Thread.ofPlatform().start(() -> {
                for (int i = next.getAndIncrement(); i < messages; i = next.getAndIncrement()) {
                    CompletableFuture<DeliveryResult> f = provider.send(message(app, tokens.get(i % tokens.size())));
                    f.whenComplete((r, e) -> {
                        String kind = e != null ? "error " + e
                                : r instanceof DeliveryResult.Accepted ? "Accepted"
                                : r.getClass().getSimpleName() + " (" + reason(r) + ")";
                        outcomes.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
                        done.countDown();
                    });
                }
            }));
        }
        for (Thread t : senders) t.join();
        boolean finished = done.await(5, TimeUnit.MINUTES);
        double seconds = (System.nanoTime() - start) / 1e9;
        double cpuPerSend = (os.getProcessCpuTime() - cpuBefore) / 1_000.0 / messages;
        if (label != null) {
            System.out.printf("%s, in flight %,5d: %,d sends in %.2f s = %,.0f sends/s; process CPU %.0f µs/send"
                            + " (sender + receiver, all threads); receiver counted %,d; outcomes %s%s%n",
                    label, inFlight, messages, seconds, messages / seconds, cpuPerSend, receiver.requestCount() - before,
                    outcomes, finished ? "" : "; NOT all finished");
        }
    }

    private static String reason(DeliveryResult r) {
        return r instanceof DeliveryResult.Failed f ? f.reason().code() : ((DeliveryResult.Rejected) r).reason().code();
    }

    private static PushMessage message(UUID app, String token) {
        return new PushMessage(app, UUID.randomUUID(), UUID.randomUUID(), Platform.WEB, token, "Your order shipped",
                "It arrives on Tuesday between 9 and 12.", null, "https://shop.example/orders/42",
                Map.of("order_id", "42"), 3600, null, null, null, null, null, false, null, Priority.NORMAL,
                InterruptionLevel.ACTIVE);
    }
}
