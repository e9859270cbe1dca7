package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.standardwebhooks.Webhook;
import dev.pushservice.delivery.apns.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One attempt over real TLS and against receivers that never answer, without the application: HTTPS
 * to a loopback receiver whose CA is trusted only through {@code PUSH_WEBHOOKS_TRUSTED_CA_FILE}, the
 * reason recorded when it is not (or the certificate names another host), and the timeout bounding
 * an attempt whether the receiver hangs in the TLS handshake or after the request.
 */
class WebhookSenderTests {

    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final String SECRET = "whsec_" + java.util.Base64.getEncoder().encodeToString(new byte[32]);
    private static final String BODY = "{\"type\":\"webhook.test\",\"timestamp\":\"2026-11-24T00:00:00.000Z\",\"data\":{}}";

    @TempDir
    static Path dir;
    private static Path caFile;

    @BeforeAll
    static void writeCa() throws Exception {
        caFile = Files.writeString(dir.resolve("ca.pem"), TestCertificates.pem(TestCertificates.shared().ca));
    }

    /** Loopback allowed (the receivers are local), the test CA trusted or not. */
    private static WebhookSender sender(Path trustedCa) {
        return new WebhookSender(new WebhookProperties(true, TIMEOUT, 0, 0, null, null, null, trustedCa), Clock.systemUTC());
    }

    private static Receiver httpsReceiver() {
        TestCertificates pki = TestCertificates.shared();
        return Receiver.https(pki.serverKeys.getPrivate(), pki.server, pki.ca);
    }

    @Test
    void httpsToAReceiverOfTheTrustedCaIsDeliveredAndVerifies() {
        try (Receiver receiver = httpsReceiver(); WebhookSender sender = sender(caFile)) {
            UUID id = UUID.randomUUID();
            WebhookSender.Answer answer = sender.send(receiver.url("/tls"), id, BODY, List.of(SECRET));
            assertThat(answer.error()).isNull();
            assertThat(answer.status()).isEqualTo(200);
            Receiver.Request r = receiver.next("/tls", Duration.ofSeconds(5));
            assertThat(r.header("webhook-id")).isEqualTo(id.toString());
            assertThatCode(() -> new Webhook(SECRET).verify(r.body(), r.headers())).doesNotThrowAnyException();
        }
    }

    @Test
    void withoutTheCaSettingTheCertificateIsNotTrusted() {
        try (Receiver receiver = httpsReceiver(); WebhookSender sender = sender(null)) {
            WebhookSender.Answer answer = sender.send(receiver.url("/tls"), UUID.randomUUID(), BODY, List.of(SECRET));
            assertThat(answer.status()).isZero();
            assertThat(answer.error()).isEqualTo("certificate_untrusted");
            assertThat(receiver.count("/tls")).isZero();
        }
    }

    @Test
    void aCertificateOfAnotherCaIsNotTrustedEvenWithTheSetting() {
        TestCertificates other = TestCertificates.unrelated();
        try (Receiver receiver = Receiver.https(other.serverKeys.getPrivate(), other.server, other.ca);
             WebhookSender sender = sender(caFile)) {
            WebhookSender.Answer answer = sender.send(receiver.url("/tls"), UUID.randomUUID(), BODY, List.of(SECRET));
            assertThat(answer.error()).isEqualTo("certificate_untrusted");
            assertThat(receiver.count("/tls")).isZero();
        }
    }

    @Test
    void aCertificateForAnotherHostIsRefused() throws Exception {
        TestCertificates pki = TestCertificates.shared();
        try (Receiver receiver = Receiver.https(pki.serverKeys.getPrivate(), pki.serverNamed("hooks.example.com"), pki.ca);
             WebhookSender sender = sender(caFile)) {
            WebhookSender.Answer answer = sender.send(receiver.url("/tls"), UUID.randomUUID(), BODY, List.of(SECRET));
            assertThat(answer.error()).isEqualTo("certificate_hostname_mismatch");
            assertThat(receiver.count("/tls")).isZero();
        }
    }

    @Test
    void aReceiverThatNeverAnswersCostsOneTimeoutWhetherInTheHandshakeOrAfterTheRequest() {
        try (BlackHole hole = new BlackHole(); WebhookSender sender = sender(caFile)) {
            for (String scheme : List.of("http", "https")) {
                long started = System.nanoTime();
                WebhookSender.Answer answer = sender.send(hole.url(scheme, "/never"), UUID.randomUUID(), BODY, List.of(SECRET));
                Duration took = Duration.ofNanos(System.nanoTime() - started);
                assertThat(answer.error()).as(scheme).isEqualTo("timeout");
                assertThat(took).as(scheme).isGreaterThanOrEqualTo(TIMEOUT.minusMillis(100))
                        .isLessThan(TIMEOUT.plusSeconds(3));
            }
            assertThat(hole.accepted()).isEqualTo(2);
        }
    }
}
