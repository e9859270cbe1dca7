package dev.pushservice.journeys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.notifications.PeerApiTest;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.OpenApiContract;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;

/**
 * The journey kinds of the webhook catalogue end to end: executions started by custom events
 * ({@code POST /v1/events}) or written as an entry writes them, run by the worker of the running
 * application, archived through {@code /v1/journeys}; what a local HTTP receiver gets from webhooks
 * subscribed through {@code /v1/webhooks}, each body checked against the contract's
 * {@code JourneyLifecycleEvent}. As in {@link JourneyExecutionTests}, each test first moves this
 * application's clock a day ahead so no other application of the test JVM claims its work.
 */
class JourneyLifecycleEventTests extends PeerApiTest {

    private static final String JOURNEY_KINDS = "[\"journey.execution.started\",\"journey.execution.completed\","
            + "\"journey.execution.failed\",\"journey.execution.cancelled\",\"journey.goal.reached\"]";

    @Autowired
    JdbcClient jdbc;

    @Autowired
    TestClock clock;

    @Autowired
    JourneyWakeup wakeup;

    JourneyRows rows;

    /** Bodies received, by path. */
    private final Map<String, ConcurrentLinkedQueue<JsonNode>> received = new ConcurrentHashMap<>();
    private LocalHttpServer receiver;

    @BeforeEach
    void aheadOfTheOtherApplications() {
        rows = new JourneyRows(jdbc);
        clock.advance(Duration.ofDays(1));
        receiver = LocalHttpServer.builder().http1Only().start(request -> {
            received.computeIfAbsent(request.path(), p -> new ConcurrentLinkedQueue<>())
                    .add(JSON.readTree(new String(request.body(), StandardCharsets.UTF_8)));
            return Mono.just(new LocalHttpServer.Response(200, Map.of(), ""));
        });
    }

    @AfterEach
    void resetClock() {
        receiver.close();
        clock.reset();
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private final Map<String, UUID> deviceOf = new HashMap<>();

    private void devices(TestApp app, String... users) throws Exception {
        credentials(app);
        for (String user : users) {
            deviceOf.put(user, register(app, "ios", TestTokens.apns(), ",\"external_user_id\":\"" + user + "\""));
        }
    }

    /** A webhook of the app to {@code path} of the receiver; returns its id. */
    private String webhook(TestApp app, String path, String events) {
        TestApi.Response r = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"http://127.0.0.1:" + receiver.port()
                + path + "\",\"events\":" + events + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("webhook_id").asString();
    }

    private static String definition(String event, String start, String nodes) {
        return "{\"trigger\":{\"type\":\"custom_event\",\"event_name\":\"" + event + "\"},\"start\":\"" + start
                + "\",\"nodes\":{" + nodes + "}}";
    }

    /** An active journey started by the custom event {@code event}. */
    private UUID journey(TestApp app, String event, String start, String nodes) {
        TestApi.Response r = api.post("/v1/journeys", app.serverKey(), "{\"name\":\"test\",\"status\":\"active\",\"reentry_limit\":100,"
                + "\"definition\":" + definition(event, start, nodes) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("journey_id").asString());
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

    private void awaitStatus(UUID execution, String status) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            Map<String, Object> now = rows.execution(execution);
            if (!now.get("status").equals(status) && now.get("ended_at") != null) {
                throw new AssertionError("execution ended " + now + " where " + status + " was expected");
            }
            return now.get("status").equals(status);
        });
    }

    private List<JsonNode> bodies(String path) {
        return List.copyOf(received.getOrDefault(path, new ConcurrentLinkedQueue<>()));
    }

    /**
     * Waits until the webhook has {@code n} deliveries, all succeeded (read from the table: its
     * {@code GET …/deliveries} shows the 50 newest); returns the bodies its path received.
     */
    private List<JsonNode> delivered(String webhookId, String path, int n) {
        await().atMost(WAIT).until(() -> {
            Map<String, Object> counts = jdbc.sql("""
                            select count(*) as total, count(*) filter (where status = 'succeeded') as succeeded
                            from webhook_deliveries where webhook_id = :w""")
                    .param("w", UUID.fromString(webhookId)).query().singleRow();
            long total = ((Number) counts.get("total")).longValue();
            if (total > n) throw new AssertionError("more than " + n + " deliveries: " + total);
            return total == n && ((Number) counts.get("succeeded")).longValue() == n;
        });
        List<JsonNode> got = bodies(path);
        assertThat(got).as("bodies received at " + path).hasSize(n);
        return got;
    }

    /** The one body of {@code type} about {@code execution}; fails when there is none or more than one. */
    private static JsonNode one(List<JsonNode> bodies, String type, UUID execution) {
        List<JsonNode> matching = bodies.stream().filter(b -> b.path("type").asString().equals(type)
                && b.path("data").path("execution_id").asString().equals(execution.toString())).toList();
        assertThat(matching).as(type + " of execution " + execution).hasSize(1);
        return matching.getFirst().path("data");
    }

    private static void keepTheContract(List<JsonNode> bodies) {
        for (JsonNode body : bodies) {
            assertThat(OpenApiContract.get().schemaViolations("JourneyLifecycleEvent", body)).as(body.toString()).isEmpty();
        }
    }

    private static void names(JsonNode data, UUID journey, UUID execution, UUID user, String externalUserId, String node) {
        assertThat(data.path("journey_id").asString()).isEqualTo(journey.toString());
        assertThat(data.path("version").asInt()).isEqualTo(1);
        assertThat(data.path("execution_id").asString()).isEqualTo(execution.toString());
        assertThat(data.path("user_id").asString()).isEqualTo(user.toString());
        if (externalUserId == null) assertThat(data.path("external_user_id").isNull()).isTrue();
        else assertThat(data.path("external_user_id").asString()).isEqualTo(externalUserId);
        assertThat(data.path("node_id").asString()).isEqualTo(node);
    }

    private Map<String, Long> journeyFacts(UUID appId) {
        Map<String, Long> out = new HashMap<>();
        jdbc.sql("select kind, count(*) from lifecycle_events where app_id = :app and kind like 'journey.%' group by kind")
                .param("app", appId).query((rs, n) -> out.put(rs.getString(1), rs.getLong(2))).list();
        return out;
    }

    // ---- tests -----------------------------------------------------------------------------------

    @Test
    void eachJourneyKindIsDeliveredOnceForItsExecutionWithTheDocumentedDataAndNotToOtherSubscriptions() throws Exception {
        TestApp app = newApp();
        devices(app, "ada", "bob");
        String journeysHook = webhook(app, "/journeys", JOURNEY_KINDS);
        String othersHook = webhook(app, "/others", "[\"event.custom\",\"notification.created\"]");
        UUID converting = journey(app, "convert", "converted",
                "\"converted\":{\"type\":\"goal\",\"name\":\"converted\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        UUID holding = journey(app, "hold", "pause",
                "\"pause\":{\"type\":\"wait\",\"seconds\":3600,\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        UUID broken = journey(app, "break", "a", "\"a\":{\"type\":\"exit\"}");
        // as stored under other rules: a cycle whose only pause is a past wait_until, which the reader refuses
        rows.overwriteDefinition(broken, 1, definition("break", "a",
                "\"a\":{\"type\":\"wait_until\",\"at\":\"2020-01-01T00:00:00Z\",\"next\":\"b\"},\"b\":{\"type\":\"goal\",\"next\":\"a\"}"));
        UUID ada = rows.userId(app.appId(), "ada");
        UUID bob = rows.userId(app.appId(), "bob");

        UUID completed = enter(app, converting, "convert", "ada");
        UUID cancelled = enter(app, holding, "hold", "bob");
        UUID failed = enter(app, broken, "break", "ada");
        awaitStatus(completed, "completed");
        awaitStatus(failed, "failed");
        awaitStatus(cancelled, "waiting");
        assertThat(api.delete("/v1/journeys/" + holding, app.serverKey()).status()).isEqualTo(200);
        assertThat(rows.status(cancelled)).isEqualTo("cancelled");

        // started, goal reached, completed; started, cancelled; started, failed: each once
        List<JsonNode> got = delivered(journeysHook, "/journeys", 7);
        keepTheContract(got);

        names(one(got, "journey.execution.started", completed), converting, completed, ada, "ada", "converted");
        JsonNode goal = one(got, "journey.goal.reached", completed);
        names(goal, converting, completed, ada, "ada", "converted");
        assertThat(goal.path("goal").asString()).isEqualTo("converted");
        names(one(got, "journey.execution.completed", completed), converting, completed, ada, "ada", "end");

        names(one(got, "journey.execution.started", cancelled), holding, cancelled, bob, "bob", "pause");
        JsonNode cancel = one(got, "journey.execution.cancelled", cancelled);
        names(cancel, holding, cancelled, bob, "bob", "end");
        assertThat(cancel.path("reason").asString()).isEqualTo("journey_archived");

        names(one(got, "journey.execution.started", failed), broken, failed, ada, "ada", "a");
        JsonNode failure = one(got, "journey.execution.failed", failed);
        names(failure, broken, failed, ada, "ada", "a");
        assertThat(failure.path("reason").asString()).isEqualTo(JourneyRunner.DEFINITION_UNREADABLE);

        // an execution's facts in the order they happened
        List<Instant> times = List.of("journey.execution.started", "journey.goal.reached", "journey.execution.completed").stream()
                .map(type -> got.stream().filter(b -> b.path("type").asString().equals(type)
                                && b.path("data").path("execution_id").asString().equals(completed.toString()))
                        .findFirst().orElseThrow().path("timestamp").asString())
                .map(Instant::parse).toList();
        assertThat(times).isSorted();

        // the webhook subscribed to other kinds gets the three custom events and no journey fact
        List<JsonNode> others = delivered(othersHook, "/others", 3);
        assertThat(others).extracting(b -> b.path("type").asString()).containsOnly("event.custom");
    }

    @Test
    void anExecutionStartedBySegmentEntryIsDeliveredAsStarted() throws Exception {
        TestApp app = newApp();
        devices(app, "ada", "bob");
        String hook = webhook(app, "/segment", "[\"journey.execution.started\"]");
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"gold\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}}");
        assertThat(segment.status()).as(segment.toString()).isEqualTo(201);
        assertThat(api.patch("/v1/users/ada", app.serverKey(), "{\"tags\":{\"plan\":\"gold\"}}").status()).isEqualTo(200);
        TestApi.Response created = api.post("/v1/journeys", app.serverKey(), "{\"name\":\"gold\",\"status\":\"active\","
                + "\"reentry_limit\":1,\"definition\":{\"trigger\":{\"type\":\"segment\",\"segment_id\":\""
                + segment.json().path("segment_id").asString() + "\"},\"start\":\"hold\",\"nodes\":{"
                + "\"hold\":{\"type\":\"wait\",\"seconds\":86400,\"next\":\"done\"},\"done\":{\"type\":\"exit\"}}}}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        UUID journey = UUID.fromString(created.json().path("journey_id").asString());
        UUID ada = rows.userId(app.appId(), "ada");

        // the periodic evaluation (every second in tests) starts ada, not bob
        List<JsonNode> got = delivered(hook, "/segment", 1);
        keepTheContract(got);
        UUID execution = rows.executions(journey, ada).getFirst();
        names(one(got, "journey.execution.started", execution), journey, execution, ada, "ada", "hold");
    }

    @Test
    void aBatchOfExecutionsGetsEachFactOnceAndAGoalReachedAgainIsNotReportedAgain() {
        TestApp app = newApp();
        int n = 100;
        String hook = webhook(app, "/batch", JOURNEY_KINDS);
        // users without devices (no event can start them): their executions written in one statement, as an entry does
        List<UUID> users = rows.users(app.appId(), n);
        UUID journey = journey(app, "never", "g",
                "\"g\":{\"type\":\"goal\",\"name\":\"loop\",\"next\":\"w\"},\"w\":{\"type\":\"wait\",\"seconds\":60,\"next\":\"g\"}");
        List<UUID> executions = rows.startAll(app.appId(), journey, users, "g", clock.instant());
        wakeup.wake();
        await().atMost(WAIT).until(() -> waitingAtStep(journey, 2) == n);
        // past the wait: every execution reaches the same goal node again, and waits again
        clock.advance(Duration.ofSeconds(61));
        wakeup.wake();
        await().atMost(WAIT).until(() -> waitingAtStep(journey, 4) == n);
        assertThat(api.delete("/v1/journeys/" + journey, app.serverKey()).status()).isEqualTo(200);

        List<JsonNode> got = delivered(hook, "/batch", 3 * n);
        keepTheContract(got);
        Map<UUID, String> externalIds = new HashMap<>();
        jdbc.sql("select id, external_user_id from users where app_id = :app").param("app", app.appId())
                .query((rs, i) -> externalIds.put(rs.getObject(1, UUID.class), rs.getString(2))).list();
        for (int i = 0; i < n; i++) {
            UUID execution = executions.get(i);
            String external = externalIds.get(users.get(i));
            names(one(got, "journey.execution.started", execution), journey, execution, users.get(i), external, "g");
            names(one(got, "journey.goal.reached", execution), journey, execution, users.get(i), external, "g");
            names(one(got, "journey.execution.cancelled", execution), journey, execution, users.get(i), external, "g");
        }
        assertThat(journeyFacts(app.appId())).containsOnly(Map.entry("journey.execution.started", (long) n),
                Map.entry("journey.goal.reached", (long) n), Map.entry("journey.execution.cancelled", (long) n));
    }

    private long waitingAtStep(UUID journey, int step) {
        return jdbc.sql("select count(*) from journey_executions where journey_id = :j and status = 'waiting' and step = :s")
                .param("j", journey).param("s", step).query(Long.class).single();
    }

    @Test
    void anAppWithoutAWebhookSubscribedToJourneyKindsRecordsNoJourneyFact() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        String hook = webhook(app, "/events", "[\"event.custom\"]");
        UUID converting = journey(app, "convert", "converted",
                "\"converted\":{\"type\":\"goal\",\"name\":\"converted\",\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        UUID holding = journey(app, "hold", "pause",
                "\"pause\":{\"type\":\"wait\",\"seconds\":3600,\"next\":\"end\"},\"end\":{\"type\":\"exit\"}");
        UUID done = enter(app, converting, "convert", "ada");
        UUID waiting = enter(app, holding, "hold", "ada");
        awaitStatus(done, "completed");
        awaitStatus(waiting, "waiting");
        assertThat(api.delete("/v1/journeys/" + holding, app.serverKey()).status()).isEqualTo(200);
        assertThat(rows.status(waiting)).isEqualTo("cancelled");

        assertThat(delivered(hook, "/events", 2)).extracting(b -> b.path("type").asString()).containsOnly("event.custom");
        assertThat(journeyFacts(app.appId())).isEmpty();
    }

    @Test
    void anExecutionWhoseStepFailsEveryTimeIsDeliveredAsFailedWithTheNodeItStoodAt() throws Exception {
        TestApp app = newApp();
        devices(app, "ada");
        String hook = webhook(app, "/failed", "[\"*\"]");
        UUID poisoned = journey(app, "stuck", "stuck", "\"stuck\":{\"type\":\"goal\",\"name\":\"never\"}");
        // the goal's insert fails every time, as a fault that does not go away would
        String suffix = app.appId().toString().replace("-", "");
        jdbc.sql("create function lc_stuck_" + suffix + "() returns trigger language plpgsql as $$ begin"
                + " if new.journey_id = '" + poisoned + "' then raise exception 'injected failure'; end if;"
                + " return new; end $$").update();
        jdbc.sql("create trigger lc_stuck_" + suffix + " before insert on journey_goals for each row execute function lc_stuck_"
                + suffix + "()").update();
        try {
            UUID execution = enter(app, poisoned, "stuck", "ada");
            awaitStatus(execution, "failed");
            assertThat(rows.execution(execution).get("last_error")).isEqualTo("step_failed");

            // '*': the custom event, started and failed; never a goal reached (its batches were rolled back)
            List<JsonNode> got = delivered(hook, "/failed", 3);
            List<JsonNode> journeyBodies = got.stream().filter(b -> b.path("type").asString().startsWith("journey.")).toList();
            keepTheContract(journeyBodies);
            assertThat(journeyBodies).extracting(b -> b.path("type").asString())
                    .containsExactlyInAnyOrder("journey.execution.started", "journey.execution.failed");
            UUID ada = rows.userId(app.appId(), "ada");
            JsonNode failure = one(got, "journey.execution.failed", execution);
            names(failure, poisoned, execution, ada, "ada", "stuck");
            assertThat(failure.path("reason").asString()).isEqualTo("step_failed");
        } finally {
            jdbc.sql("drop trigger lc_stuck_" + suffix + " on journey_goals").update();
            jdbc.sql("drop function lc_stuck_" + suffix + "()").update();
        }
    }
}
