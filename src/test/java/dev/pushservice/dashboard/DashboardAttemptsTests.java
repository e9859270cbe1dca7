package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import dev.pushservice.support.TestTokens;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.json.JsonMapper;

/**
 * Attempt history on the dashboard (issue 27), against real peers: a recipient the local FCM server
 * refuses with 503 twice and then accepts shows each attempt with its answer on its timeline, then
 * its outcome; a recipient accepted at its first attempt keeps no attempt row. A webhook endpoint
 * answering 500 then 200 shows both attempts of its delivery on the webhook's page. Retries are
 * reached by moving the application's clock past their scheduled time, not by waiting.
 */
class DashboardAttemptsTests extends DashboardTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final LocalFcmServer FCM = new LocalFcmServer(0).start();

    @DynamicPropertySource
    static void fcm(DynamicPropertyRegistry registry) {
        registry.add("push.fcm.base-url", () -> FCM.baseUrl().toString());
    }

    @Autowired
    JdbcClient jdbc;

    @Autowired
    TestClock clock;

    private HttpServer endpoint;

    @AfterEach
    void restore() {
        clock.reset();
        if (endpoint != null) endpoint.stop(0);
    }

    @AfterAll
    static void stopFcm() {
        FCM.close();
    }

    private String register(TestApp app, String token) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":" + JSON.writeValueAsString(token) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("device_id").asString();
    }

    private void fcmCredentials(TestApp app) {
        LocalServiceAccount account = LocalServiceAccount.registeredWith(FCM, "attempts-" + app.appId());
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(),
                "{\"fcm\":{\"service_account\":" + account.json(FCM.tokenUri()) + "}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    private String send(TestApp app, String body) {
        TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    /** The recipient's stored state: status, attempts, last error. */
    private String state(String notification, String device) {
        return jdbc.sql("""
                        select status || ' ' || attempts || ' ' || coalesce(last_error, '-') from notification_recipient_states
                        where notification_id = cast(:n as uuid) and device_id = cast(:d as uuid)""")
                .param("n", notification).param("d", device).query(String.class).optional().orElse("none");
    }

    private long attemptRows(String notification, String device) {
        return jdbc.sql("select count(*) from delivery_attempts where notification_id = cast(:n as uuid) and device_id = cast(:d as uuid)")
                .param("n", notification).param("d", device).query(Long.class).single();
    }

    private static String section(String html, String device) {
        int start = html.indexOf("data-device=\"" + device + "\"");
        assertThat(start).as("the device's section").isNotNegative();
        return html.substring(start, html.indexOf("</section>", start));
    }

    @Test
    void aRecipientRefusedTwiceThenAcceptedShowsEachAttemptWithItsAnswerThenItsOutcome() {
        TestApp app = newApp();
        fcmCredentials(app);
        String flakyToken = TestTokens.fcm();
        String flaky = register(app, flakyToken);
        String steady = register(app, TestTokens.fcm());
        // FCM is unavailable for this token and asks for a minute: the retry is due when the clock says so
        FCM.replyFor(flakyToken, LocalFcmServer.Reply.error(503, "UNAVAILABLE", null, "The service is currently unavailable.")
                .withHeader("Retry-After", "60"));
        String id = send(app, "{\"title\":\"Hi\",\"body\":\"There\",\"ttl\":86400,\"target\":{\"type\":\"all\"}}");

        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> state(id, flaky).equals("pending 1 provider_unavailable")
                && state(id, steady).startsWith("accepted 1"));
        // the recipient accepted at its first attempt: its row is its whole history
        assertThat(attemptRows(id, steady)).isZero();
        assertThat(attemptRows(id, flaky)).isEqualTo(1);

        clock.advance(Duration.ofSeconds(61));
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> state(id, flaky).equals("pending 2 provider_unavailable"));
        FCM.replyFor(flakyToken, LocalFcmServer.Reply.ok());
        clock.advance(Duration.ofSeconds(61));
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> state(id, flaky).startsWith("accepted 3"));
        assertThat(attemptRows(id, flaky)).as("the two refused attempts; the accepted one is the recipient's row").isEqualTo(2);
        assertThat(attemptRows(id, steady)).isZero();
        assertThat(jdbc.sql("select count(*) from delivery_attempts where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isEqualTo(2);

        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String base = "/dashboard/apps/" + app.appId() + "/notifications/" + id + "/recipients";
        HttpResponse<String> page = browser.get(base + "?device=" + flaky);
        assertThat(page.statusCode()).isEqualTo(200);
        String timeline = section(page.body(), flaky);
        // attempt 1 and 2 with their answer (reason code and the provider's HTTP status), in time order, then the outcome
        Matcher attempts = Pattern.compile("class=\"attempt\" data-attempt=\"(\\d)\" data-outcome=\"retry\">(?s).*?</li>").matcher(timeline);
        List<String> numbers = new ArrayList<>();
        while (attempts.find()) {
            numbers.add(attempts.group(1));
            assertThat(attempts.group()).contains("provider_unavailable", "HTTP <span class=\"http\">503</span>");
        }
        assertThat(numbers).containsExactly("1", "2");
        int outcome = timeline.indexOf("class=\"outcome\" data-attempt=\"3\"");
        assertThat(outcome).as("the outcome, after the attempts").isGreaterThan(timeline.lastIndexOf("data-outcome=\"retry\""));
        assertThat(timeline.substring(outcome)).contains("status-accepted");
        assertThat(page.body()).doesNotContain(flakyToken).doesNotContain("currently unavailable")
                .doesNotContainPattern("<script(?![^>]*src=)").doesNotContain("style=");

        // the steady device's timeline: its outcome alone
        String steadyTimeline = section(browser.get(base + "?device=" + steady).body(), steady);
        assertThat(steadyTimeline).contains("status-accepted").doesNotContain("data-outcome=");
        // another organisation's member: the same 404 as ever
        assertThat(signedIn(newApp(), MemberRole.OWNER).get(base + "?device=" + flaky).statusCode()).isEqualTo(404);
    }

    @Test
    void aWebhookDeliveryAnswered500Then200ShowsBothAttemptsOnTheDeliveriesPage() throws Exception {
        ConcurrentLinkedQueue<Integer> script = new ConcurrentLinkedQueue<>(List.of(500, 200));
        endpoint = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        endpoint.createContext("/hook", exchange -> {
            exchange.getRequestBody().readAllBytes();
            Integer status = script.poll();
            byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status == null ? 200 : status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        endpoint.start();
        TestApp app = newApp();
        TestApi.Response created = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"http://127.0.0.1:"
                + endpoint.getAddress().getPort() + "/hook\",\"events\":[\"*\"]}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        String webhook = created.json().path("webhook_id").asString();
        TestApi.Response queued = api.send(api.request("/v1/webhooks/" + webhook + "/test", app.serverKey())
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(queued.status()).as(queued.toString()).isEqualTo(202);
        String delivery = queued.json().path("delivery_id").asString();

        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> "pending 1 500".equals(deliveryState(delivery)));
        clock.advance(Duration.ofSeconds(5)); // the schedule's first wait
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> "succeeded 2 200".equals(deliveryState(delivery)));
        assertThat(jdbc.sql("select count(*) from webhook_delivery_attempts where delivery_id = cast(:d as uuid)")
                .param("d", delivery).query(Long.class).single()).as("the 500; the 200 is the delivery's own row").isEqualTo(1);

        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> page = browser.get("/dashboard/apps/" + app.appId() + "/webhooks/" + webhook);
        assertThat(page.statusCode()).isEqualTo(200);
        String html = page.body();
        int start = html.indexOf("data-attempts-of=\"" + delivery + "\"");
        assertThat(start).as("the delivery's attempts").isNotNegative();
        String attempts = html.substring(start, html.indexOf("</tr>", start));
        assertThat(attempts).contains("2 attempts").containsPattern(
                "data-attempt=\"1\">(?s).*?<strong class=\"code\">500</strong>\\s*<code>server_error</code>.*?</li>"
                        + ".*?data-attempt=\"2\">.*?<strong class=\"code\">200</strong>.*?succeeded.*?</li>");
        assertThat(html).doesNotContainPattern("<script(?![^>]*src=)").doesNotContain("style=");
        assertThat(signedIn(newApp(), MemberRole.OWNER).get("/dashboard/apps/" + app.appId() + "/webhooks/" + webhook)
                .statusCode()).isEqualTo(404);
    }

    private String deliveryState(String delivery) {
        return jdbc.sql("select status || ' ' || attempts || ' ' || coalesce(last_status_code::text, '-') from webhook_deliveries"
                        + " where id = cast(:d as uuid)")
                .param("d", delivery).query(String.class).optional().orElse("none");
    }
}
