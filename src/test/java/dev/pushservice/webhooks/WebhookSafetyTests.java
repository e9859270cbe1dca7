package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.support.TestNames;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * With {@code PUSH_WEBHOOKS_ALLOW_INSECURE} off (the default): http:// and loopback, private or
 * link-local URLs are refused at creation, and a delivery to a name or literal resolving to 127.0.0.1
 * or ::1 is refused where the connection is made, also when the name passed creation (DNS rebinding:
 * names under {@code .webhook.test} resolve as a test says, {@link TestNames}); the loopback receiver
 * never sees a request.
 */
class WebhookSafetyTests {

    private static final WebhookProperties SAFE = new WebhookProperties(false, Duration.ofSeconds(2), 0, 0, null, null, null, null);
    private static final WebhookService SERVICE = new WebhookService(null, null, null, SAFE, Clock.systemUTC());

    private Receiver receiver;

    @BeforeEach
    void start() {
        receiver = new Receiver();
    }

    @AfterEach
    void stop() {
        receiver.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://hooks.example.com/x", "https://127.0.0.1/x", "https://[::1]/x", "https://localhost/x",
            "https://10.0.0.8/x", "https://169.254.169.254/latest/meta-data", "https://[fd00:ec2::254]/", "https://[::ffff:127.0.0.1]/",
            "https://0x7f000001/x", "https://user:pw@hooks.example.com/", "hooks.example.com/x", "https:///x"})
    void unsafeUrlsAreRefusedAtCreation(String url) {
        assertThatThrownBy(() -> SERVICE.checkUrl(url)).isInstanceOf(InvalidInput.class)
                .satisfies(e -> assertThat(((InvalidInput) e).violations()).allMatch(v -> v.field().equals("url")));
    }

    @Test
    void aPublicHttpsUrlIsAccepted() {
        assertThatCode(() -> SERVICE.checkUrl("https://hooks.example.com/push?x=1")).doesNotThrowAnyException();
    }

    /**
     * DNS rebinding: a name that looks public passes creation (no lookup then), and resolves to a
     * loopback address (only, or among public ones) when the attempt is made; the attempt is refused
     * before connecting. The same name with the insecure setting reaches the receiver, so the refusal
     * is the address check and not a failed lookup.
     */
    @ParameterizedTest
    @CsvSource({"rebound-v4.webhook.test, 127.0.0.1", "rebound-v6.webhook.test, ::1",
            "rebound-mixed.webhook.test, 93.184.216.34 127.0.0.1"})
    void aNameResolvingToLoopbackWhenSendingIsRefusedThoughCreationAcceptedIt(String name, String addresses) {
        TestNames.point(name, addresses.split(" "));
        String url = receiver.url("/rebound").replace("http://127.0.0.1", "https://" + name);
        assertThatCode(() -> SERVICE.checkUrl(url)).doesNotThrowAnyException();
        try (WebhookSender sender = new WebhookSender(SAFE, Clock.systemUTC())) {
            WebhookSender.Answer answer = sender.send(url, UUID.randomUUID(), "{}", List.of("whsec_" + "A".repeat(44)));
            assertThat(answer.status()).isZero();
            assertThat(answer.error()).isEqualTo("address_refused");
        }
        assertThat(receiver.count("/rebound")).isZero();
    }

    @org.junit.jupiter.api.Test
    void theRebindingNameReachesTheReceiverWhenLoopbackIsAllowed() {
        TestNames.point("rebound-allowed.webhook.test", "127.0.0.1");
        String url = receiver.url("/rebound").replace("127.0.0.1", "rebound-allowed.webhook.test");
        WebhookProperties insecure = new WebhookProperties(true, Duration.ofSeconds(2), 0, 0, null, null, null, null);
        try (WebhookSender sender = new WebhookSender(insecure, Clock.systemUTC())) {
            assertThat(sender.send(url, UUID.randomUUID(), "{}", List.of("whsec_" + "A".repeat(44))).status()).isEqualTo(200);
        }
        assertThat(receiver.count("/rebound")).isEqualTo(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "127.0.0.1", "[::1]"})
    void deliveriesToLoopbackAreRefusedWhereTheConnectionIsMade(String host) {
        String url = receiver.url("/never").replace("127.0.0.1", host);
        try (WebhookSender sender = new WebhookSender(SAFE, Clock.systemUTC())) {
            WebhookSender.Answer answer = sender.send(url, UUID.randomUUID(), "{}", List.of("whsec_" + "A".repeat(44)));
            assertThat(answer.status()).isZero();
            assertThat(answer.error()).isEqualTo("address_refused");
        }
        assertThat(receiver.count("/never")).isZero();
    }
}
