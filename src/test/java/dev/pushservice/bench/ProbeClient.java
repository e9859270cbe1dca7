package dev.pushservice.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The transactional probes of {@code bench/fanout.sh}: single-device {@code transactional}
 * notifications sent one after another at a fixed interval, each timed by this client's clock, in its
 * own JVM (one connection, kept open) so that no process start lies between a request and its
 * timestamps. Each probe's body is {@code probe-NUMBER} (NUMBER: the epoch microseconds as it was
 * sent, unique), which {@link FanoutPeers} logs with the peer's clock as it accepts the push; both
 * clocks are this machine's wall clock.
 *
 * <p>Appends one line per probe answered with a 202 to OUT: {@code NUMBER POST_US RESPONSE_US
 * NOTIFICATION_ID}, epoch microseconds as the request left and as the 202's headers arrived (before the
 * body is read, so a slow client never makes the 202 look late). Other answers and connection errors
 * (a killed service) are written to standard error and the probes go on.
 *
 * <p>Usage: {@code ProbeClient BASE_URL API_KEY DEVICE_ID COUNT INTERVAL_MS OUT [GO_FILE STOP_FILE]}:
 * after 20 unmeasured {@code GET /health} (this JVM's client warms up), COUNT probes (0: until
 * STOP_FILE exists), the first once GO_FILE exists (when given).
 */
public final class ProbeClient {

    private static final Pattern ID = Pattern.compile("\"notification_id\"\\s*:\\s*\"([^\"]+)\"");

    private ProbeClient() {
    }

    public static void main(String[] args) throws Exception {
        URI uri = URI.create(args[0] + "/v1/notifications");
        String key = args[1];
        String device = args[2];
        int count = Integer.parseInt(args[3]);
        long interval = Long.parseLong(args[4]);
        Path out = Path.of(args[5]);
        Path go = args.length > 6 ? Path.of(args[6]) : null;
        Path stop = args.length > 7 ? Path.of(args[7]) : null;
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        warmUp(http, URI.create(args[0] + "/health"));
        while (go != null && !Files.exists(go)) Thread.sleep(5);
        for (int sent = 0; count == 0 || sent < count; sent++) {
            if (stop != null && Files.exists(stop)) break;
            long started = System.nanoTime();
            probe(http, uri, key, device, out);
            long left = interval - (System.nanoTime() - started) / 1_000_000;
            if (left > 0) Thread.sleep(left);
        }
    }

    /** A few requests first, so that the probes do not time this JVM's HTTP client compiling itself. */
    private static void warmUp(HttpClient http, URI health) throws InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(health).timeout(Duration.ofSeconds(10)).GET().build();
        for (int i = 0; i < 20; i++) {
            try {
                http.send(request, info -> HttpResponse.BodySubscribers.ofString(StandardCharsets.UTF_8));
            } catch (IOException e) {
                System.err.println("warm-up request: " + e);
                return;
            }
        }
    }

    private static void probe(HttpClient http, URI uri, String key, String device, Path out) throws InterruptedException {
        long number = micros(Instant.now());
        String body = "{\"title\":\"code\",\"body\":\"probe-" + number + "\",\"priority\":\"transactional\","
                + "\"target\":{\"type\":\"device\",\"device_id\":\"" + device + "\"}}";
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        AtomicLong answeredAt = new AtomicLong();
        try {
            long postedAt = micros(Instant.now());
            HttpResponse<String> response = http.send(request, info -> {
                answeredAt.set(micros(Instant.now()));
                return HttpResponse.BodySubscribers.ofString(StandardCharsets.UTF_8);
            });
            Matcher id = ID.matcher(response.body());
            if (response.statusCode() != 202 || !id.find()) {
                System.err.println("probe " + number + ": HTTP " + response.statusCode() + " " + response.body());
                return;
            }
            Files.writeString(out, number + " " + postedAt + " " + answeredAt.get() + " " + id.group(1) + "\n",
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.err.println("probe " + number + ": " + e);
        }
    }

    /** Epoch microseconds: the unit of every timestamp the probes and the peer write. */
    static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000 + t.getNano() / 1_000;
    }
}
