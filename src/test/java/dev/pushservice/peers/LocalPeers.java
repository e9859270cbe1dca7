package dev.pushservice.peers;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Starts the three local protocol peers a person can deliver to without Apple or Google accounts:
 * an APNs server (Pushy's MockApnsServer over TLS), an FCM HTTP v1 endpoint with its OAuth token
 * endpoint, and a Web Push receiver that decrypts what it gets and checks the VAPID signature.
 * Prints how to point the service at them, writes ready-made credentials, and counts what arrives.
 * Run with {@code bench/peers.sh}; stop with Ctrl-C.
 */
public final class LocalPeers {

    private LocalPeers() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("push-local-peers");
        Files.createDirectories(dir);
        JsonMapper json = JsonMapper.builder().build();

        AtomicLong apnsReceived = new AtomicLong();
        ApnsTestPeer apns = ApnsTestPeer.startAcceptingSilently();
        apns.answer((PushNotificationHandler) (headers, payload) -> apnsReceived.incrementAndGet());
        Path ca = ApnsTestPeer.writeCa(dir);

        LocalFcmServer fcm = new LocalFcmServer(0).start();
        fcm.recording(false);
        LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "local-peers");

        LocalWebPushReceiver web = LocalWebPushReceiver.start();
        LocalWebPushReceiver.Subscriber subscriber = web.subscribe();

        ObjectNode settings = json.createObjectNode();
        ObjectNode apnsSettings = settings.putObject("apns").put("bundle_id", "dev.pushservice.local").put("environment", "sandbox");
        apnsSettings.putObject("token").put("key_id", "LOCAL12345").put("team_id", "LOCALTEAM1")
                .put("signing_key", TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate()));
        settings.putObject("fcm").set("service_account", json.readTree(account.json(fcm.tokenUri())));
        Path settingsFile = dir.resolve("settings.json");
        Files.writeString(settingsFile, json.writerWithDefaultPrettyPrinter().writeValueAsString(settings));
        ObjectNode webDevice = json.createObjectNode().put("platform", "web").put("push_token", subscriber.json());
        Path webDeviceFile = dir.resolve("web-device.json");
        Files.writeString(webDeviceFile, webDevice.toString());

        System.out.printf("""
                Local push peers are running (Ctrl-C stops them).

                  APNs      https://127.0.0.1:%d   (MockApnsServer, TLS with a local CA)
                  FCM v1    %s   (OAuth token endpoint %s)
                  Web Push  %s                 (HTTP/2 h2c or HTTP/1.1; decrypts every push, checks VAPID)

                1. Start the service pointed at them:

                   PUSH_APNS_HOST=127.0.0.1 PUSH_APNS_PORT=%d PUSH_APNS_TRUSTED_CA_FILE=%s \\
                   PUSH_FCM_BASE_URL=%s PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS=true ./mvnw spring-boot:run

                2. Give your app the local credentials (server key from data/bootstrap-keys.txt):

                   curl -X PATCH localhost:8080/v1/app/settings -H "Authorization: Bearer $SERVER" \\
                        -H 'Content-Type: application/json' -d @%s

                3. Register devices (public key): any hex token for iOS, any token for Android, and this
                   browser subscription for Web Push:

                   curl localhost:8080/v1/devices/register -H "Authorization: Bearer $PUBLIC" \\
                        -H 'Content-Type: application/json' -d @%s

                Counts are printed every 10 s.
                %n""", apns.port(), fcm.baseUrl(), fcm.tokenUri(), web.origin(), apns.port(), ca, fcm.baseUrl(),
                settingsFile, webDeviceFile);

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                apns.close();
            } catch (Exception ignored) {
                // shutting down
            }
            fcm.close();
            web.close();
        }));
        while (true) {
            Thread.sleep(10_000);
            long decrypted = web.received().stream().filter(r -> r.plaintext() != null).count();
            System.out.printf("received: APNs %d, FCM %d (token requests %d), Web Push %d (%d decrypted, %d problems)%n",
                    apnsReceived.get(), fcm.sendsAccepted(), fcm.tokenRequests(), web.requestCount(), decrypted,
                    web.problems().size());
        }
    }
}
