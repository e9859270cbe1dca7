package dev.pushservice.delivery.fcm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import java.net.URI;
import org.junit.jupiter.api.Test;

/** What an app gets back (a 422 with per-field details) when it sets a bad FCM service account. */
class FcmCredentialsTests {

    private static final URI TOKEN_URI = URI.create("http://127.0.0.1:9/token");
    private static final LocalServiceAccount ACCOUNT = LocalServiceAccount.generate("demo-project");

    @Test
    void serviceAccountJsonIsParsed() {
        FcmCredentials c = FcmCredentials.parse("fcm.service_account", ACCOUNT.json(TOKEN_URI));

        assertThat(c.projectId()).isEqualTo("demo-project");
        assertThat(c.clientEmail()).isEqualTo(ACCOUNT.clientEmail());
        assertThat(c.privateKeyId()).isEqualTo(ACCOUNT.privateKeyId());
        assertThat(c.privateKey().getEncoded()).isEqualTo(ACCOUNT.keys().getPrivate().getEncoded());
        assertThat(c.tokenUri()).isEqualTo(TOKEN_URI);
        assertThat(c.toString()).doesNotContain("PRIVATE").doesNotContain(ACCOUNT.privateKeyPem().substring(40, 80));
    }

    @Test
    void missingTokenUriMeansGoogles() {
        String json = ACCOUNT.json(TOKEN_URI).replace("\"token_uri\":\"" + TOKEN_URI + "\"", "\"x\":1");

        assertThat(FcmCredentials.parse("fcm", json).tokenUri()).isEqualTo(FcmCredentials.GOOGLE_TOKEN_URI);
    }

    @Test
    void textThatIsNotJsonIsRejected() {
        assertThat(details("not json {")).containsExactly(
                new Violation("fcm.service_account", "must be a Google service-account JSON object"));
        assertThat(details("[1,2]")).containsExactly(
                new Violation("fcm.service_account", "must be a Google service-account JSON object"));
        assertThat(details("")).hasSize(1);
    }

    @Test
    void jsonThatIsNotAServiceAccountIsRejected() {
        String userCredentials = ACCOUNT.json(TOKEN_URI).replace("\"service_account\"", "\"authorized_user\"");

        assertThat(details(userCredentials)).containsExactly(new Violation("fcm.service_account.type",
                "must be \"service_account\" (a service-account key file)"));
    }

    @Test
    void missingProjectIdIsRejected() {
        String json = ACCOUNT.json(TOKEN_URI).replace("\"project_id\":\"demo-project\"", "\"project\":\"x\"");

        assertThat(details(json)).containsExactly(new Violation("fcm.service_account.project_id", "is required"));
    }

    @Test
    void badPrivateKeyIsRejectedWithoutEchoingIt() {
        String pem = ACCOUNT.privateKeyPem().replace("\n", "\\n");
        String corrupted = pem.substring(0, 60) + "AAAA" + pem.substring(80);
        String json = ACCOUNT.json(TOKEN_URI).replace(pem, corrupted);

        InvalidInput e = catchThrowableOfType(InvalidInput.class, () -> FcmCredentials.parse("fcm.service_account", json));

        assertThat(e.violations()).containsExactly(new Violation("fcm.service_account.private_key",
                "must be a PEM-encoded PKCS#8 RSA private key"));
        assertThat(e.getMessage()).doesNotContain("AAAA");
    }

    @Test
    void pkcs1KeyIsRejected() {
        String pem = ACCOUNT.privateKeyPem().replace("\n", "\\n");
        String pkcs1 = pem.replace("BEGIN PRIVATE KEY", "BEGIN RSA PRIVATE KEY").replace("END PRIVATE KEY", "END RSA PRIVATE KEY");

        assertThat(details(ACCOUNT.json(TOKEN_URI).replace(pem, pkcs1)))
                .extracting(Violation::field).containsExactly("fcm.service_account.private_key");
    }

    @Test
    void everyProblemIsReportedAtOnce() {
        String json = "{\"type\":\"service_account\",\"client_email\":\"nobody\",\"private_key\":\"garbage\","
                + "\"token_uri\":\"ftp://example.com/token\"}";

        assertThat(details(json)).extracting(Violation::field).containsExactly(
                "fcm.service_account.project_id", "fcm.service_account.client_email",
                "fcm.service_account.private_key", "fcm.service_account.token_uri");
    }

    private static java.util.List<Violation> details(String json) {
        InvalidInput e = catchThrowableOfType(InvalidInput.class, () -> FcmCredentials.parse("fcm.service_account", json));
        assertThat(e).as("rejected").isNotNull();
        return e.violations();
    }
}
