package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * The recipient counts the database keeps per notification (V46) against the recipient rows, and the
 * reads that use them (issue 29 item 3, issue 27's live report). Every {@link PeerApiTest} also checks
 * its notifications' counts against their rows after each test ({@link PeerApiTest#countMismatches}).
 */
class NotificationCountsTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    @Autowired
    NotificationPages pages;

    @Autowired
    NotificationRepository notifications;

    /**
     * A send whose peers refuse some pushes for good and answer others "try later" for a while: at every
     * moment looked at (fan-out, hand-over, claims, retries, refusals, the finishing) the kept counts
     * are exactly what the rows give, and the API's counts are those.
     */
    @Test
    void theCountsEqualTheRecipientRowsAtEveryMomentOfASendWithRefusalsAndRetries() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> flaky = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            String token = TestTokens.fcm();
            flaky.add(token);
            FCM.replyFor(token, LocalFcmServer.Reply.error(503, "UNAVAILABLE", null, "try later"));
            register(app, "android", token, "");
        }
        for (int i = 0; i < 3; i++) {
            String token = TestTokens.fcm();
            FCM.replyFor(token, LocalFcmServer.Reply.unregistered());
            register(app, "android", token, "");
        }
        for (int i = 0; i < 20; i++) register(app, "android", TestTokens.fcm(), "");
        for (int i = 0; i < 3; i++) {
            String token = TestTokens.apns();
            APNS_UNREGISTERED.put(token, java.time.Instant.now());
            register(app, "ios", token, "");
        }
        for (int i = 0; i < 20; i++) register(app, "ios", TestTokens.apns(), "");
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        WEB.answer(browser.id(), LocalWebPushReceiver.Answer.retryAfter(429, "1"));
        register(app, "web", browser.json(), "");

        String id = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");

        int looks = 0;
        boolean sawRetries = false;
        while (looks < 400) {
            assertThat(countMismatches(jdbc, List.of(app.appId()))).as("at look " + looks).isEmpty();
            JsonNode now = summary(app, id);
            looks++;
            sawRetries |= now.path("counts").path("pending").asLong() > 0 && now.path("counts").path("accepted").asLong() > 0;
            if (sawRetries && flaky.stream().allMatch(t -> FCM.receivedFor(t).size() >= 2)) break;
            Thread.sleep(10);
        }
        assertThat(sawRetries).as("a moment with recipients accepted and others waiting for a retry was looked at").isTrue();
        flaky.forEach(t -> FCM.replyFor(t, LocalFcmServer.Reply.ok()));
        WEB.answer(browser.id(), null);
        while (!List.of("completed", "failed").contains(summary(app, id).path("status").asString())) {
            assertThat(countMismatches(jdbc, List.of(app.appId()))).isEmpty();
            Thread.sleep(10);
        }
        JsonNode done = finished(app, id);
        assertThat(done.path("recipient_count").asLong()).isEqualTo(53);
        assertThat(done.path("accepted_count").asLong()).isEqualTo(47);
        assertThat(done.path("counts").path("invalid_token").asLong()).isEqualTo(6);
        assertThat(countMismatches(jdbc, List.of(app.appId()))).isEmpty();
        // the finishing folded them: a row per key (two when the recurring fold held some at that moment)
        assertThat(jdbc.sql("""
                        select count(*) <= 2 * count(distinct (platform, status, reason)) from notification_counts
                        where notification_id = cast(:id as uuid)""").param("id", id).query(Boolean.class).single()).isTrue();
    }

    /**
     * {@code GET /v1/notifications/{id}}, the list and the report page of a running notification read
     * the kept counts, not the recipient rows: a count added to them (and to nothing else) shows in
     * all three. Its recipients wait for their local delivery time, hours away, so it stays processing.
     */
    @Test
    void theReadsOfARunningNotificationComeFromTheCountsNotTheRecipientRows() throws Exception {
        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 4; i++) register(app, "ios", TestTokens.apns(), ",\"timezone\":\"UTC\"");
        String local = java.time.Instant.now().plus(java.time.Duration.ofHours(6)).toString().substring(11, 16);
        String id = send(app, "{\"title\":\"a\",\"body\":\"b\",\"local_delivery_time\":\"" + local
                + "\",\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> summary(app, id).path("recipient_count").asLong() == 4);
        JsonNode before = summary(app, id);
        assertThat(before.path("status").asString()).isEqualTo("processing");
        UUID notification = UUID.fromString(id);
        NotificationPages.Report report = pages.report(app.appId(), pages.get(app.appId(), notification));
        long reportAccepted = report.total().accepted();
        long reportFailed = report.total().failed();

        jdbc.sql("""
                        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                        values (:id, :app, 'ios', 'accepted', null, 1000), (:id, :app, 'ios', 'failed', 'bad_device_token', 7)""")
                .param("id", notification).param("app", app.appId()).update();
        try {
            JsonNode after = summary(app, id);
            assertThat(after.path("accepted_count").asLong()).isEqualTo(before.path("accepted_count").asLong() + 1000);
            assertThat(after.path("counts").path("failed").asLong()).isEqualTo(before.path("counts").path("failed").asLong() + 7);
            assertThat(after.path("platforms").path("ios").path("recipients").asLong())
                    .isEqualTo(before.path("platforms").path("ios").path("recipients").asLong() + 1007);

            TestApi.Response list = api.get("/v1/notifications", app.serverKey());
            assertThat(list.status()).as(list.toString()).isEqualTo(200);
            assertThat(list.json().path("data").get(0).path("accepted_count").asLong())
                    .isEqualTo(before.path("accepted_count").asLong() + 1000);

            NotificationPages.Report counted = pages.report(app.appId(), pages.get(app.appId(), notification));
            assertThat(counted.total().accepted()).isEqualTo(reportAccepted + 1000);
            assertThat(counted.total().failed()).isEqualTo(reportFailed + 7);
            assertThat(counted.failures()).anyMatch(r -> r.reason().equals("bad_device_token") && r.total() == 7);
        } finally {
            // taken back as a statement would (the fold may have summed them into other rows meanwhile)
            jdbc.sql("""
                            insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                            values (:id, :app, 'ios', 'accepted', null, -1000), (:id, :app, 'ios', 'failed', 'bad_device_token', -7)""")
                    .param("id", notification).param("app", app.appId()).update();
        }
    }

    /** Folding leaves a row per key with the same sums; a fold of nothing to fold changes nothing. */
    @Test
    void foldingKeepsTheSums() throws Exception {
        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 5; i++) register(app, "android", TestTokens.fcm(), "");
        String id = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        finished(app, id);
        UUID notification = UUID.fromString(id);
        // deltas as statements add them
        jdbc.sql("""
                        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                        values (:id, :app, 'android', 'pending', null, 3), (:id, :app, 'android', 'pending', null, -3),
                               (:id, :app, 'android', 'accepted', null, 2), (:id, :app, 'android', 'accepted', null, -2)""")
                .param("id", notification).param("app", app.appId()).update();
        notifications.foldCounts(List.of(notification));
        notifications.foldCounts(List.of(notification));
        assertThat(jdbc.sql("select count(*) from notification_counts where notification_id = :id").param("id", notification)
                .query(Long.class).single()).isEqualTo(1);
        assertThat(jdbc.sql("select sum(count) from notification_counts where notification_id = :id and status = 'accepted'")
                .param("id", notification).query(Long.class).single()).isEqualTo(5);
        assertThat(countMismatches(jdbc, List.of(app.appId()))).isEmpty();
    }
}
