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
import dev.pushservice.platform.jobs.WorkerPresence;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpRequest;
import tools.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * One large send spreads over the worker instances alive on the database (issue 29, item 1): each
 * delivers a fair share of it, while a worker alone still hands the send from its fan-out straight
 * to its lane. Application instances on one database, sending to a local FCM peer that answers each
 * push after {@link #REPLY_DELAY}, so delivery, not the fan-out, sets the pace (as with a real
 * provider) and each worker's share shows in its own {@code push.delivery.delivered} counter.
 */
class SpreadAcrossWorkersTests {

    private static final int DEVICES = 4_000;
    private static final Duration REPLY_DELAY = Duration.ofMillis(100);

    private final DatabaseUrl db = TestDatabase.newDatabase();
    private final LocalFcmServer fcm = new LocalFcmServer(0).start();

    @AfterEach
    void stopPeer() {
        fcm.close();
    }

    private AppInstance.Builder instance(String roles) {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", roles)
                .set("push.fcm.base-url", fcm.baseUrl().toString())
                .set("push.notifications.fanout-page-size", "500")
                .set("push.worker-heartbeat-interval", "1s");
    }

    /** A worker whose bulk lane has 20 in flight: at 100 ms a push ~200 a second, so the send lasts seconds. */
    private AppInstance.Builder slowWorker(String roles) {
        return instance(roles).set("push.delivery.lanes.bulk.in-flight", "20");
    }

    private record Setup(String key, List<String> tokens) {
    }

    /** Every device of the app gets the send: those of {@link #setUp} and the one of {@link #warmUp}. */
    private static final long RECIPIENTS = DEVICES + 1;

    private Setup setUp(AppInstance api, String name) throws Exception {
        TenantService tenants = api.bean(TenantService.class);
        Tenants.Organisation org = tenants.createOrganisation(name);
        Tenants.App app = tenants.createApp(org.id(), name, "UTC");
        String key = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
        LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "spread-" + app.id());
        TestApi.Response settings = api.api.patch("/v1/app/settings", key,
                "{\"fcm\":{\"service_account\":" + account.json(fcm.tokenUri()) + "}}");
        assertThat(settings.status()).as(settings.toString()).isEqualTo(200);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < DEVICES; i++) {
            String token = "spread-" + UUID.randomUUID();
            tokens.add(token);
            fcm.replyFor(token, LocalFcmServer.Reply.ok().delayed(REPLY_DELAY));
        }
        api.jdbc().sql("""
                        insert into devices (id, app_id, platform, token, token_hash)
                        select gen_random_uuid(), :app, 'android', t, sha256(convert_to(t, 'UTF8'))
                        from unnest(cast(:tokens as text[])) as t""")
                .param("app", app.id()).param("tokens", tokens.toArray(String[]::new)).update();
        warmUp(api, app.id(), key);
        return new Setup(key, tokens);
    }

    /**
     * One push to a device of its own through {@code api}'s worker, so its FCM token and connection
     * exist before the send: a first answer slowed by them (seconds on a loaded machine) would make
     * the fan-out's pages stop waiting for room and leave their recipients to any worker's claim.
     */
    private void warmUp(AppInstance api, UUID app, String key) throws Exception {
        String token = "warm-" + UUID.randomUUID();
        fcm.replyFor(token, LocalFcmServer.Reply.ok());
        UUID device = api.jdbc().sql("""
                        insert into devices (id, app_id, platform, token, token_hash)
                        values (gen_random_uuid(), :app, 'android', :t, sha256(convert_to(:t, 'UTF8'))) returning id""")
                .param("app", app).param("t", token).query(UUID.class).single();
        send(api, key, "{\"title\":\"warm\",\"body\":\"b\",\"priority\":\"transactional\","
                + "\"target\":{\"type\":\"device\",\"device_id\":\"" + device + "\"}}");
    }

    /** Sends to every device of the app and waits until the notification is completed; returns its id. */
    private static String sendToAllAndWait(AppInstance api, String key) throws Exception {
        return send(api, key, "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"bulk\",\"target\":{\"type\":\"all\"}}");
    }

    /** Creates the notification {@code body} and waits until it is completed; returns its id. */
    private static String send(AppInstance api, String key, String body) throws Exception {
        TestApi.Response created = api.api.send(api.api.request("/v1/notifications", key)
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(body)));
        assertThat(created.status()).as(created.toString()).isEqualTo(202);
        String id = created.json().path("notification_id").asString();
        await().atMost(Duration.ofSeconds(120)).until(() -> api.api.get("/v1/notifications/" + id, key)
                .json().path("status").asString().equals("completed"));
        return id;
    }

    /** Recipients the instance sent and FCM accepted, by how they reached its lane ({@code handed} or {@code claimed}). */
    private static double delivered(AppInstance instance, String via) {
        Counter c = instance.bean(MeterRegistry.class).find("push.delivery.delivered")
                .tags("lane", "bulk", "platform", "android", "via", via).counter();
        return c == null ? 0 : c.count();
    }

    private static double delivered(AppInstance instance) {
        return delivered(instance, "handed") + delivered(instance, "claimed");
    }

    private static Map<String, Long> statuses(JdbcClient jdbc, String id) {
        Map<String, Long> byStatus = new java.util.HashMap<>();
        jdbc.sql("select status, count(*) as n from notification_recipient_states where notification_id = cast(:id as uuid)"
                        + " group by status").param("id", id)
                .query(rs -> {
                    byStatus.put(rs.getString("status"), rs.getLong("n"));
                });
        return byStatus;
    }

    @Test
    void eachOfTwoWorkersDeliversAFairShareOfOneLargeSend() throws Exception {
        try (AppInstance first = slowWorker("api,scheduler,worker").start();
             AppInstance second = slowWorker("worker").start()) {
            // both know of each other before the send (a heartbeat a second)
            await().atMost(Duration.ofSeconds(20)).until(() -> first.bean(WorkerPresence.class).workers() == 2
                    && second.bean(WorkerPresence.class).workers() == 2);
            Setup setup = setUp(first, "spread two workers");

            double oneBefore = delivered(first);
            double twoBefore = delivered(second);

            String id = sendToAllAndWait(first, setup.key());

            assertThat(statuses(first.jdbc(), id)).containsExactly(Map.entry("accepted", RECIPIENTS));
            double one = delivered(first) - oneBefore;
            double two = delivered(second) - twoBefore;
            assertThat(one + two).as("every recipient delivered by one of the two, once").isEqualTo(RECIPIENTS);
            assertThat(one).as("the first worker's share (%s of %s)", one, RECIPIENTS).isGreaterThanOrEqualTo(RECIPIENTS * 0.35);
            assertThat(two).as("the second worker's share (%s of %s)", two, RECIPIENTS).isGreaterThanOrEqualTo(RECIPIENTS * 0.35);
            assertThat(setup.tokens()).allSatisfy(t -> assertThat(fcm.receivedFor(t)).hasSize(1));
            // every recipient reached a lane through a handover, the fan-out's own or one leased whole by the
            // other worker (V59), none as a row claimed one by one
            assertThat(delivered(first, "claimed") + delivered(second, "claimed")).as("claimed one by one").isZero();
        }
    }

    /**
     * Marks a worker that is never there as alive, so that the fan-out of {@code api} leaves each page but its
     * own share to the other worker's lease (V59); the lone real worker leases it all in the end.
     */
    private static void pretendASecondWorker(AppInstance api) {
        api.jdbc().sql("insert into worker_instances (name, started_at, seen_at) values ('elsewhere', now(), now() + interval '1 hour')")
                .update();
        await().atMost(Duration.ofSeconds(20)).until(() -> api.bean(WorkerPresence.class).workers() == 2);
    }

    /** A send made by {@link #sendLeavingMostUnleased}: the app's setup and the notification's id. */
    private record Unleased(Setup setup, String id) {
    }

    /** Sets up the app on {@code alone}, pretends a second worker ({@link #pretendASecondWorker}) and creates a bulk send to all. */
    private Unleased sendLeavingMostUnleased(AppInstance alone, String name) throws Exception {
        Setup setup = setUp(alone, name);
        pretendASecondWorker(alone);
        return new Unleased(setup, create(alone, setup.key(),
                "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"bulk\",\"target\":{\"type\":\"all\"}}"));
    }

    private static String create(AppInstance api, String key, String body) {
        TestApi.Response created = api.api.send(api.api.request("/v1/notifications", key)
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(body)));
        assertThat(created.status()).as(created.toString()).isEqualTo(202);
        return created.json().path("notification_id").asString();
    }

    /** The notification's counts as GET /v1/notifications/{id} shows them, the zeros left out. */
    private static Map<String, Long> counts(AppInstance api, String key, String id) {
        Map<String, Long> counts = new java.util.HashMap<>();
        api.api.get("/v1/notifications/" + id, key).json().path("counts").properties()
                .forEach(e -> { if (e.getValue().asLong() != 0) counts.put(e.getKey(), e.getValue().asLong()); });
        return counts;
    }

    @Test
    void recipientsLeftForAnyWorkerArePendingUntilALaneLeasesTheirHandoverWhole() throws Exception {
        try (AppInstance alone = slowWorker("api,scheduler,worker").start()) {
            double claimedBefore = delivered(alone, "claimed");
            Unleased send = sendLeavingMostUnleased(alone, "unleased");
            Setup setup = send.setup();
            String id = send.id();
            JdbcClient jdbc = alone.jdbc();
            // once every recipient exists (the fan-out takes well under a second), the devices last in the audience's
            // order (the last page's last 100) are disabled, long before the lane gets to lease their handovers
            await().atMost(Duration.ofSeconds(30)).until(() -> alone.api.get("/v1/notifications/" + id, setup.key())
                    .json().path("recipient_count").asLong() == RECIPIENTS);
            List<UUID> last = jdbc.sql("select id from devices where token like 'spread-%' order by created_at, id desc limit 100")
                    .query(UUID.class).list();
            jdbc.sql("update devices set enabled = false where id = any(:ids)")
                    .param("ids", last.toArray(UUID[]::new)).update();

            // while the one lane works through the send (~200 pushes a second), most of it waits in unleased
            // handovers: pending, no attempt, in the counts and in the list
            await().atMost(Duration.ofSeconds(30)).until(() -> counts(alone, setup.key(), id).getOrDefault("pending", 0L) > 1_000);
            long unleased = jdbc.sql("select coalesce(sum(handed), 0) from notification_handovers"
                            + " where notification_id = cast(:id as uuid) and lease_until is null").param("id", id)
                    .query(Long.class).single();
            assertThat(unleased).as("recipients in unleased handovers").isGreaterThan(1_000);
            // the lane's queue metric counts them (the claimer reads it every 5 s)
            await().atMost(Duration.ofSeconds(15)).until(() -> alone.bean(MeterRegistry.class).find("push.delivery.queue.depth")
                    .tags("lane", "bulk").gauge().value() > 500);
            assertThat(jdbc.sql("select count(*) from notification_recipients where notification_id = cast(:id as uuid)")
                    .param("id", id).query(Long.class).single()).as("no row for them").isLessThan(RECIPIENTS - unleased + 1);
            List<JsonNode> listed = new ArrayList<>();
            for (int n = 1; n <= 30; n++) {
                JsonNode page = alone.api.get("/v1/notifications/" + id + "/recipients?limit=200&page=" + n, setup.key()).json();
                page.path("data").forEach(listed::add);
                if (!page.path("pagination").path("has_more").asBoolean()) break;
            }
            assertThat(listed).hasSize((int) RECIPIENTS);
            assertThat(listed).filteredOn(r -> r.path("status").asString().equals("pending")).hasSizeGreaterThan(500)
                    .allSatisfy(r -> assertThat(r.path("attempts").asInt()).isZero());

            await().atMost(Duration.ofSeconds(120)).until(() -> alone.api.get("/v1/notifications/" + id, setup.key())
                    .json().path("status").asString().equals("completed"));
            assertThat(statuses(jdbc, id)).containsOnly(Map.entry("accepted", RECIPIENTS - 100), Map.entry("failed", 100L));
            assertThat(counts(alone, setup.key(), id)).containsOnly(Map.entry("accepted", RECIPIENTS - 100), Map.entry("failed", 100L));
            assertThat(jdbc.sql("select count(*) from notification_recipients where notification_id = cast(:id as uuid)"
                            + " and device_id = any(:ids) and status = 'failed' and last_error = 'device_disabled' and attempts = 0")
                    .param("id", id).param("ids", last.toArray(UUID[]::new)).query(Long.class).single())
                    .as("each disabled device failed by the lease, never attempted").isEqualTo(100);
            List<String> disabledTokens = jdbc.sql("select token from devices where id = any(:ids)")
                    .param("ids", last.toArray(UUID[]::new)).query(String.class).list();
            assertThat(disabledTokens).allSatisfy(t -> assertThat(fcm.receivedFor(t)).isEmpty());
            assertThat(delivered(alone, "claimed") - claimedBefore).as("claimed one by one").isZero();
            assertThat(jdbc.sql("select count(*) from notification_handovers where notification_id = cast(:id as uuid)")
                    .param("id", id).query(Long.class).single()).as("handovers left").isZero();
        }
    }

    @Test
    void aCancelTurnsUnleasedHandoversIntoCancelledRecipientsAndNothingIsSentAfterIt() throws Exception {
        try (AppInstance alone = slowWorker("api,scheduler,worker").start()) {
            Unleased send = sendLeavingMostUnleased(alone, "unleased cancel");
            Setup setup = send.setup();
            String id = send.id();
            JdbcClient jdbc = alone.jdbc();
            await().atMost(Duration.ofSeconds(30)).until(() -> counts(alone, setup.key(), id).getOrDefault("accepted", 0L) > 100
                    && counts(alone, setup.key(), id).getOrDefault("pending", 0L) > 1_000);

            TestApi.Response cancel = alone.api.post("/v1/notifications/" + id + "/cancel", setup.key(), "");
            assertThat(cancel.status()).as(cancel.toString()).isEqualTo(200);
            long sentAtCancel = setup.tokens().stream().filter(t -> !fcm.receivedFor(t).isEmpty()).count();

            await().atMost(Duration.ofSeconds(60)).until(() -> jdbc.sql(
                    "select count(*) from notification_handovers where notification_id = cast(:id as uuid)")
                    .param("id", id).query(Long.class).single() == 0
                    && !statuses(jdbc, id).containsKey("pending") && !statuses(jdbc, id).containsKey("sending"));
            Thread.sleep(REPLY_DELAY.toMillis() * 3); // answers of pushes written before the cancel answered
            long sent = setup.tokens().stream().filter(t -> !fcm.receivedFor(t).isEmpty()).count();
            // the lane's in-flight budget (20) may have been on its way out as the cancel answered, no more
            assertThat(sent - sentAtCancel).as("sent after the cancel answered").isLessThanOrEqualTo(20);
            Map<String, Long> statuses = statuses(jdbc, id);
            assertThat(statuses.keySet()).containsOnly("accepted", "cancelled");
            assertThat(statuses.get("cancelled")).isGreaterThan(1_000);
            // every push sent was accepted, and one more: the device of the warm-up is in the audience too
            assertThat(statuses.get("accepted")).isEqualTo(sent + 1);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(counts(alone, setup.key(), id)).isEqualTo(statuses));
        }
    }

    @Test
    void aWorkerAloneHandsMostOfTheSendStraightToItsLane() throws Exception {
        // the bulk lane's default budget (400 in flight, room for 800 handed recipients)
        try (AppInstance alone = instance("api,scheduler,worker").start()) {
            assertThat(alone.bean(WorkerPresence.class).workers()).isEqualTo(1);
            Setup setup = setUp(alone, "spread one worker");

            double handedBefore = delivered(alone, "handed");
            double claimedBefore = delivered(alone, "claimed");

            String id = sendToAllAndWait(alone, setup.key());

            assertThat(statuses(alone.jdbc(), id)).containsExactly(Map.entry("accepted", RECIPIENTS));
            double handed = delivered(alone, "handed") - handedBefore;
            assertThat(handed + delivered(alone, "claimed") - claimedBefore).isEqualTo(RECIPIENTS);
            // with no other worker the fan-out waits for room in its lane: the hand-over carries the send
            // (nearly all of it on a quiet machine; a page that waited 2 s in vain is left to the claim). Handing
            // over only a share without waiting, as with several workers, hands over a few percent here
            assertThat(handed).as("handed over, not claimed (%s of %s)", handed, RECIPIENTS).isGreaterThanOrEqualTo(RECIPIENTS * 0.6);
        }
    }

    @Test
    void aWorkerNotSeenForThreeHeartbeatsNoLongerCounts() {
        try (AppInstance alone = instance("worker").start()) {
            WorkerPresence presence = alone.bean(WorkerPresence.class);
            assertThat(presence.workers()).isEqualTo(1);
            JdbcClient jdbc = alone.jdbc();
            jdbc.sql("insert into worker_instances (name, started_at, seen_at) values ('elsewhere', now(), now())").update();
            await().atMost(Duration.ofSeconds(10)).until(() -> presence.workers() == 2);
            // it was killed: its row stops being written
            jdbc.sql("update worker_instances set seen_at = now() - interval '4 seconds' where name = 'elsewhere'").update();
            await().atMost(Duration.ofSeconds(10)).until(() -> presence.workers() == 1);
            assertThat(jdbc.sql("select count(*) from worker_instances where name <> 'elsewhere'").query(Long.class).single())
                    .isOne();
            // stopping (as at shutdown) removes the instance's own row at once
            presence.stop();
            assertThat(jdbc.sql("select count(*) from worker_instances where name <> 'elsewhere'").query(Long.class).single())
                    .isZero();
        }
    }
}
