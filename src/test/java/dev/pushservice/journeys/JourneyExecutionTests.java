package dev.pushservice.journeys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.notifications.PeerApiTest;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import dev.pushservice.support.TestTokens;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;

/**
 * The execution worker end to end: executions started as an entry starts them, every node type run
 * by the worker of the running application, pushes received by the local APNs peer, webhook
 * deliveries by a local receiver, the application clock moved to pass timers.
 *
 * <p>Each test first moves this application's clock a day ahead, so its executions, recipients and
 * webhook deliveries are due only for this application: other applications of the test JVM (other
 * test configurations, same database) run their workers on the real time and never claim them.
 */
class JourneyExecutionTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    @Autowired
    TestClock clock;

    @Autowired
    JourneyWakeup wakeup;

    JourneyRows rows;

    @BeforeEach
    void aheadOfTheOtherApplications() {
        rows = new JourneyRows(jdbc);
        clock.advance(Duration.ofDays(1));
    }

    @AfterEach
    void resetClock() {
        clock.reset();
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private Instant now() {
        return clock.instant();
    }

    /** An app with peer credentials and one iOS device per user; returns the tokens by external user id. */
    private Map<String, String> devices(TestApp app, String... users) throws Exception {
        credentials(app);
        Map<String, String> tokens = new HashMap<>();
        for (String user : users) {
            String token = TestTokens.apns();
            register(app, "ios", token, ",\"external_user_id\":\"" + user + "\"");
            tokens.put(user, token);
        }
        return tokens;
    }

    private UUID start(TestApp app, UUID journey, String user, String node) {
        UUID id = rows.start(app.appId(), journey, 1, rows.userId(app.appId(), user), node, now());
        wakeup.wake();
        return id;
    }

    private void awaitStatus(UUID execution, String status) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            Map<String, Object> now = rows.execution(execution);
            if (!now.get("status").equals(status) && now.get("ended_at") != null) {
                throw new AssertionError("execution ended " + now + " where " + status + " was expected");
            }
            return now.get("status").equals(status);
        });
    }

    private List<String> titlesAt(String token) {
        List<JsonNode> got = APNS_RECEIVED.getOrDefault(token, List.of());
        synchronized (APNS_RECEIVED) {
            return got.stream().map(p -> p.path("aps").path("alert").path("title").asString()).toList();
        }
    }

    private List<JsonNode> journeyNotifications(TestApp app) {
        TestApi.Response r = api.get("/v1/notifications?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        List<JsonNode> out = new ArrayList<>();
        r.json().path("data").forEach(n -> {
            if (n.path("target").path("type").asString().equals("journey")) out.add(n);
        });
        return out;
    }

    private static String push(String title, String next) {
        return "{\"type\":\"push\",\"content\":{\"title\":\"" + title + "\",\"body\":\"b\"},\"next\":\"" + next + "\"}";
    }

    private static String definition(String start, String nodes) {
        return "{\"trigger\":{\"type\":\"custom_event\",\"event_name\":\"test\"},\"start\":\"" + start + "\",\"nodes\":{" + nodes + "}}";
    }

    // ---- push, wait, exit ------------------------------------------------------------------------

    @Test
    void pushWaitPushSendsTheFirstAtOnceHoldsTheSecondUntilTheClockPassesTheWaitThenCompletes() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = rows.journey(app.appId(), definition("first", "\"first\":" + push("Welcome", "pause")
                + ",\"pause\":{\"type\":\"wait\",\"seconds\":3600,\"next\":\"second\"},"
                + "\"second\":" + push("Still there?", "done") + ",\"done\":{\"type\":\"exit\"}"), now());
        UUID execution = start(app, journey, "ada", "first");

        await().atMost(WAIT).until(() -> titlesAt(token).contains("Welcome"));
        awaitStatus(execution, "waiting");
        Map<String, Object> waiting = rows.execution(execution);
        assertThat(waiting.get("node_id")).isEqualTo("second");
        assertThat(waiting.get("step")).isEqualTo(2);

        // the notification is shown as the journey's, with the node that made it
        List<JsonNode> made = journeyNotifications(app);
        assertThat(made).hasSize(1);
        assertThat(made.getFirst().path("target").path("journey_id").asString()).isEqualTo(journey.toString());
        assertThat(made.getFirst().path("target").path("node_id").asString()).isEqualTo("first");
        assertThat(made.getFirst().path("target").path("version").asInt()).isEqualTo(1);
        assertThat(finished(app, made.getFirst().path("notification_id").asString()).path("accepted_count").asLong()).isEqualTo(1);

        // not due yet: a wake-up runs nothing
        clock.advance(Duration.ofMinutes(59));
        wakeup.wake();
        UUID other = rows.start(app.appId(), journey, 1, rows.userId(app.appId(), "ada"), "done", now());
        wakeup.wake();
        awaitStatus(other, "completed"); // the worker has looked at what is due since the clock moved
        assertThat(rows.status(execution)).isEqualTo("waiting");
        assertThat(titlesAt(token)).containsExactly("Welcome");

        clock.advance(Duration.ofMinutes(2));
        wakeup.wake();
        awaitStatus(execution, "completed");
        await().atMost(WAIT).until(() -> titlesAt(token).contains("Still there?"));
        Map<String, Object> done = rows.execution(execution);
        assertThat(done.get("node_id")).isNull();
        assertThat(done.get("due_at")).isNull();
        assertThat(done.get("ended_at")).isNotNull();
        assertThat(done.get("step")).isEqualTo(4);
        assertThat(titlesAt(token)).containsExactly("Welcome", "Still there?");
        assertThat(journeyNotifications(app)).hasSize(2);
    }

    @Test
    void onePushNotificationPerBatchAndNodeReachesEveryUserAtThatNode() throws Exception {
        TestApp app = newApp();
        Map<String, String> tokens = devices(app, "ada", "bob", "eve");
        UUID journey = rows.journey(app.appId(), definition("hello", "\"hello\":" + push("Hello {{ external_user_id }}", "end")
                + ",\"end\":{\"type\":\"exit\"}"), now());
        List<UUID> executions = new ArrayList<>();
        for (String user : List.of("ada", "bob", "eve")) {
            executions.add(rows.start(app.appId(), journey, 1, rows.userId(app.appId(), user), "hello", now()));
        }
        wakeup.wake();

        for (UUID e : executions) awaitStatus(e, "completed");
        for (String user : List.of("ada", "bob", "eve")) {
            await().atMost(WAIT).until(() -> titlesAt(tokens.get(user)).contains("Hello " + user));
        }
        List<JsonNode> made = journeyNotifications(app);
        assertThat(made).hasSize(1);
        assertThat(finished(app, made.getFirst().path("notification_id").asString()).path("recipient_count").asInt()).isEqualTo(3);
    }

    // ---- wait_until ------------------------------------------------------------------------------

    @Test
    void waitUntilHoldsUntilItsInstantAndAPastInstantGoesOnAtOnce() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        Instant at = now().plus(Duration.ofHours(2)).truncatedTo(java.time.temporal.ChronoUnit.MICROS);
        UUID journey = rows.journey(app.appId(), definition("later",
                "\"later\":{\"type\":\"wait_until\",\"at\":\"" + at + "\",\"next\":\"past\"},"
                        + "\"past\":{\"type\":\"wait_until\",\"at\":\"2020-01-01T00:00:00Z\",\"next\":\"reached\"},"
                        + "\"reached\":{\"type\":\"goal\",\"name\":\"reached\"}"), now());
        UUID execution = start(app, journey, "ada", "later");

        awaitStatus(execution, "waiting");
        Map<String, Object> waiting = rows.execution(execution);
        assertThat(waiting.get("node_id")).isEqualTo("past");
        assertThat(((java.sql.Timestamp) waiting.get("due_at")).toInstant()).isEqualTo(at);

        clock.advance(Duration.ofHours(2).plusSeconds(1));
        wakeup.wake();
        awaitStatus(execution, "completed");
        assertThat(rows.goals(execution)).containsExactly("reached");
        assertThat(rows.execution(execution).get("step")).isEqualTo(3);
    }

    // ---- branch ----------------------------------------------------------------------------------

    @Test
    void branchTakesYesForUsersWithAMatchingDeviceAndNoForTheOthers() throws Exception {
        TestApp app = newApp();
        credentials(app);
        register(app, "ios", TestTokens.apns(), ",\"external_user_id\":\"pro\",\"tags\":{\"plan\":\"pro\"}");
        register(app, "ios", TestTokens.apns(), ",\"external_user_id\":\"free\",\"tags\":{\"plan\":\"free\"}");
        UUID journey = rows.journey(app.appId(), definition("check",
                "\"check\":{\"type\":\"branch\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"pro\"},"
                        + "\"yes\":\"paying\",\"no\":\"trial\"},"
                        + "\"paying\":{\"type\":\"goal\",\"name\":\"paying\"},"
                        + "\"trial\":{\"type\":\"goal\",\"name\":\"trial\"}"), now());
        UUID pro = rows.start(app.appId(), journey, 1, rows.userId(app.appId(), "pro"), "check", now());
        UUID free = rows.start(app.appId(), journey, 1, rows.userId(app.appId(), "free"), "check", now());
        wakeup.wake();

        awaitStatus(pro, "completed");
        awaitStatus(free, "completed");
        assertThat(rows.goals(pro)).containsExactly("paying");
        assertThat(rows.goals(free)).containsExactly("trial");

        // the user's current data decides: after a tag change the same user goes the other way
        assertThat(api.patch("/v1/users/free", app.serverKey(), "{\"tags\":{\"plan\":\"pro\"}}").status()).isEqualTo(200);
        UUID again = start(app, journey, "free", "check");
        awaitStatus(again, "completed");
        assertThat(rows.goals(again)).containsExactly("paying");
    }

    // ---- split -----------------------------------------------------------------------------------

    @Test
    void splitDividesUsersByTheWeightsAndEachUserAlwaysTakesTheSameBranch() {
        TestApp app = newApp();
        int n = 1000;
        List<UUID> users = rows.users(app.appId(), n);
        UUID journey = rows.journey(app.appId(), definition("split",
                "\"split\":{\"type\":\"split\",\"branches\":[{\"weight\":20,\"next\":\"a\"},{\"weight\":30,\"next\":\"b\"},"
                        + "{\"weight\":50,\"next\":\"c\"}]},"
                        + "\"a\":{\"type\":\"goal\"},\"b\":{\"type\":\"goal\"},\"c\":{\"type\":\"goal\"}"), now());
        List<UUID> first = rows.startAll(app.appId(), journey, users, "split", now());
        wakeup.wake();
        await().atMost(WAIT).until(() -> completed(journey) == n);

        Map<UUID, String> branchOf = branches(first, users);
        Map<String, Integer> counts = new HashMap<>();
        branchOf.values().forEach(b -> counts.merge(b, 1, Integer::sum));
        // 1,000 random users: each share within 6.5 points of its weight (more than 4 standard deviations)
        assertThat(counts.get("a")).isBetween(135, 265);
        assertThat(counts.get("b")).isBetween(235, 365);
        assertThat(counts.get("c")).isBetween(435, 565);

        // every user enters again: each takes the branch it took before
        List<UUID> second = rows.startAll(app.appId(), journey, users, "split", now());
        wakeup.wake();
        await().atMost(WAIT).until(() -> completed(journey) == 2 * n);
        assertThat(branches(second, users)).isEqualTo(branchOf);
    }

    private long completed(UUID journey) {
        return jdbc.sql("select count(*) from journey_executions where journey_id = :j and status = 'completed'")
                .param("j", journey).query(Long.class).single();
    }

    /** The goal each execution reached, by its user. */
    private Map<UUID, String> branches(List<UUID> executions, List<UUID> users) {
        Map<UUID, String> byExecution = new HashMap<>();
        jdbc.sql("select execution_id, node_id from journey_goals where execution_id in (:ids)")
                .param("ids", executions)
                .query((rs, i) -> byExecution.put(rs.getObject(1, UUID.class), rs.getString(2))).list();
        Map<UUID, String> byUser = new HashMap<>();
        for (int i = 0; i < executions.size(); i++) byUser.put(users.get(i), byExecution.get(executions.get(i)));
        assertThat(byUser.values()).doesNotContainNull();
        return byUser;
    }

    // ---- webhook ---------------------------------------------------------------------------------

    @Test
    void webhookNodeDeliversASignedRequestAndADeletedEndpointIsSkippedWithTheReason() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        ConcurrentLinkedQueue<LocalHttpServer.Request> received = new ConcurrentLinkedQueue<>();
        try (LocalHttpServer receiver = LocalHttpServer.builder().http1Only().start(request -> {
            received.add(request);
            return Mono.just(new LocalHttpServer.Response(200, Map.of(), ""));
        })) {
            TestApi.Response created = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"http://127.0.0.1:"
                    + receiver.port() + "/journey\",\"events\":[\"export.completed\"]}");
            assertThat(created.status()).as(created.toString()).isEqualTo(201);
            String webhookId = created.json().path("webhook_id").asString();
            String secret = created.json().path("secret").asString();
            UUID journey = rows.journey(app.appId(), definition("call",
                    "\"call\":{\"type\":\"webhook\",\"webhook_id\":\"" + webhookId + "\",\"next\":\"end\"},"
                            + "\"end\":{\"type\":\"exit\"}"), now());
            UUID execution = start(app, journey, "ada", "call");

            awaitStatus(execution, "completed");
            await().atMost(WAIT).until(() -> !received.isEmpty());
            LocalHttpServer.Request request = received.poll();
            JsonNode body = JSON.readTree(request.body());
            assertThat(body.path("type").asString()).isEqualTo("journey.webhook");
            JsonNode data = body.path("data");
            assertThat(data.path("journey_id").asString()).isEqualTo(journey.toString());
            assertThat(data.path("version").asInt()).isEqualTo(1);
            assertThat(data.path("execution_id").asString()).isEqualTo(execution.toString());
            assertThat(data.path("node_id").asString()).isEqualTo("call");
            assertThat(data.path("external_user_id").asString()).isEqualTo("ada");
            assertThat(data.path("user_id").asString()).isEqualTo(rows.userId(app.appId(), "ada").toString());
            assertThat(request.header("webhook-signature")).isEqualTo(signature(secret, request));
            assertThat(rows.execution(execution).get("last_error")).isNull();

            // the endpoint deleted meanwhile: the step is skipped, the execution goes on and says why
            assertThat(api.delete("/v1/webhooks/" + webhookId, app.serverKey()).status()).isEqualTo(200);
            UUID later = start(app, journey, "ada", "call");
            awaitStatus(later, "completed");
            assertThat((String) rows.execution(later).get("last_error")).startsWith("webhook_skipped").contains(webhookId);
        }
    }

    private static String signature(String secret, LocalHttpServer.Request r) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(java.util.Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
        String signed = r.header("webhook-id") + "." + r.header("webhook-timestamp") + "." + new String(r.body(), StandardCharsets.UTF_8);
        return "v1," + java.util.Base64.getEncoder().encodeToString(mac.doFinal(signed.getBytes(StandardCharsets.UTF_8)));
    }

    // ---- goal, exit, failures --------------------------------------------------------------------

    @Test
    void goalIsRecordedAndTheExecutionGoesOnToItsExit() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        UUID journey = rows.journey(app.appId(), definition("converted",
                "\"converted\":{\"type\":\"goal\",\"name\":\"converted\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}"), now());
        UUID execution = start(app, journey, "ada", "converted");
        awaitStatus(execution, "completed");
        assertThat(rows.goals(execution)).containsExactly("converted");
        assertThat(rows.execution(execution).get("step")).isEqualTo(2);
    }

    @Test
    void anExecutionWhoseUserWasDeletedFailsWithTheReason() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        UUID journey = rows.journey(app.appId(), definition("end", "\"end\":{\"type\":\"exit\"}"), now());
        UUID user = rows.userId(app.appId(), "ada");
        assertThat(api.delete("/v1/users/ada", app.serverKey()).status()).isEqualTo(200);
        UUID execution = rows.start(app.appId(), journey, 1, user, "end", now());
        wakeup.wake();
        awaitStatus(execution, "failed");
        assertThat(rows.execution(execution).get("last_error")).isEqualTo(JourneyRunner.USER_DELETED);
    }

    @Test
    void anExecutionWhoseStoredVersionTheReaderRefusesFailsWithTheReason() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        // a cycle whose only pause is a past wait_until: refused by the definition rules (it would loop without end)
        UUID journey = rows.journey(app.appId(), definition("a",
                "\"a\":{\"type\":\"wait_until\",\"at\":\"2020-01-01T00:00:00Z\",\"next\":\"b\"},"
                        + "\"b\":{\"type\":\"goal\",\"next\":\"a\"}"), now());
        UUID execution = start(app, journey, "ada", "a");
        awaitStatus(execution, "failed");
        assertThat(rows.execution(execution).get("last_error")).isEqualTo(JourneyRunner.DEFINITION_UNREADABLE);
        assertThat(rows.goals(execution)).isEmpty();
    }

    // ---- versions and states ---------------------------------------------------------------------

    @Test
    void aWaitingExecutionKeepsItsVersionWhenANewVersionIsWritten() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = rows.journey(app.appId(), definition("pause",
                "\"pause\":{\"type\":\"wait\",\"seconds\":60,\"next\":\"say\"},\"say\":" + push("Version one", "end")
                        + ",\"end\":{\"type\":\"exit\"}"), now());
        UUID execution = start(app, journey, "ada", "pause");
        awaitStatus(execution, "waiting");

        rows.version(journey, 2, definition("pause",
                "\"pause\":{\"type\":\"wait\",\"seconds\":60,\"next\":\"say\"},\"say\":" + push("Version two", "end")
                        + ",\"end\":{\"type\":\"exit\"}"), now());
        clock.advance(Duration.ofSeconds(61));
        wakeup.wake();
        awaitStatus(execution, "completed");
        await().atMost(WAIT).until(() -> titlesAt(token).contains("Version one"));
        assertThat(titlesAt(token)).containsExactly("Version one");
        assertThat(rows.execution(execution).get("version")).isEqualTo(1);
    }

    @Test
    void aPausedJourneyHoldsItsDueExecutionsAndResumingRunsThem() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        String nodes = "\"end\":{\"type\":\"exit\"}";
        UUID paused = rows.journey(app.appId(), definition("end", nodes), now());
        UUID running = rows.journey(app.appId(), definition("end", nodes), now());
        rows.status(paused, "paused");
        UUID held = rows.start(app.appId(), paused, 1, rows.userId(app.appId(), "ada"), "end", now());
        // due after the held one: once it ran, the worker has passed over the held one
        UUID ran = rows.start(app.appId(), running, 1, rows.userId(app.appId(), "ada"), "end", now().plusMillis(1));
        clock.advance(Duration.ofMillis(2));
        wakeup.wake();
        awaitStatus(ran, "completed");
        assertThat(rows.status(held)).isEqualTo("active");

        rows.status(paused, "active");
        wakeup.wake();
        awaitStatus(held, "completed");
    }

    @Test
    void anArchivedJourneysExecutionsAreNotRun() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        String nodes = "\"end\":{\"type\":\"exit\"}";
        UUID archived = rows.journey(app.appId(), definition("end", nodes), now());
        UUID running = rows.journey(app.appId(), definition("end", nodes), now());
        rows.status(archived, "archived");
        UUID held = rows.start(app.appId(), archived, 1, rows.userId(app.appId(), "ada"), "end", now());
        UUID ran = rows.start(app.appId(), running, 1, rows.userId(app.appId(), "ada"), "end", now().plusMillis(1));
        clock.advance(Duration.ofMillis(2));
        wakeup.wake();
        awaitStatus(ran, "completed");
        assertThat(rows.status(held)).isEqualTo("active");
    }

    // ---- exactly once ----------------------------------------------------------------------------

    @Test
    void aBatchThatFailsAfterItsPushIsRolledBackWholeAndThePushIsSentOnceWhenItRunsAgain() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = rows.journey(app.appId(), definition("say", "\"say\":" + push("Only once", "boom")
                + ",\"boom\":{\"type\":\"goal\",\"name\":\"boom\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}"), now());
        // the goal's insert (after the push in the same batch) fails twice, as a database error would
        String suffix = app.appId().toString().replace("-", "");
        jdbc.sql("create sequence boom_" + suffix).update();
        jdbc.sql("create function boom_" + suffix + "() returns trigger language plpgsql as $$ begin"
                + " if new.journey_id = '" + journey + "' then if nextval('boom_" + suffix + "') <= 2 then"
                + " raise exception 'injected failure'; end if; end if; return new; end $$").update();
        jdbc.sql("create trigger boom_" + suffix + " before insert on journey_goals for each row execute function boom_"
                + suffix + "()").update();
        try {
            UUID execution = start(app, journey, "ada", "say");
            awaitStatus(execution, "completed");
            long attempts = jdbc.sql("select last_value from boom_" + suffix).query(Long.class).single();
            assertThat(attempts).as("the batch failed twice before it committed").isEqualTo(3);
            await().atMost(WAIT).until(() -> titlesAt(token).contains("Only once"));
            List<JsonNode> made = journeyNotifications(app);
            assertThat(made).hasSize(1);
            finished(app, made.getFirst().path("notification_id").asString());
            assertThat(titlesAt(token)).containsExactly("Only once");
            assertThat(rows.goals(execution)).containsExactly("boom");
        } finally {
            jdbc.sql("drop trigger boom_" + suffix + " on journey_goals").update();
            jdbc.sql("drop function boom_" + suffix + "()").update();
            jdbc.sql("drop sequence boom_" + suffix).update();
        }
    }
}
