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
 * The execution worker end to end: journeys written through {@code /v1/journeys}, executions started
 * by custom events ({@code POST /v1/events}; written directly only where no event can start one),
 * every node type run by the worker of the running application, pushes received by the local APNs
 * peer, webhook deliveries by a local receiver, the application clock moved to pass timers.
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

    /** The device of each user {@link #devices} registered. */
    private final Map<String, UUID> deviceOf = new HashMap<>();

    /** An app with peer credentials and one iOS device per user; returns the tokens by external user id. */
    private Map<String, String> devices(TestApp app, String... users) throws Exception {
        credentials(app);
        Map<String, String> tokens = new HashMap<>();
        for (String user : users) {
            String token = TestTokens.apns();
            deviceOf.put(user, register(app, "ios", token, ",\"external_user_id\":\"" + user + "\""));
            tokens.put(user, token);
        }
        return tokens;
    }

    /** An active journey started by the custom event {@value #EVENT}; returns its id. */
    private UUID journey(TestApp app, String start, String nodes) {
        return journey(app, EVENT, start, nodes);
    }

    private UUID journey(TestApp app, String event, String start, String nodes) {
        TestApi.Response r = api.post("/v1/journeys", app.serverKey(), "{\"name\":\"test\",\"status\":\"active\",\"reentry_limit\":100,"
                + "\"definition\":" + definition(event, start, nodes) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("journey_id").asString());
    }

    private void patch(TestApp app, UUID journey, String body) {
        TestApi.Response r = api.patch("/v1/journeys/" + journey, app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    /** The user's device sends the custom event; returns the execution it started in {@code journey}. */
    private UUID enter(TestApp app, UUID journey, String event, String user) {
        UUID userId = rows.userId(app.appId(), user);
        List<UUID> before = rows.executions(journey, userId);
        TestApi.Response r = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\""
                + event + "\",\"device_id\":\"" + deviceOf.get(user) + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        List<UUID> started = new ArrayList<>(rows.executions(journey, userId));
        started.removeAll(before);
        assertThat(started).as("executions the event started").hasSize(1);
        return started.getFirst();
    }

    private UUID enter(TestApp app, UUID journey, String user) {
        return enter(app, journey, EVENT, user);
    }

    /** A journey that only exits, started by the event {@code probe}: see {@link #workerLookedAgain}. */
    private UUID probe(TestApp app) {
        return journey(app, "probe", "end", "\"end\":{\"type\":\"exit\"}");
    }

    /**
     * Starts an execution of the probe journey now and waits until it completed: the worker has then
     * claimed again, after everything before this call, and passed over whatever it did not run.
     */
    private void workerLookedAgain(TestApp app, UUID probe, String user) {
        awaitStatus(enter(app, probe, "probe", user), "completed");
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

    private static final String EVENT = "go";

    private static String definition(String event, String start, String nodes) {
        return "{\"trigger\":{\"type\":\"custom_event\",\"event_name\":\"" + event + "\"},\"start\":\"" + start
                + "\",\"nodes\":{" + nodes + "}}";
    }

    // ---- push, wait, exit ------------------------------------------------------------------------

    @Test
    void pushWaitPushSendsTheFirstAtOnceHoldsTheSecondUntilTheClockPassesTheWaitThenCompletes() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = journey(app, "first", "\"first\":" + push("Welcome", "pause")
                + ",\"pause\":{\"type\":\"wait\",\"seconds\":3600,\"next\":\"second\"},"
                + "\"second\":" + push("Still there?", "done") + ",\"done\":{\"type\":\"exit\"}");
        UUID probe = probe(app);
        UUID execution = enter(app, journey, "ada");

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

        // not due yet: the worker passes it over
        clock.advance(Duration.ofMinutes(59));
        workerLookedAgain(app, probe, "ada");
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
        UUID journey = journey(app, "hello", "\"hello\":" + push("Hello {{ external_user_id }}", "end")
                + ",\"end\":{\"type\":\"exit\"}");
        // three users at the node in one batch: their executions written in one statement, as one event batch does
        List<UUID> executions = rows.startAll(app.appId(), journey, List.of("ada", "bob", "eve").stream()
                .map(u -> rows.userId(app.appId(), u)).toList(), "hello", now());
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
        Instant at = now().plus(Duration.ofHours(2)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        UUID journey = journey(app, "later",
                "\"later\":{\"type\":\"wait_until\",\"at\":\"" + at + "\",\"next\":\"past\"},"
                        + "\"past\":{\"type\":\"wait_until\",\"at\":\"2020-01-01T00:00:00Z\",\"next\":\"reached\"},"
                        + "\"reached\":{\"type\":\"goal\",\"name\":\"reached\"}");
        UUID execution = enter(app, journey, "ada");

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
        devices(app, "pro", "free");
        assertThat(api.patch("/v1/users/pro", app.serverKey(), "{\"tags\":{\"plan\":\"pro\"}}").status()).isEqualTo(200);
        assertThat(api.patch("/v1/users/free", app.serverKey(), "{\"tags\":{\"plan\":\"free\"}}").status()).isEqualTo(200);
        UUID journey = journey(app, "check",
                "\"check\":{\"type\":\"branch\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"pro\"},"
                        + "\"yes\":\"paying\",\"no\":\"trial\"},"
                        + "\"paying\":{\"type\":\"goal\",\"name\":\"paying\"},"
                        + "\"trial\":{\"type\":\"goal\",\"name\":\"trial\"}");
        UUID pro = enter(app, journey, "pro");
        UUID free = enter(app, journey, "free");

        awaitStatus(pro, "completed");
        awaitStatus(free, "completed");
        assertThat(rows.goals(pro)).containsExactly("paying");
        assertThat(rows.goals(free)).containsExactly("trial");

        // the user's current data decides: after a tag change the same user goes the other way
        assertThat(api.patch("/v1/users/free", app.serverKey(), "{\"tags\":{\"plan\":\"pro\"}}").status()).isEqualTo(200);
        UUID again = enter(app, journey, "free");
        awaitStatus(again, "completed");
        assertThat(rows.goals(again)).containsExactly("paying");
    }

    // ---- split -----------------------------------------------------------------------------------

    @Test
    void splitDividesUsersByTheWeightsAndEachUserAlwaysTakesTheSameBranch() {
        TestApp app = newApp();
        int n = 1000;
        // users without devices (no event can start them): their executions are written directly
        List<UUID> users = rows.users(app.appId(), n);
        UUID journey = journey(app, "split",
                "\"split\":{\"type\":\"split\",\"branches\":[{\"weight\":20,\"next\":\"a\"},{\"weight\":30,\"next\":\"b\"},"
                        + "{\"weight\":50,\"next\":\"c\"}]},"
                        + "\"a\":{\"type\":\"goal\"},\"b\":{\"type\":\"goal\"},\"c\":{\"type\":\"goal\"}");
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
            UUID journey = journey(app, "call",
                    "\"call\":{\"type\":\"webhook\",\"webhook_id\":\"" + webhookId + "\",\"next\":\"end\"},"
                            + "\"end\":{\"type\":\"exit\"}");
            UUID execution = enter(app, journey, "ada");

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

            // the endpoint disabled meanwhile: the step is skipped, the execution goes on and says why
            assertThat(api.patch("/v1/webhooks/" + webhookId, app.serverKey(), "{\"enabled\":false}").status()).isEqualTo(200);
            UUID whileDisabled = enter(app, journey, "ada");
            awaitStatus(whileDisabled, "completed");
            assertThat((String) rows.execution(whileDisabled).get("last_error")).startsWith("webhook_skipped")
                    .contains(webhookId).contains("disabled");

            // deleted: the same
            assertThat(api.delete("/v1/webhooks/" + webhookId, app.serverKey()).status()).isEqualTo(200);
            UUID later = enter(app, journey, "ada");
            awaitStatus(later, "completed");
            assertThat((String) rows.execution(later).get("last_error")).startsWith("webhook_skipped")
                    .contains(webhookId).contains("no longer exists");
            assertThat(received).as("nothing sent while disabled or after the deletion").isEmpty();
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
        UUID journey = journey(app, "converted",
                "\"converted\":{\"type\":\"goal\",\"name\":\"converted\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        UUID execution = enter(app, journey, "ada");
        awaitStatus(execution, "completed");
        assertThat(rows.goals(execution)).containsExactly("converted");
        assertThat(rows.execution(execution).get("step")).isEqualTo(2);
        // the journey's stats count it
        TestApi.Response stats = api.get("/v1/journeys/" + journey + "/stats", app.serverKey());
        assertThat(stats.status()).as(stats.toString()).isEqualTo(200);
        assertThat(stats.json().path("goals").get(0).path("node_id").asString()).isEqualTo("converted");
        assertThat(stats.json().path("goals").get(0).path("total").asLong()).isEqualTo(1);
        // and the worker's metrics count the node types it ran
        TestApi.Response metrics = api.get("/actuator/prometheus", null);
        assertThat(metrics.status()).isEqualTo(200);
        assertThat(metrics.body()).contains("push_journeys_nodes_total{type=\"goal\"}")
                .contains("push_journeys_nodes_total{type=\"exit\"}").contains("push_journeys_batch_duration_seconds_count");
    }

    @Test
    void anExecutionWhoseUserWasDeletedFailsWithTheReason() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        UUID journey = journey(app, "end", "\"end\":{\"type\":\"exit\"}");
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
        UUID journey = journey(app, "a", "\"a\":{\"type\":\"exit\"}");
        // as stored under other rules: a cycle whose only pause is a past wait_until, which the reader refuses
        rows.overwriteDefinition(journey, 1, definition(EVENT, "a",
                "\"a\":{\"type\":\"wait_until\",\"at\":\"2020-01-01T00:00:00Z\",\"next\":\"b\"},"
                        + "\"b\":{\"type\":\"goal\",\"next\":\"a\"}"));
        UUID execution = enter(app, journey, "ada");
        awaitStatus(execution, "failed");
        assertThat(rows.execution(execution).get("last_error")).isEqualTo(JourneyRunner.DEFINITION_UNREADABLE);
        assertThat(rows.goals(execution)).isEmpty();
    }

    // ---- versions and states ---------------------------------------------------------------------

    private static String waitThenSay(String title) {
        return "\"pause\":{\"type\":\"wait\",\"seconds\":60,\"next\":\"say\"},\"say\":" + push(title, "end")
                + ",\"end\":{\"type\":\"exit\"}";
    }

    @Test
    void aWaitingExecutionKeepsItsVersionAcrossAPatchAndANewEntryRunsTheNewVersion() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = journey(app, "pause", waitThenSay("Version one"));
        UUID first = enter(app, journey, "ada");
        awaitStatus(first, "waiting");

        patch(app, journey, "{\"definition\":" + definition(EVENT, "pause", waitThenSay("Version two")) + "}");
        UUID second = enter(app, journey, "ada");
        awaitStatus(second, "waiting");
        clock.advance(Duration.ofSeconds(61));
        wakeup.wake();
        awaitStatus(first, "completed");
        awaitStatus(second, "completed");
        await().atMost(WAIT).until(() -> titlesAt(token).size() == 2);
        assertThat(titlesAt(token)).containsExactlyInAnyOrder("Version one", "Version two");
        assertThat(rows.execution(first).get("version")).isEqualTo(1);
        assertThat(rows.execution(second).get("version")).isEqualTo(2);
        assertThat(journeyNotifications(app)).extracting(n -> n.path("target").path("version").asInt())
                .containsExactlyInAnyOrder(1, 2);
    }

    @Test
    void aPausedJourneyHoldsItsDueExecutionsAndResumingRunsThem() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID probe = probe(app);
        UUID journey = journey(app, "pause", waitThenSay("After the pause"));
        UUID execution = enter(app, journey, "ada");
        awaitStatus(execution, "waiting");

        patch(app, journey, "{\"status\":\"paused\"}");
        clock.advance(Duration.ofSeconds(61));
        workerLookedAgain(app, probe, "ada");
        assertThat(rows.execution(execution).get("status")).isEqualTo("waiting");
        assertThat(rows.execution(execution).get("node_id")).isEqualTo("say");
        assertThat(titlesAt(token)).isEmpty();

        patch(app, journey, "{\"status\":\"active\"}");
        awaitStatus(execution, "completed");
        await().atMost(WAIT).until(() -> titlesAt(token).contains("After the pause"));
    }

    @Test
    void archivingCancelsAWaitingExecutionAndItNeverRuns() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID probe = probe(app);
        UUID journey = journey(app, "pause", waitThenSay("Never"));
        UUID execution = enter(app, journey, "ada");
        awaitStatus(execution, "waiting");

        assertThat(api.delete("/v1/journeys/" + journey, app.serverKey()).status()).isEqualTo(200);
        assertThat(rows.status(execution)).isEqualTo("cancelled");
        clock.advance(Duration.ofSeconds(61));
        workerLookedAgain(app, probe, "ada");
        assertThat(rows.status(execution)).isEqualTo("cancelled");
        assertThat(titlesAt(token)).isEmpty();
        assertThat(journeyNotifications(app)).isEmpty();
    }

    @Autowired
    javax.sql.DataSource dataSource;

    /**
     * The race of an event batch with an archive already under way: the archive has locked and
     * archived the journey and is cancelling (held here at the row lock of a waiting execution) when
     * an event of the journey's user commits. The event must not leave an {@code active} execution
     * in the archived journey (nothing would ever run or cancel it).
     */
    @Test
    void anEventRacingAnArchiveLeavesNoRunningExecutionInTheArchivedJourney() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        UUID journey = journey(app, "pause", waitThenSay("Never"));
        UUID waiting = enter(app, journey, "ada");
        awaitStatus(waiting, "waiting");
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try (java.sql.Connection holder = dataSource.getConnection()) {
            holder.setAutoCommit(false);
            try (var ps = holder.prepareStatement("select id from journey_executions where id = ? for update")) {
                ps.setObject(1, waiting);
                ps.executeQuery().close();
            }
            var archived = pool.submit(() -> api.delete("/v1/journeys/" + journey, app.serverKey()));
            awaitLockWaiters(1); // the archive, at its cancel
            var event = pool.submit(() -> api.post("/v1/events", app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\""
                    + EVENT + "\",\"device_id\":\"" + deviceOf.get("ada") + "\"}"));
            // the event batch either waits for the archive's lock on the journey or has finished
            await().atMost(WAIT).until(() -> lockWaiters() >= 2 || event.isDone());
            holder.commit();
            assertThat(archived.get(30, java.util.concurrent.TimeUnit.SECONDS).status()).isEqualTo(200);
            assertThat(event.get(30, java.util.concurrent.TimeUnit.SECONDS).status()).isEqualTo(202);
        } finally {
            pool.shutdownNow();
        }
        assertThat(rows.status(waiting)).isEqualTo("cancelled");
        Long running = jdbc.sql("select count(*) from journey_executions where journey_id = :j and status in ('active', 'waiting')")
                .param("j", journey).query(Long.class).single();
        assertThat(running).as("executions left running in the archived journey").isZero();
    }

    private long lockWaiters() {
        return jdbc.sql("select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'"
                + " and (query ilike '%journey_executions%' or query ilike '%events%')").query(Long.class).single();
    }

    private void awaitLockWaiters(long n) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> lockWaiters() >= n);
    }

    // ---- exactly once ----------------------------------------------------------------------------

    @Test
    void aBatchThatFailsAfterItsPushIsRolledBackWholeAndThePushIsSentOnceWhenItRunsAgain() throws Exception {
        TestApp app = newApp();
        String token = devices(app, "ada").get("ada");
        UUID journey = journey(app, "say", "\"say\":" + push("Only once", "boom")
                + ",\"boom\":{\"type\":\"goal\",\"name\":\"boom\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        // the goal's insert (after the push in the same batch) fails twice, as a database error would
        String suffix = app.appId().toString().replace("-", "");
        jdbc.sql("create sequence boom_" + suffix).update();
        jdbc.sql("create function boom_" + suffix + "() returns trigger language plpgsql as $$ begin"
                + " if new.journey_id = '" + journey + "' then if nextval('boom_" + suffix + "') <= 2 then"
                + " raise exception 'injected failure'; end if; end if; return new; end $$").update();
        jdbc.sql("create trigger boom_" + suffix + " before insert on journey_goals for each row execute function boom_"
                + suffix + "()").update();
        try {
            UUID execution = enter(app, journey, "ada");
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

    @Test
    void anExecutionWhoseStepFailsEveryTimeEndsFailedAndTheOthersClaimedWithItGoOn() throws Exception {
        TestApp app = newApp();
        Map<String, String> tokens = devices(app, "ada", "bob");
        // two journeys on one event: each event starts one execution of each, claimed in one batch
        UUID poisoned = journey(app, "stuck", "\"stuck\":{\"type\":\"goal\",\"name\":\"never\"}");
        UUID healthy = journey(app, "say", "\"say\":" + push("Goes on", "end") + ",\"end\":{\"type\":\"exit\"}");
        // the poisoned journey's goal insert fails every time, as a fault that does not go away would
        String suffix = app.appId().toString().replace("-", "");
        jdbc.sql("create function stuck_" + suffix + "() returns trigger language plpgsql as $$ begin"
                + " if new.journey_id = '" + poisoned + "' then raise exception 'injected failure'; end if;"
                + " return new; end $$").update();
        jdbc.sql("create trigger stuck_" + suffix + " before insert on journey_goals for each row execute function stuck_"
                + suffix + "()").update();
        try {
            UUID ada = enter(app, healthy, "ada");
            UUID bob = enter(app, healthy, "bob");
            await().atMost(WAIT).until(() -> titlesAt(tokens.get("ada")).contains("Goes on")
                    && titlesAt(tokens.get("bob")).contains("Goes on"));
            awaitStatus(ada, "completed");
            awaitStatus(bob, "completed");
            for (UUID stuck : List.of(rows.executions(poisoned, rows.userId(app.appId(), "ada")).getFirst(),
                    rows.executions(poisoned, rows.userId(app.appId(), "bob")).getFirst())) {
                awaitStatus(stuck, "failed");
                assertThat(rows.execution(stuck).get("last_error")).isEqualTo("step_failed");
            }
            assertThat(titlesAt(tokens.get("ada"))).containsExactly("Goes on");
        } finally {
            jdbc.sql("drop trigger stuck_" + suffix + " on journey_goals").update();
            jdbc.sql("drop function stuck_" + suffix + "()").update();
        }
    }
}
