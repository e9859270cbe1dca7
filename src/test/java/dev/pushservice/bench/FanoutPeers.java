package dev.pushservice.bench;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The three local peers for {@code bench/fanout.sh}, in their own JVM so that their CPU is measured
 * apart from the service's: APNs (MockApnsServer, TLS), FCM v1 with its token endpoint, and a Web Push
 * receiver in bench mode (every push routed and checked, one in 1,000 decrypted in full). Writes into
 * the directory given: {@code peers.env} (the service's settings), {@code settings.json} (the app's
 * credentials), {@code web-subscriptions.txt} (one subscription per line, as many as asked), and
 * every 100 ms {@code counts.txt} ({@code apns fcm web} accepted so far) and {@code arrivals.txt}: for
 * each APNs push whose payload holds {@value #PROBE_MARK} followed by a number (the benchmark's
 * transactional probes), a line {@code EPOCH_MICROS NUMBER}, the peer's clock as it accepted the push;
 * and appends to {@code counts-log.txt} at each of those ticks {@code EPOCH_MS APNS_ACCEPTED
 * LAST_APNS_MS} (the peer's clock, and that of the latest APNs push accepted so far): what reached
 * APNs after a given moment ({@code bench/scale.sh}: after a cancel's answer).
 * Runs until killed.
 *
 * <p>With {@code relay} (the outage drill, {@code drills/provider-outage.sh}) the service reaches APNs
 * through a {@link DroppingProxy}: while the file {@code apns-down} exists in DIR the relay is down
 * (every connection cut, new ones refused, as a peer killed with -9), and {@code apns-tokens.txt}
 * holds {@code DISTINCT_TOKENS TOTAL_PUSHES} accepted by APNs so far.
 *
 * <p>With {@code fcm-relay} (the outage drill's FCM variant) the service reaches FCM's send endpoint
 * ({@code PUSH_FCM_BASE_URL}) through a relay of its own, down while the file {@code fcm-down} exists,
 * and {@code fcm-tokens.txt} holds {@code DISTINCT_TOKENS TOTAL_PUSHES} accepted by FCM so far. The
 * OAuth2 token endpoint (the service account's {@code token_uri}) stays reachable: an access token lives
 * an hour, so the outage is one of the send endpoint, which is where pushes are lost or sent twice.
 *
 * <p>While the file {@code fcm-storm} exists in DIR (the storm drill, {@code drills/provider-storm.sh}),
 * FCM answers a share of sends with errors: the file holds {@code SHARE_429_RETRY_AFTER SHARE_429
 * SHARE_503 RETRY_AFTER_SECONDS} (e.g. {@code 0.15 0.15 0.10 5}). {@code fcm.txt} holds {@code
 * ANSWERED ACCEPTED STORM_ERRORS}, FCM's sends so far, every 100 ms.
 *
 * <p>Usage: {@code FanoutPeers DIR WEB_SUBSCRIPTIONS [relay] [fcm-relay] [WEB_ANSWERS_PER_SECOND]}; the number makes the
 * Web Push receiver a slow push service that answers at most that many pushes a second.
 */
public final class FanoutPeers {

    /** What a probe's body starts with, followed by its number ({@link ProbeClient}): {@code probe-1795563961028559}. */
    static final String PROBE_MARK = "probe-";

    private FanoutPeers() {
    }

    /** The probe number in {@code payload} (after {@link #PROBE_MARK}, up to the first non-digit), or -1. */
    private static long probeNumber(ByteBuf payload, ByteBuf mark) {
        int at = ByteBufUtil.indexOf(mark, payload);
        if (at < 0) return -1;
        long n = 0;
        int i = at + mark.readableBytes();
        for (; i < payload.writerIndex(); i++) {
            byte b = payload.getByte(i);
            if (b < '0' || b > '9') break;
            n = n * 10 + (b - '0');
        }
        return i == at + mark.readableBytes() ? -1 : n;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int subscriptions = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        List<String> options = Arrays.asList(args).subList(Math.min(2, args.length), args.length);
        boolean relay = options.contains("relay");
        boolean fcmRelay = options.contains("fcm-relay");
        Integer webRate = options.stream().filter(o -> !o.equals("relay") && !o.equals("fcm-relay"))
                .map(Integer::valueOf).findFirst().orElse(null);
        java.util.concurrent.ConcurrentHashMap<String, Boolean> tokens = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.concurrent.ConcurrentHashMap<String, Boolean> fcmTokens = new java.util.concurrent.ConcurrentHashMap<>();
        Files.createDirectories(dir);
        JsonMapper json = JsonMapper.builder().build();

        AtomicLong apnsAccepted = new AtomicLong();
        AtomicLong apnsLast = new AtomicLong(); // epoch ms of the latest accepted APNs push
        ApnsTestPeer apns = ApnsTestPeer.startAcceptingSilently();
        ByteBuf mark = Unpooled.unreleasableBuffer(Unpooled.copiedBuffer(PROBE_MARK, StandardCharsets.US_ASCII));
        ConcurrentLinkedQueue<String> arrivals = new ConcurrentLinkedQueue<>();
        apns.answer((PushNotificationHandler) (headers, payload) -> {
            apnsAccepted.incrementAndGet();
            apnsLast.set(System.currentTimeMillis());
            if (relay) tokens.put(ApnsTestPeer.deviceToken(headers), Boolean.TRUE);
            long probe = probeNumber(payload, mark);
            if (probe >= 0) arrivals.add(ProbeClient.micros(Instant.now()) + " " + probe + "\n");
        });
        Path ca = ApnsTestPeer.writeCa(dir);
        dev.pushservice.delivery.apns.DroppingProxy proxy = relay ? new dev.pushservice.delivery.apns.DroppingProxy(apns.port()) : null;
        Path down = dir.resolve("apns-down");
        LocalFcmServer fcm = new LocalFcmServer(0).start();
        fcm.recording(false);
        if (fcmRelay) fcm.onAccepted(token -> fcmTokens.put(token, Boolean.TRUE));
        dev.pushservice.delivery.apns.DroppingProxy fcmProxy = fcmRelay ? new dev.pushservice.delivery.apns.DroppingProxy(fcm.port()) : null;
        Path fcmDown = dir.resolve("fcm-down");
        LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "fanout-bench");
        LocalWebPushReceiver web = LocalWebPushReceiver.start();
        web.benchMode(true);
        if (webRate != null) web.answerRate(webRate);
        try (BufferedWriter out = Files.newBufferedWriter(dir.resolve("web-subscriptions.txt"))) {
            for (int i = 0; i < subscriptions; i++) {
                out.write(web.subscribe().json());
                out.newLine();
            }
        }

        ObjectNode settings = json.createObjectNode();
        ObjectNode apnsSettings = settings.putObject("apns").put("bundle_id", "dev.pushservice.bench").put("environment", "sandbox");
        apnsSettings.putObject("token").put("key_id", "BENCH12345").put("team_id", "BENCHTEAM1")
                .put("signing_key", TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate()));
        settings.putObject("fcm").set("service_account", json.readTree(account.json(fcm.tokenUri())));
        Files.writeString(dir.resolve("settings.json"), settings.toString());
        Files.writeString(dir.resolve("peers.env"), String.join("\n",
                "PUSH_APNS_HOST=localhost", "PUSH_APNS_PORT=" + (proxy != null ? proxy.port() : apns.port()), "PUSH_APNS_TRUSTED_CA_FILE=" + ca,
                "PUSH_FCM_BASE_URL=" + (fcmProxy != null ? "http://127.0.0.1:" + fcmProxy.port() : fcm.baseUrl()), "PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS=true", ""));
        Path counts = dir.resolve("counts.txt");
        Path tmp = dir.resolve("counts.tmp");
        Path arrived = dir.resolve("arrivals.txt");
        Path countsLog = dir.resolve("counts-log.txt");
        boolean proxyDown = false;
        boolean fcmProxyDown = false;
        Path stormFile = dir.resolve("fcm-storm");
        boolean storming = false;
        while (true) {
            StringBuilder lines = new StringBuilder();
            for (String line; (line = arrivals.poll()) != null; ) lines.append(line);
            if (!lines.isEmpty()) {
                Files.writeString(arrived, lines, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            }
            Files.writeString(tmp, apnsAccepted.get() + " " + fcm.sendsAccepted() + " " + web.acceptedCount() + "\n");
            Files.move(tmp, counts, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            Files.writeString(countsLog, System.currentTimeMillis() + " " + apnsAccepted.get() + " " + apnsLast.get() + "\n",
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            boolean wantStorm = Files.exists(stormFile);
            if (wantStorm != storming) {
                LocalFcmServer.Storm storm = null;
                if (wantStorm) {
                    String[] f = Files.readString(stormFile).trim().split("\\s+");
                    storm = new LocalFcmServer.Storm(Double.parseDouble(f[0]), Double.parseDouble(f[1]),
                            Double.parseDouble(f[2]), Integer.parseInt(f[3]));
                }
                fcm.storm(storm);
                storming = wantStorm;
                System.out.println(Instant.now() + " FCM storm " + (wantStorm ? "on: " + storm : "off"));
            }
            Files.writeString(dir.resolve("fcm.tmp"), fcm.sendsAnswered() + " " + fcm.sendsAccepted() + " " + fcm.stormReplies() + "\n");
            Files.move(dir.resolve("fcm.tmp"), dir.resolve("fcm.txt"),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            if (proxy != null) {
                boolean wantDown = Files.exists(down);
                if (wantDown != proxyDown) {
                    if (wantDown) proxy.down(); else proxy.up();
                    proxyDown = wantDown;
                    System.out.println(Instant.now() + " APNs relay " + (wantDown ? "down" : "up"));
                }
                Files.writeString(dir.resolve("apns-tokens.tmp"), tokens.size() + " " + apnsAccepted.get() + "\n");
                Files.move(dir.resolve("apns-tokens.tmp"), dir.resolve("apns-tokens.txt"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            if (fcmProxy != null) {
                boolean wantDown = Files.exists(fcmDown);
                if (wantDown != fcmProxyDown) {
                    if (wantDown) fcmProxy.down(); else fcmProxy.up();
                    fcmProxyDown = wantDown;
                    System.out.println(Instant.now() + " FCM relay " + (wantDown ? "down" : "up"));
                }
                Files.writeString(dir.resolve("fcm-tokens.tmp"), fcmTokens.size() + " " + fcm.sendsAccepted() + "\n");
                Files.move(dir.resolve("fcm-tokens.tmp"), dir.resolve("fcm-tokens.txt"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            Thread.sleep(100);
        }
    }
}
