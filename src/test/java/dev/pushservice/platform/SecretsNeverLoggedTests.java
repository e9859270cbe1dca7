package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestTokens;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** Everything the service logs while handling keys and push tokens, on success and on error paths. */
@ExtendWith(OutputCaptureExtension.class)
class SecretsNeverLoggedTests extends ApiTest {

    @Test
    void apiKeysAndPushTokensNeverReachTheLogs(CapturedOutput output) {
        TestApp app = newApp();
        String iosToken = TestTokens.apns();
        String fcmToken = TestTokens.fcm();
        String unknownKey = "ps_live_" + "Z".repeat(43);

        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"ios\",\"push_token\":\"" + iosToken + "\"}");
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"android\",\"push_token\":\"" + fcmToken + "\"}");
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"android\",\"push_token\":\"" + fcmToken + " bad\"}");
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"ios\",\"push_token\":\"" + iosToken + "\",\"timezone\":\"x\"}");
        api.get("/v1/devices", app.serverKey());
        api.get("/v1/devices", unknownKey);
        api.get("/v1/devices", app.publicKey());
        api.patch("/v1/app/settings", app.serverKey(), "{\"name\":");

        assertThat(output.getAll())
                .doesNotContain(app.serverKey()).doesNotContain(app.publicKey()).doesNotContain(unknownKey)
                .doesNotContain(app.serverKey().substring(8, 30)).doesNotContain(app.publicKey().substring(10, 30))
                .doesNotContain(iosToken).doesNotContain(fcmToken);
    }
}
