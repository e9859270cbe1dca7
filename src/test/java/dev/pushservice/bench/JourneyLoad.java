package dev.pushservice.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The load generator of {@code bench/journeys.sh}: plain HTTP/1.1 requests from a JDK client.
 * <ul>
 *   <li>{@code events URL KEY DEVICE_FILE EVENT_NAME CONCURRENCY}: one custom event per device of the
 *   file, {@code CONCURRENCY} at a time; writes each accepted event's device id to
 *   {@code DEVICE_FILE.accepted} as its 202 arrives and prints
 *   {@code accepted <n> refused <n> first <epoch ms> last <epoch ms>} (last: the last 202).</li>
 *   <li>{@code latency URL PUBLIC_KEY SERVER_KEY DEVICE_ID COUNT}: {@code COUNT} sequential device
 *   registrations (new iOS tokens), then {@code COUNT} sequential single-device notification creations;
 *   prints {@code registration p50 p99 notification p50 p99} in milliseconds.</li>
 * </ul>
 */
public final class JourneyLoad {

    private JourneyLoad() {
    }

    public static void main(String[] args) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();
        switch (args[0]) {
            case "events" -> events(http, args[1], args[2], Path.of(args[3]), args[4], Integer.parseInt(args[5]));
            case "latency" -> latency(http, args[1], args[2], args[3], args[4], Integer.parseInt(args[5]));
            default -> throw new IllegalArgumentException("events or latency");
        }
        System.exit(0);
    }

    private static void events(HttpClient http, String url, String key, Path devices, String name, int concurrency)
            throws Exception {
        List<String> ids = Files.readAllLines(devices).stream().filter(s -> !s.isBlank()).toList();
        AtomicInteger accepted = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        AtomicLong first = new AtomicLong(Long.MAX_VALUE);
        AtomicLong last = new AtomicLong();
        Semaphore slots = new Semaphore(concurrency);
        Path acceptedFile = Path.of(devices + ".accepted");
        try (var out = Files.newBufferedWriter(acceptedFile); ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (String device : ids) {
                slots.acquire();
                pool.submit(() -> {
                    try {
                        HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/v1/events"))
                                .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
                                .timeout(Duration.ofSeconds(60))
                                .POST(HttpRequest.BodyPublishers.ofString("{\"event_type\":\"custom\",\"event_name\":\""
                                        + name + "\",\"device_id\":\"" + device + "\"}")).build();
                        long sent = System.currentTimeMillis();
                        first.accumulateAndGet(sent, Math::min);
                        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
                        if (r.statusCode() == 202) {
                            accepted.incrementAndGet();
                            last.accumulateAndGet(System.currentTimeMillis(), Math::max);
                            synchronized (out) {
                                out.write(device);
                                out.newLine();
                                out.flush();
                            }
                        } else {
                            refused.incrementAndGet();
                        }
                    } catch (Exception e) {
                        refused.incrementAndGet();
                    } finally {
                        slots.release();
                    }
                    return null;
                });
            }
        }
        System.out.println("accepted " + accepted + " refused " + refused + " first " + first + " last " + last);
    }

    private static void latency(HttpClient http, String url, String publicKey, String serverKey, String device, int count)
            throws Exception {
        double[] registration = new double[count];
        for (int i = 0; i < count; i++) {
            String token = UUID.randomUUID().toString().replace("-", "") + UUID.randomUUID().toString().replace("-", "");
            registration[i] = timed(http, HttpRequest.newBuilder(URI.create(url + "/v1/devices/register"))
                    .header("Authorization", "Bearer " + publicKey).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"platform\":\"ios\",\"push_token\":\"" + token + "\"}")).build(), 201);
        }
        double[] notification = new double[count];
        for (int i = 0; i < count; i++) {
            notification[i] = timed(http, HttpRequest.newBuilder(URI.create(url + "/v1/notifications"))
                    .header("Authorization", "Bearer " + serverKey).header("Content-Type", "application/json")
                    .header("Idempotency-Key", UUID.randomUUID().toString())
                    .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"probe\",\"body\":\"latency\",\"target\":"
                            + "{\"type\":\"device\",\"device_id\":\"" + device + "\"}}")).build(), 202);
        }
        System.out.printf("registration %.1f %.1f notification %.1f %.1f%n", pct(registration, 50), pct(registration, 99),
                pct(notification, 50), pct(notification, 99));
    }

    private static double timed(HttpClient http, HttpRequest request, int expected) throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
        double ms = (System.nanoTime() - t0) / 1e6;
        if (r.statusCode() != expected) throw new IllegalStateException(request.uri() + " answered " + r.statusCode() + ": " + r.body());
        return ms;
    }

    private static double pct(double[] values, int p) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }
}
