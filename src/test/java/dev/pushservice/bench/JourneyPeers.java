package dev.pushservice.bench;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The APNs peer of {@code bench/journeys.sh}, in its own JVM: accepts every push and logs each one
 * as {@code <epoch microseconds> <device token> <alert title>} in {@code pushes.txt} (flushed every
 * 100 ms), so the script can time each journey step per device and count steps that arrived twice.
 * Writes {@code peers.env} (the service's settings), {@code settings.json} (the app's APNs
 * credentials) and {@code counts.txt} (pushes accepted so far). Runs until killed.
 *
 * <p>Usage: {@code JourneyPeers DIR}.
 */
public final class JourneyPeers {

    private JourneyPeers() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Files.createDirectories(dir);
        JsonMapper json = JsonMapper.builder().build();
        AtomicLong accepted = new AtomicLong();
        ConcurrentLinkedQueue<String> log = new ConcurrentLinkedQueue<>();
        ApnsTestPeer apns = ApnsTestPeer.startAcceptingSilently();
        apns.answer((PushNotificationHandler) (headers, payload) -> {
            long micros = System.currentTimeMillis() * 1000 + (System.nanoTime() / 1000) % 1000;
            String body = payload.toString(StandardCharsets.UTF_8);
            String title = "?";
            int at = body.indexOf("\"title\":\"");
            if (at >= 0) {
                int end = body.indexOf('"', at + 9);
                if (end > at) title = body.substring(at + 9, end).replace(' ', '_');
            }
            log.add(micros + " " + ApnsTestPeer.deviceToken(headers) + " " + title);
            accepted.incrementAndGet();
        });
        Path ca = ApnsTestPeer.writeCa(dir);
        ObjectNode settings = json.createObjectNode();
        ObjectNode apnsSettings = settings.putObject("apns").put("bundle_id", "dev.pushservice.bench").put("environment", "sandbox");
        apnsSettings.putObject("token").put("key_id", "BENCH12345").put("team_id", "BENCHTEAM1")
                .put("signing_key", TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate()));
        Files.writeString(dir.resolve("settings.json"), settings.toString());
        Files.writeString(dir.resolve("peers.env"), String.join("\n",
                "PUSH_APNS_HOST=localhost", "PUSH_APNS_PORT=" + apns.port(), "PUSH_APNS_TRUSTED_CA_FILE=" + ca, ""));
        Path counts = dir.resolve("counts.txt");
        Path tmp = dir.resolve("counts.tmp");
        try (BufferedWriter out = Files.newBufferedWriter(dir.resolve("pushes.txt"), StandardOpenOption.CREATE,
                StandardOpenOption.APPEND)) {
            List<String> lines = new ArrayList<>();
            while (true) {
                String line;
                while ((line = log.poll()) != null) lines.add(line);
                for (String l : lines) {
                    out.write(l);
                    out.newLine();
                }
                out.flush();
                lines.clear();
                Files.writeString(tmp, accepted.get() + "\n");
                Files.move(tmp, counts, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                Thread.sleep(100);
            }
        }
    }
}
