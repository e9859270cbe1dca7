package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.InterruptionLevel;
import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.delivery.apns.ApnsCredentials;
import dev.pushservice.delivery.apns.ApnsProvider;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.FcmCredentials;
import dev.pushservice.delivery.fcm.FcmProperties;
import dev.pushservice.delivery.fcm.FcmProvider;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.delivery.webpush.WebPushProperties;
import dev.pushservice.delivery.webpush.WebPushProvider;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Credentials set through {@code PATCH /v1/app/settings} are checked, stored encrypted, shown
 * without secrets, and are what the providers send with: real sends to the local peers through the
 * same credential sources the service uses.
 */
class ProviderCredentialsTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;
    @Autowired
    CredentialSource<FcmCredentials> fcmCredentials;
    @Autowired
    CredentialSource<VapidKeys> vapid;
    @Autowired
    CredentialSource<ApnsCredentials> apnsCredentials;
    @Autowired
    PushProviders providers;

    @Test
    void everyPlatformHasItsProviderInTheRegistry() {
        assertThat(providers.forPlatform(Platform.IOS)).isInstanceOf(ApnsProvider.class);
        assertThat(providers.forPlatform(Platform.ANDROID)).isInstanceOf(FcmProvider.class);
        assertThat(providers.forPlatform(Platform.WEB)).isInstanceOf(WebPushProvider.class);
        for (Platform platform : Platform.values()) {
            assertThat(providers.forPlatform(platform).platform()).isEqualTo(platform);
        }
    }

    @Test
    void anAppWithoutCredentialsIsRejectedAtOnceThroughTheRegistry() throws Exception {
        TestApp app = newApp();
        DeliveryResult ios = providers.send(message(app.appId(), Platform.IOS, TestTokens.apns())).get(10, TimeUnit.SECONDS);
        DeliveryResult android = providers.send(message(app.appId(), Platform.ANDROID, TestTokens.fcm())).get(10, TimeUnit.SECONDS);

        assertThat(ios).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "the app has no APNs credentials"));
        assertThat(android).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "the app has no FCM credentials"));
    }

    @Test
    void twoProvidersForOnePlatformAreRefused() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new PushProviders(List.of(
                        providers.forPlatform(Platform.IOS), providers.forPlatform(Platform.IOS))))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("two providers for ios");
    }

    @Test
    void apnsTokenCredentialIsCheckedStoredEncryptedAndUsedForSending(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        TestApp app = newApp();
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        String body = "{\"apns\":{\"bundle_id\":\"com.example.app\",\"environment\":\"sandbox\",\"token\":{\"key_id\":\"ABCDE12345\","
                + "\"team_id\":\"TEAM123456\",\"signing_key\":" + tools.jackson.databind.json.JsonMapper.builder().build().writeValueAsString(pem) + "}}}";
        TestApi.Response set = api.patch("/v1/app/settings", app.serverKey(), body);
        assertThat(set.status()).as(set.toString()).isEqualTo(200);
        JsonNode apns = set.json().path("apns");
        assertThat(apns.path("auth").asString()).isEqualTo("token");
        assertThat(apns.path("key_id").asString()).isEqualTo("ABCDE12345");
        assertThat(apns.path("bundle_id").asString()).isEqualTo("com.example.app");
        String keyMaterial = pem.lines().filter(l -> !l.startsWith("-----")).findFirst().orElseThrow();
        assertThat(set.body()).doesNotContain("PRIVATE KEY").doesNotContain(keyMaterial);
        byte[] stored = jdbc.sql("select secret from app_credentials where app_id = :app and provider = 'apns'")
                .param("app", app.appId()).query(byte[].class).single();
        assertThat(new String(stored, StandardCharsets.ISO_8859_1)).doesNotContain("PRIVATE KEY").doesNotContain(keyMaterial);

        try (ApnsTestPeer peer = ApnsTestPeer.start();
             ApnsProvider provider = ApnsProvider.builder(apnsCredentials)
                     .properties(peer.properties(ApnsTestPeer.writeCa(dir), 1, 10, java.time.Duration.ofSeconds(10))).build()) {
            String token = TestTokens.apns();
            DeliveryResult result = provider.send(message(app.appId(), Platform.IOS, token)).get(30, TimeUnit.SECONDS);
            assertThat(result).as(String.valueOf(result)).isInstanceOf(DeliveryResult.Accepted.class);
            ApnsTestPeer.Received got = peer.next();
            assertThat(got.header("apns-topic")).isEqualTo("com.example.app");
            assertThat(got.payload().path("aps").path("alert").path("title").asString()).isEqualTo("Hello");
        }

        TestApi.Response bad = api.patch("/v1/app/settings", app.serverKey(), "{\"apns\":{\"bundle_id\":\"com.example.app\","
                + "\"environment\":\"staging\",\"token\":{\"key_id\":\"short\",\"team_id\":\"TEAM123456\",\"signing_key\":\"nope\"}}}");
        assertError(bad, 422, "validation_failed");
        assertThat(bad.json().path("error").path("details").findValuesAsString("field"))
                .contains("apns.environment", "apns.token.key_id", "apns.token.signing_key");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("apns").path("key_id").asString()).isEqualTo("ABCDE12345");
    }

    @Test
    void fcmServiceAccountIsCheckedStoredEncryptedAndUsedForSending() throws Exception {
        TestApp app = newApp();
        try (LocalFcmServer fcm = new LocalFcmServer(0).start()) {
            LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "proj-" + app.appId().toString().substring(0, 8));
            String json = account.json(fcm.tokenUri());
            TestApi.Response set = api.patch("/v1/app/settings", app.serverKey(), "{\"fcm\":{\"service_account\":" + json + "}}");
            assertThat(set.status()).as(set.toString()).isEqualTo(200);
            assertThat(set.json().path("fcm").path("project_id").asString()).isEqualTo(account.projectId());
            assertThat(set.json().path("fcm").path("client_email").asString()).isEqualTo(account.clientEmail());
            String keyMaterial = account.privateKeyPem().lines().filter(l -> !l.startsWith("-----")).findFirst().orElseThrow();
            assertThat(set.body()).doesNotContain("PRIVATE KEY").doesNotContain(keyMaterial);
            byte[] stored = jdbc.sql("select secret from app_credentials where app_id = :app and provider = 'fcm'")
                    .param("app", app.appId()).query(byte[].class).single();
            assertThat(new String(stored, StandardCharsets.ISO_8859_1)).doesNotContain("PRIVATE KEY").doesNotContain(keyMaterial)
                    .doesNotContain(account.clientEmail());

            String token = TestTokens.fcm();
            try (FcmProvider provider = FcmProvider.builder(fcmCredentials)
                    .properties(FcmProperties.defaults().withBaseUrl(fcm.baseUrl())).build()) {
                DeliveryResult result = provider.send(message(app.appId(), Platform.ANDROID, token)).get(30, TimeUnit.SECONDS);
                assertThat(result).isInstanceOf(DeliveryResult.Accepted.class);
            }
            assertThat(fcm.receivedFor(token)).hasSize(1);
        }
        TestApi.Response removed = api.patch("/v1/app/settings", app.serverKey(), "{\"fcm\":null}");
        assertThat(removed.json().path("fcm").isNull()).isTrue();
    }

    @Test
    void badFcmCredentialIsRejectedWhenSetAndNothingIsStored() {
        TestApp app = newApp();
        for (String bad : List.of("{\"fcm\":{\"service_account\":{\"type\":\"authorized_user\"}}}",
                "{\"fcm\":{\"service_account\":\"not json\"}}", "{\"fcm\":{}}", "{\"fcm\":5}",
                "{\"fcm\":{\"service_account\":{\"type\":\"service_account\",\"project_id\":\"p\",\"client_email\":\"a@b.iam.gserviceaccount.com\","
                        + "\"private_key\":\"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\"}}}")) {
            TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), bad);
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).allMatch(f -> f.startsWith("fcm"));
        }
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("fcm").isNull()).isTrue();
        assertThat(jdbc.sql("select count(*) from app_credentials where app_id = :app and provider = 'fcm'")
                .param("app", app.appId()).query(Integer.class).single()).isZero();
    }

    @Test
    void vapidKeyIsGeneratedOnceReadableByPublicKeysAndSignsPushes() throws Exception {
        TestApp app = newApp();
        TestApi.Response first = api.get("/v1/app/webpush", app.publicKey());
        assertThat(first.status()).isEqualTo(200);
        String key = first.json().path("vapid_public_key").asString();
        assertThat(key).hasSize(87);
        assertThat(api.get("/v1/app/webpush", app.serverKey()).json().path("vapid_public_key").asString()).isEqualTo(key);
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("webpush").path("vapid_public_key").asString()).isEqualTo(key);
        assertThat(newAppKey()).isNotEqualTo(key);
        assertError(api.patch("/v1/app/settings", app.serverKey(), "{\"webpush\":{\"vapid_public_key\":\"x\"}}"), 422, "validation_failed");

        try (LocalWebPushReceiver receiver = LocalWebPushReceiver.start();
             WebPushProvider provider = WebPushProvider.builder(vapid)
                     .properties(WebPushProperties.defaults().withAllowInsecureEndpoints(true)).build()) {
            LocalWebPushReceiver.Subscriber subscriber = receiver.subscribe();
            DeliveryResult result = provider.send(message(app.appId(), Platform.WEB, subscriber.json())).get(30, TimeUnit.SECONDS);
            assertThat(result).isInstanceOf(DeliveryResult.Accepted.class);
            LocalWebPushReceiver.Received got = receiver.received(subscriber.id()).get(0);
            assertThat(got.vapidPublicKey()).isEqualTo(key);
            JsonNode payload = tools.jackson.databind.json.JsonMapper.builder().build().readTree(got.plaintext());
            assertThat(payload.path("title").asString()).isEqualTo("Hello");
            assertThat(receiver.problems()).isEmpty();
        }
    }

    private String newAppKey() {
        return api.get("/v1/app/webpush", newApp().publicKey()).json().path("vapid_public_key").asString();
    }

    private static PushMessage message(UUID appId, Platform platform, String token) {
        return new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), platform, token, "Hello", "World",
                null, null, Map.of("k", "v"), 60, null, null, null, null, null, false, null, Priority.NORMAL,
                InterruptionLevel.ACTIVE);
    }
}
