package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Recipients a fan-out page hands straight to its instance's lane have no row until their outcome
 * is recorded; a handover row lists them, leased to that instance. When the instance stops with
 * handed recipients unsent, another instance sends them once the lease ends, and a cancelled
 * notification's are made cancelled. Meanwhile the API shows them {@code sending}. Two application
 * instances on one database, one after the other, sending to a local FCM peer.
 */
class HandoverRecoveryTests {

    private static final int DEVICES = 400;
    private static final int IN_FLIGHT = 50;

    private final DatabaseUrl db = TestDatabase.newDatabase();
    private final LocalFcmServer fcm = new LocalFcmServer(0).start();

    @AfterEach
    void stopPeer() {
        fcm.close();
    }

    private AppInstance.Builder instance() {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", "api,scheduler,worker")
                .set("push.fcm.base-url", fcm.baseUrl().toString())
                .set("push.fcm.max-in-flight", String.valueOf(IN_FLIGHT))
                // longer than the first instance's shutdown (its lanes drain for up to 10 s) and the second's start
                .set("push.delivery.lease", "25s")
                .set("push.delivery.cancelled-sweep-interval", "1s");
    }

    private record Setup(String key, List<String> tokens) {
    }

    private Setup setUp(AppInstance instance, String name) {
        TenantService tenants = instance.bean(TenantService.class);
        Tenants.Organisation org = tenants.createOrganisation(name);
        Tenants.App app = tenants.createApp(org.id(), name, "UTC");
        String key = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
        LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "handover-" + app.id());
        TestApi.Response settings = instance.api.patch("/v1/app/settings", key,
                "{\"fcm\":{\"service_account\":" + account.json(fcm.tokenUri()) + "}}");
        assertThat(settings.status()).as(settings.toString()).isEqualTo(200);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < DEVICES; i++) {
            String token = "handover-" + UUID.randomUUID();
            tokens.add(token);
            // IN_FLIGHT at a time, five seconds each: most of the page still waits in the lane's queue when
            // the instance has stopped (its lanes send for at most 10 s of the shutdown)
            fcm.replyFor(token, LocalFcmServer.Reply.ok().delayed(Duration.ofSeconds(5)));
        }
        instance.jdbc().sql("""
                        insert into devices (id, app_id, platform, token, token_hash)
                        select gen_random_uuid(), :app, 'android', t, sha256(convert_to(t, 'UTF8'))
                        from unnest(cast(:tokens as text[])) as t""")
                .param("app", app.id()).param("tokens", tokens.toArray(String[]::new)).update();
        return new Setup(key, tokens);
    }

    private static String sendToAll(AppInstance instance, String key) throws Exception {
        TestApi.Response created = instance.api.send(instance.api.request("/v1/notifications", key)
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"bulk\",\"target\":{\"type\":\"all\"}}")));
        assertThat(created.status()).as(created.toString()).isEqualTo(202);
        return created.json().path("notification_id").asString();
    }

    private static long handoverRows(JdbcClient jdbc, String id) {
        return jdbc.sql("select count(*) from notification_handovers where notification_id = cast(:id as uuid)")
                .param("id", id).query(Long.class).single();
    }

    /** Recipients recorded: their rows, and the members of batches (accepted at the first attempt, V58). */
    private static long recipientRows(JdbcClient jdbc, String id) {
        return jdbc.sql("""
                        select (select count(*) from notification_recipients where notification_id = cast(:id as uuid))
                               + (select coalesce(sum(cardinality(device_ids)), 0) from notification_recipient_batches
                                  where notification_id = cast(:id as uuid))""")
                .param("id", id).query(Long.class).single();
    }

    /** The provider answers at once from now on. */
    private void answerAtOnce(List<String> tokens) {
        for (String token : tokens) fcm.replyFor(token, LocalFcmServer.Reply.ok());
    }

    private Map<String, Integer> receivedPerToken(List<String> tokens) {
        Map<String, Integer> counts = new HashMap<>();
        for (String token : tokens) counts.put(token, fcm.receivedFor(token).size());
        return counts;
    }

    private record Stopped(Setup setup, String id) {
    }

    /**
     * A send to every device on an instance that stops while most of its handed recipients wait in its
     * lane's queue; the provider answers at once from then on.
     */
    private Stopped handOverAndStop(String name) throws Exception {
        Stopped stopped;
        try (AppInstance first = instance().start()) {
            Setup setup = setUp(first, name);
            String id = sendToAll(first, setup.key());
            JdbcClient jdbc = first.jdbc();
            // the page is handed over: one handover lists its recipients, none has a row before its outcome
            await().atMost(Duration.ofSeconds(20)).until(() -> handoverRows(jdbc, id) > 0);
            assertThat(recipientRows(jdbc, id)).isLessThan(DEVICES);
            stopped = new Stopped(setup, id);
        }
        answerAtOnce(stopped.setup().tokens());
        return stopped;
    }

    private static Map<String, Long> statuses(JdbcClient jdbc, String id) {
        Map<String, Long> byStatus = new HashMap<>();
        jdbc.sql("select status, count(*) as n from notification_recipient_states where notification_id = cast(:id as uuid)"
                        + " group by status").param("id", id)
                .query(rs -> {
                    byStatus.put(rs.getString("status"), rs.getLong("n"));
                });
        return byStatus;
    }

    @Test
    void recipientsHandedToAnInstanceThatStoppedAreSentByAnotherOnceTheLeaseEnds() throws Exception {
        Stopped stopped = handOverAndStop("handover recovery");
        Setup setup = stopped.setup();
        String id = stopped.id();
        // the instance is gone with recipients handed to it and never sent
        try (AppInstance second = instance().start()) {
            JdbcClient jdbc = second.jdbc();
            long unrecorded = jdbc.sql("select coalesce(sum(handed - recorded), 0) from notification_handovers"
                    + " where notification_id = cast(:id as uuid)").param("id", id).query(Long.class).single();
            long rows = recipientRows(jdbc, id);
            assertThat(unrecorded).as("recipients left handed over and unrecorded").isPositive();
            assertThat(rows + unrecorded).isEqualTo(DEVICES);

            // until their lease ends they are shown sending, each once, and counted
            JsonNode summary = second.api.get("/v1/notifications/" + id, setup.key()).json();
            assertThat(summary.path("status").asString()).isEqualTo("processing");
            assertThat(summary.path("recipient_count").asLong()).isEqualTo(DEVICES);
            assertThat(summary.path("counts").path("sending").asLong()).isGreaterThanOrEqualTo(unrecorded);
            List<JsonNode> listed = new ArrayList<>();
            for (int page = 1; ; page++) {
                JsonNode body = second.api.get("/v1/notifications/" + id + "/recipients?limit=100&page=" + page,
                        setup.key()).json();
                body.path("data").forEach(listed::add);
                if (body.path("data").size() < 100) break;
            }
            assertThat(listed).hasSize(DEVICES);
            assertThat(listed.stream().map(r -> r.path("device_id").asString()).distinct()).hasSize(DEVICES);
            assertThat(listed.stream().filter(r -> r.path("status").asString().equals("sending")).count())
                    .isGreaterThanOrEqualTo(unrecorded);
            // and by cursor, in pages that end inside the hand-over's entries: each once, in the list's order
            List<String> walked = new ArrayList<>();
            String cursor = null;
            do {
                JsonNode body = second.api.get("/v1/notifications/" + id + "/recipients?limit=37"
                        + (cursor == null ? "" : "&cursor=" + cursor), setup.key()).json();
                body.path("data").forEach(r -> walked.add(r.path("device_id").asString()));
                JsonNode pagination = body.path("pagination");
                cursor = pagination.path("has_more").asBoolean() ? pagination.path("next_cursor").asString() : null;
            } while (cursor != null);
            assertThat(walked).hasSize(DEVICES).doesNotHaveDuplicates();
            assertThat(walked).containsExactlyElementsOf(listed.stream().map(r -> r.path("device_id").asString()).toList());

            await().atMost(Duration.ofSeconds(60)).until(() -> second.api.get("/v1/notifications/" + id, setup.key())
                    .json().path("status").asString().equals("completed"));
            assertThat(handoverRows(jdbc, id)).isZero();
            Map<String, Long> byStatus = statuses(jdbc, id);
            assertThat(byStatus).containsExactly(Map.entry("accepted", (long) DEVICES));
            // reclaimed ones count the attempt made at the hand-over and the one after the lease
            long reclaimed = jdbc.sql("select count(*) from notification_recipients where notification_id = cast(:id as uuid)"
                    + " and attempts = 2").param("id", id).query(Long.class).single();
            assertThat(reclaimed).isGreaterThanOrEqualTo(unrecorded);

            Map<String, Integer> received = receivedPerToken(setup.tokens());
            assertThat(received.values()).as("every device got the push").allMatch(n -> n >= 1);
            // only what was in flight when the first instance stopped (at most IN_FLIGHT) can arrive twice
            assertThat(received.values().stream().filter(n -> n > 1).count()).isLessThanOrEqualTo(IN_FLIGHT);
            assertThat(received.values()).allMatch(n -> n <= 2);
        }
    }

    @Test
    void handedRecipientsOfANotificationCancelledAfterTheirInstanceStoppedAreCancelled() throws Exception {
        Stopped stopped = handOverAndStop("handover cancel");
        Setup setup = stopped.setup();
        String id = stopped.id();
        try (AppInstance second = instance().start()) {
            JdbcClient jdbc = second.jdbc();
            assertThat(handoverRows(jdbc, id)).isPositive();
            TestApi.Response cancel = second.api.post("/v1/notifications/" + id + "/cancel", setup.key(), "");
            assertThat(cancel.status()).as(cancel.toString()).isEqualTo(200);

            // past the lease, the sweep gives every unrecorded handed recipient its row, cancelled; nothing
            // is left in flight (a send the stopping instance saw fail may have been retried meanwhile)
            await().atMost(Duration.ofSeconds(30)).until(() -> handoverRows(jdbc, id) == 0 && jdbc.sql(
                            "select count(*) from notification_recipients where notification_id = cast(:id as uuid)"
                                    + " and status in ('pending', 'sending')")
                    .param("id", id).query(Long.class).single() == 0);
            Map<String, Long> byStatus = statuses(jdbc, id);
            assertThat(byStatus.keySet()).containsOnly("accepted", "cancelled");
            assertThat(byStatus.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(DEVICES);
            assertThat(byStatus.get("cancelled")).isPositive();
            JsonNode summary = second.api.get("/v1/notifications/" + id, setup.key()).json();
            assertThat(summary.path("status").asString()).isEqualTo("cancelled");
            assertThat(summary.path("counts").path("sending").asLong()).isZero();
        }
    }
}
