package dev.pushservice.journeys;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** {@code /v1/journeys} through HTTP: versions, states, archive cancelling executions, stats, scopes, validation. */
class JourneyApiTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Autowired
    JdbcClient jdbc;
    @Autowired
    TestClock clock;
    @Autowired
    JourneyWakeup wakeup;
    @Autowired
    JourneyRepository journeys;

    @org.junit.jupiter.api.AfterEach
    void resetClock() {
        clock.reset();
    }

    static String q(String s) {
        return s.replace('\'', '"');
    }

    /** push → wait → goal → exit, on the custom event {@code event}. */
    static String definition(String event) {
        return q("""
                {'trigger':{'type':'custom_event','event_name':'%s'},'start':'hello',
                 'nodes':{'hello':{'type':'push','content':{'title':'Hi','body':'Welcome'},'next':'pause'},
                          'pause':{'type':'wait','seconds':3600,'next':'won'},
                          'won':{'type':'goal','name':'came back','next':'done'},
                          'done':{'type':'exit'}}}""".formatted(event));
    }

    private TestApi.Response create(TestApp app, String body) {
        return api.post("/v1/journeys", app.serverKey(), body);
    }

    private JsonNode created(TestApp app, String body) {
        TestApi.Response r = create(app, body);
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json();
    }

    private String journey(TestApp app, String status) {
        return created(app, "{'name':'welcome','status':'%s','definition':%s}".formatted(status, definition("signed_up"))
                .replace('\'', '"')).path("journey_id").asString();
    }

    private long journeys(TestApp app) {
        return jdbc.sql("select count(*) from journeys where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    private List<Map<String, Object>> versions(String journeyId) {
        return jdbc.sql("select version, name, status, reentry_limit, definition::text as definition from journey_versions"
                        + " where journey_id = :id order by version")
                .param("id", UUID.fromString(journeyId)).query().listOfRows();
    }

    @Test
    void createAnswersVersionOneAndReadsAndListsReturnIt() {
        TestApp app = newApp();
        JsonNode j = created(app, q("{'name':'Welcome series','definition':" + definition("signed_up") + "}"));

        assertThat(j.path("version").asInt()).isEqualTo(1);
        assertThat(j.path("status").asString()).isEqualTo("draft");
        assertThat(j.path("reentry_limit").asInt()).isEqualTo(1);
        assertThat(j.path("name").asString()).isEqualTo("Welcome series");
        assertThat(j.path("definition")).isEqualTo(JSON.readTree(definition("signed_up")));
        assertThat(j.path("warnings").isArray()).isTrue();
        assertThat(j.path("warnings")).isEmpty();
        assertThat(j.path("created_at").asString()).isEqualTo(j.path("updated_at").asString());
        String id = j.path("journey_id").asString();

        TestApi.Response read = api.get("/v1/journeys/" + id, app.serverKey());
        assertThat(read.status()).isEqualTo(200);
        assertThat(read.json()).isEqualTo(j);
        // in the order written, at every level
        assertThat(read.json().path("definition").propertyNames()).containsExactly("trigger", "start", "nodes");
        assertThat(read.json().path("definition").path("nodes").propertyNames()).containsExactly("hello", "pause", "won", "done");

        String second = journey(app, "active");
        TestApi.Response list = api.get("/v1/journeys?limit=1", app.serverKey());
        assertThat(list.status()).as(list.toString()).isEqualTo(200);
        assertThat(list.json().path("data")).hasSize(1);
        JsonNode newest = list.json().path("data").get(0);
        assertThat(newest.path("journey_id").asString()).isEqualTo(second);
        assertThat(newest.path("status").asString()).isEqualTo("active");
        assertThat(newest.path("version").asInt()).isEqualTo(1);
        assertThat(newest.path("trigger")).isEqualTo(JSON.readTree(q("{'type':'custom_event','event_name':'signed_up'}")));
        assertThat(list.json().path("pagination").path("has_more").asBoolean()).isTrue();
        JsonNode page2 = api.get("/v1/journeys?limit=1&page=2", app.serverKey()).json();
        assertThat(page2.path("data").get(0).path("journey_id").asString()).isEqualTo(id);
        assertThat(page2.path("pagination").path("has_more").asBoolean()).isFalse();
        assertThat(versions(id)).hasSize(1);
    }

    @Test
    void everyPatchAddsAnImmutableVersionAndKeepsTheTriggerColumnsCurrent() {
        TestApp app = newApp();
        String id = journey(app, "draft");
        clock.advance(Duration.ofMinutes(1));

        JsonNode v2 = api.patch("/v1/journeys/" + id, app.serverKey(), q("{'name':'renamed'}")).json();
        assertThat(v2.path("version").asInt()).isEqualTo(2);
        assertThat(v2.path("name").asString()).isEqualTo("renamed");
        assertThat(v2.path("definition")).isEqualTo(JSON.readTree(definition("signed_up")));

        TestApi.Response v3 = api.patch("/v1/journeys/" + id, app.serverKey(),
                q("{'definition':" + definition("bought") + ",'reentry_limit':5}"));
        assertThat(v3.status()).as(v3.toString()).isEqualTo(200);
        assertThat(v3.json().path("version").asInt()).isEqualTo(3);
        assertThat(v3.json().path("reentry_limit").asInt()).isEqualTo(5);
        assertThat(v3.json().path("name").asString()).isEqualTo("renamed");
        assertThat(v3.json().path("definition").path("trigger").path("event_name").asString()).isEqualTo("bought");
        assertThat(v3.json().path("updated_at").asString()).isNotEqualTo(v3.json().path("created_at").asString());

        // a PATCH that changes nothing still makes a version (spec: each update creates one)
        assertThat(api.patch("/v1/journeys/" + id, app.serverKey(), "{}").json().path("version").asInt()).isEqualTo(4);

        List<Map<String, Object>> versions = versions(id);
        assertThat(versions).extracting(v -> v.get("version")).containsExactly(1, 2, 3, 4);
        assertThat(versions).extracting(v -> v.get("name")).containsExactly("welcome", "renamed", "renamed", "renamed");
        assertThat(versions).extracting(v -> v.get("reentry_limit")).containsExactly(1, 1, 5, 5);
        assertThat(JSON.readTree((String) versions.get(0).get("definition"))).isEqualTo(JSON.readTree(definition("signed_up")));
        assertThat(JSON.readTree((String) versions.get(1).get("definition"))).isEqualTo(JSON.readTree(definition("signed_up")));
        assertThat(JSON.readTree((String) versions.get(2).get("definition"))).isEqualTo(JSON.readTree(definition("bought")));
        assertThat(jdbc.sql("select trigger_type || ':' || trigger_event_name || ':' || current_version from journeys where id = :id")
                .param("id", UUID.fromString(id)).query(String.class).single()).isEqualTo("custom_event:bought:4");

        UUID segment = UUID.fromString(api.post("/v1/segments", app.serverKey(),
                q("{'name':'ios','filter':{'field':'platform','operator':'eq','value':'ios'}}")).json().path("segment_id").asString());
        ObjectNode bySegment = (ObjectNode) JSON.readTree(definition("x"));
        bySegment.set("trigger", JSON.readTree(q("{'type':'segment','segment_id':'" + segment + "'}")));
        TestApi.Response v5 = api.patch("/v1/journeys/" + id, app.serverKey(), "{\"definition\":" + bySegment + "}");
        assertThat(v5.status()).as(v5.toString()).isEqualTo(200);
        assertThat(jdbc.sql("select trigger_type || ':' || coalesce(trigger_event_name, '-') || ':' || trigger_segment_id"
                        + " from journeys where id = :id")
                .param("id", UUID.fromString(id)).query(String.class).single()).isEqualTo("segment:-:" + segment);
    }

    @Test
    void concurrentPatchesEachGetTheirOwnVersion() throws Exception {
        TestApp app = newApp();
        String id = journey(app, "draft");
        int patches = 8;
        List<java.util.concurrent.Future<TestApi.Response>> answers = new ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(patches)) {
            for (int i = 0; i < patches; i++) {
                String body = i % 2 == 0 ? "{\"name\":\"n" + i + "\"}" : "{\"definition\":" + definition("e" + i) + "}";
                answers.add(pool.submit(() -> api.patch("/v1/journeys/" + id, app.serverKey(), body)));
            }
        }
        List<Integer> versions = new ArrayList<>();
        for (var answer : answers) {
            TestApi.Response r = answer.get();
            assertThat(r.status()).as(r.toString()).isEqualTo(200);
            versions.add(r.json().path("version").asInt());
        }
        assertThat(versions).containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.rangeClosed(2, patches + 1).boxed().toList());
        // no PATCH lost another's change: the last version holds the last name and the last definition
        List<Map<String, Object>> rows = versions(id);
        assertThat(rows).hasSize(patches + 1);
        for (int v = 1; v < rows.size(); v++) {
            Map<String, Object> previous = rows.get(v - 1);
            Map<String, Object> row = rows.get(v);
            boolean renamed = !row.get("name").equals(previous.get("name"));
            boolean redefined = !JSON.readTree((String) row.get("definition")).equals(JSON.readTree((String) previous.get("definition")));
            assertThat(renamed ^ redefined).as("version %s changes exactly one thing", v + 1).isTrue();
        }
    }

    @Test
    void reentryLimitIsClampedAndMustBeAnInteger() {
        TestApp app = newApp();
        Map<String, Integer> clamped = Map.of("0", 1, "-5", 1, "1", 1, "37", 37, "100", 100, "101", 100,
                "1000000000000000000000000000000", 100, "-1000000000000000000000000000000", 1);
        clamped.forEach((given, stored) -> assertThat(created(app, q("{'name':'r','reentry_limit':" + given
                + ",'definition':" + definition("e") + "}")).path("reentry_limit").asInt()).as(given).isEqualTo(stored));
        String id = journey(app, "draft");
        assertThat(api.patch("/v1/journeys/" + id, app.serverKey(), "{\"reentry_limit\":500}").json()
                .path("reentry_limit").asInt()).isEqualTo(100);
        long before = journeys(app);
        for (String bad : List.of("'5'", "5.5", "5.0", "true", "[5]")) {
            TestApi.Response r = create(app, q("{'name':'r','reentry_limit':" + bad + ",'definition':" + definition("e") + "}"));
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).containsExactly("reentry_limit");
            assertError(api.patch("/v1/journeys/" + id, app.serverKey(), q("{'reentry_limit':" + bad + "}")), 422, "validation_failed");
        }
        assertThat(journeys(app)).isEqualTo(before);
        assertThat(versions(id)).hasSize(2);
    }

    @Test
    void statusesMoveAsTheSpecSaysFromAnyStateArchivedIncluded() {
        TestApp app = newApp();
        AtomicInteger wakes = new AtomicInteger();
        wakeup.onWake(wakes::incrementAndGet);

        String id = journey(app, "active");
        assertThat(wakes.get()).as("creating an active journey wakes the worker").isPositive();
        String path = "/v1/journeys/" + id;
        for (String status : List.of("paused", "active", "draft", "active", "paused")) {
            int before = wakes.get();
            TestApi.Response r = api.patch(path, app.serverKey(), "{\"status\":\"" + status + "\"}");
            assertThat(r.status()).as(r.toString()).isEqualTo(200);
            assertThat(r.json().path("status").asString()).isEqualTo(status);
            if (status.equals("active")) assertThat(wakes.get()).isGreaterThan(before);
        }
        assertThat(versions(id)).extracting(v -> v.get("status"))
                .containsExactly("active", "paused", "active", "draft", "active", "paused");

        assertError(create(app, q("{'name':'n','status':'paused','definition':" + definition("e") + "}")), 422, "validation_failed");
        assertError(create(app, q("{'name':'n','status':'archived','definition':" + definition("e") + "}")), 422, "validation_failed");
        assertError(api.patch(path, app.serverKey(), "{\"status\":\"running\"}"), 422, "validation_failed");

        TestApi.Response archived = api.patch(path, app.serverKey(), "{\"status\":\"archived\"}");
        assertThat(archived.json().path("status").asString()).isEqualTo("archived");
        assertThat(archived.json().path("version").asInt()).isEqualTo(7);
        // the spec's state table: "any | PATCH with status": archived is not final
        TestApi.Response renamed = api.patch(path, app.serverKey(), "{\"name\":\"again\"}");
        assertThat(renamed.status()).as(renamed.toString()).isEqualTo(200);
        assertThat(renamed.json().path("status").asString()).isEqualTo("archived");
        int before = wakes.get();
        TestApi.Response reactivated = api.patch(path, app.serverKey(), "{\"status\":\"active\"}");
        assertThat(reactivated.status()).as(reactivated.toString()).isEqualTo(200);
        assertThat(reactivated.json().path("status").asString()).isEqualTo("active");
        assertThat(reactivated.json().path("version").asInt()).isEqualTo(9);
        assertThat(wakes.get()).isGreaterThan(before);
        assertThat(versions(id)).hasSize(9);
        assertThat(api.get(path, app.serverKey()).json().path("status").asString()).isEqualTo("active");
    }

    private UUID execution(TestApp app, String journeyId, String status) {
        Instant now = clock.instant();
        UUID id = dev.pushservice.platform.storage.Uuid7.at(now);
        jdbc.sql("""
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step, due_at,
                                                        entered_at, updated_at, ended_at)
                        values (:id, :app, :journey, 1, :user, :status, :node, 1, :due, :now, :now, :ended)""")
                .param("id", id).param("app", app.appId()).param("journey", UUID.fromString(journeyId))
                .param("user", UUID.randomUUID()).param("status", status)
                .param("node", status.equals("active") || status.equals("waiting") ? "pause" : null)
                // not due while the test runs: the journey worker would run (and here fail: no such user) a due one
                .param("due", status.equals("active") || status.equals("waiting") ? at(now.plus(java.time.Duration.ofDays(1))) : null)
                .param("now", at(now))
                .param("ended", status.equals("active") || status.equals("waiting") ? null : at(now)).update();
        return id;
    }

    private static OffsetDateTime at(Instant i) {
        return OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    private Map<String, Object> executionRow(UUID id) {
        return jdbc.sql("select status, node_id, ended_at from journey_executions where id = :id").param("id", id).query().singleRow();
    }

    @Test
    void deleteArchivesAndCancelsActiveAndWaitingExecutionsKeepingHistory() {
        TestApp app = newApp();
        String id = journey(app, "active");
        String other = journey(app, "active");
        UUID active = execution(app, id, "active");
        UUID waiting = execution(app, id, "waiting");
        UUID completed = execution(app, id, "completed");
        UUID failed = execution(app, id, "failed");
        UUID elsewhere = execution(app, other, "waiting");
        clock.advance(Duration.ofHours(2));
        Instant deletedAt = clock.instant();

        TestApi.Response r = api.delete("/v1/journeys/" + id, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.json().path("status").asString()).isEqualTo("archived");
        assertThat(r.json().path("version").asInt()).as("DELETE makes no version").isEqualTo(1);
        for (UUID cancelled : List.of(active, waiting)) {
            Map<String, Object> row = executionRow(cancelled);
            assertThat(row.get("status")).isEqualTo("cancelled");
            assertThat(row.get("node_id")).isNull();
            assertThat(((java.sql.Timestamp) row.get("ended_at")).toInstant())
                    .isBetween(deletedAt.truncatedTo(java.time.temporal.ChronoUnit.MICROS), clock.instant());
        }
        assertThat(executionRow(completed).get("status")).isEqualTo("completed");
        assertThat(executionRow(failed).get("status")).isEqualTo("failed");
        assertThat(executionRow(elsewhere).get("status")).isEqualTo("waiting");

        JsonNode stats = api.get("/v1/journeys/" + id + "/stats", app.serverKey()).json();
        assertThat(totals(stats)).isEqualTo(Map.of("active", 0L, "waiting", 0L, "completed", 1L, "cancelled", 2L, "failed", 1L));

        // again: answered unchanged
        TestApi.Response again = api.delete("/v1/journeys/" + id, app.serverKey());
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json()).isEqualTo(r.json());
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and action = 'journey.archive'")
                .param("app", app.appId()).query(Long.class).single()).isEqualTo(1);
    }

    @Test
    void patchToArchivedCancelsActiveAndWaitingExecutions() {
        TestApp app = newApp();
        String id = journey(app, "active");
        UUID active = execution(app, id, "active");
        UUID waiting = execution(app, id, "waiting");
        UUID completed = execution(app, id, "completed");
        api.patch("/v1/journeys/" + id, app.serverKey(), "{\"status\":\"paused\"}");
        assertThat(executionRow(waiting).get("status")).as("pausing holds executions").isEqualTo("waiting");

        TestApi.Response r = api.patch("/v1/journeys/" + id, app.serverKey(), "{\"status\":\"archived\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(executionRow(active).get("status")).isEqualTo("cancelled");
        assertThat(executionRow(waiting).get("status")).isEqualTo("cancelled");
        assertThat(executionRow(completed).get("status")).isEqualTo("completed");
    }

    private static Map<String, Long> totals(JsonNode stats) {
        Map<String, Long> totals = new java.util.HashMap<>();
        stats.path("executions").forEach(e -> totals.put(e.path("status").asString(), e.path("total").asLong()));
        return totals;
    }

    @Test
    void statsListEveryStatusAndTheGoalsReached() {
        TestApp app = newApp();
        String id = journey(app, "active");
        JsonNode empty = api.get("/v1/journeys/" + id + "/stats", app.serverKey()).json();
        assertThat(empty.path("journey_id").asString()).isEqualTo(id);
        assertThat(empty.path("executions")).extracting(e -> e.path("status").asString())
                .containsExactly("active", "waiting", "completed", "cancelled", "failed");
        assertThat(totals(empty).values()).containsOnly(0L);
        assertThat(empty.path("goals")).hasSize(1);
        assertThat(empty.path("goals").get(0)).isEqualTo(JSON.readTree(q("{'node_id':'won','name':'came back','total':0}")));

        List<UUID> done = new ArrayList<>();
        for (int i = 0; i < 3; i++) done.add(execution(app, id, "completed"));
        execution(app, id, "waiting");
        for (UUID e : done.subList(0, 2)) goal(app, id, e, "won");
        goal(app, id, done.get(2), "old_goal");
        JsonNode stats = api.get("/v1/journeys/" + id + "/stats", app.serverKey()).json();
        assertThat(totals(stats)).isEqualTo(Map.of("active", 0L, "waiting", 1L, "completed", 3L, "cancelled", 0L, "failed", 0L));
        assertThat(stats.path("goals")).isEqualTo(JSON.readTree(q(
                "[{'node_id':'won','name':'came back','total':2},{'node_id':'old_goal','name':null,'total':1}]")));

        // the counts are kept as one row per statement (here 4 + 3) until folded into one per key (the
        // recurring task may have folded them already): the same answer from fewer rows
        journeys.foldCounts(JourneyCounts.BATCH);
        assertThat(countRows(id)).isEqualTo(2 + 2);
        assertThat(api.get("/v1/journeys/" + id + "/stats", app.serverKey()).json()).isEqualTo(stats);
    }

    private long countRows(String journeyId) {
        return jdbc.sql("""
                        select (select count(*) from journey_execution_counts where journey_id = cast(:j as uuid))
                             + (select count(*) from journey_goal_counts where journey_id = cast(:j as uuid))""")
                .param("j", journeyId).query(Long.class).single();
    }

    private void goal(TestApp app, String journeyId, UUID execution, String node) {
        jdbc.sql("""
                        insert into journey_goals (execution_id, node_id, app_id, journey_id, reached_at)
                        values (:e, :node, :app, :journey, now())""")
                .param("e", execution).param("node", node).param("app", app.appId())
                .param("journey", UUID.fromString(journeyId)).update();
    }

    @Test
    void scopesAreTheSpecsAndAnotherAppsJourneyIsNotFound() {
        TestApp app = newApp();
        String id = journey(app, "active");
        String path = "/v1/journeys/" + id;
        String read = serverKey(app, Scope.NOTIFICATIONS_READ);
        String write = serverKey(app, Scope.NOTIFICATIONS_WRITE);
        assertThat(api.get("/v1/journeys", read).status()).isEqualTo(200);
        assertThat(api.get(path, read).status()).isEqualTo(200);
        assertThat(api.get(path + "/stats", read).status()).isEqualTo(200);
        assertError(api.post("/v1/journeys", read, q("{'name':'n','definition':" + definition("e") + "}")), 403, "forbidden");
        assertError(api.patch(path, read, "{\"name\":\"x\"}"), 403, "forbidden");
        assertError(api.delete(path, read), 403, "forbidden");
        assertError(api.get("/v1/journeys", write), 403, "forbidden");
        assertError(api.get(path, write), 403, "forbidden");
        assertError(api.get(path + "/stats", write), 403, "forbidden");
        assertError(api.get(path, app.publicKey()), 403, "forbidden");
        assertThat(api.patch(path, write, "{\"name\":\"x\"}").status()).isEqualTo(200);

        TestApp other = newApp();
        assertError(api.get(path, other.serverKey()), 404, "not_found");
        assertError(api.get(path + "/stats", other.serverKey()), 404, "not_found");
        assertError(api.patch(path, other.serverKey(), "{\"status\":\"archived\"}"), 404, "not_found");
        assertError(api.delete(path, other.serverKey()), 404, "not_found");
        assertThat(api.get("/v1/journeys", other.serverKey()).json().path("data")).isEmpty();
        JsonNode still = api.get(path, app.serverKey()).json();
        assertThat(still.path("status").asString()).isEqualTo("active");
        assertThat(still.path("version").asInt()).isEqualTo(2);
        assertError(api.get("/v1/journeys/" + UUID.randomUUID(), app.serverKey()), 404, "not_found");
        assertError(api.get("/v1/journeys/not-a-uuid", app.serverKey()), 422, "validation_failed");
    }

    @Test
    void unreachableNodesAreAnsweredAsWarnings() {
        TestApp app = newApp();
        ObjectNode d = (ObjectNode) JSON.readTree(definition("e"));
        ((ObjectNode) d.path("nodes")).set("orphan", JSON.readTree(q("{'type':'exit'}")));
        JsonNode j = created(app, "{\"name\":\"w\",\"definition\":" + d + "}");
        assertThat(j.path("warnings")).hasSize(1);
        assertThat(j.path("warnings").get(0).path("field").asString()).isEqualTo("definition.nodes.orphan");
        assertThat(api.get("/v1/journeys/" + j.path("journey_id").asString(), app.serverKey()).json().path("warnings"))
                .isEqualTo(j.path("warnings"));
    }

    @Test
    void segmentTriggersAndWebhookNodesMustNameWhatTheAppHas() {
        TestApp app = newApp();
        TestApp other = newApp();
        String webhook = api.post("/v1/webhooks", app.serverKey(),
                q("{'url':'http://127.0.0.1:9/hook','events':['*']}")).json().path("webhook_id").asString();
        String othersWebhook = api.post("/v1/webhooks", other.serverKey(),
                q("{'url':'http://127.0.0.1:9/hook','events':['*']}")).json().path("webhook_id").asString();
        String segment = api.post("/v1/segments", app.serverKey(),
                q("{'name':'ios','filter':{'field':'platform','operator':'eq','value':'ios'}}")).json().path("segment_id").asString();
        String archivedSegment = api.post("/v1/segments", app.serverKey(),
                q("{'name':'old','filter':{'field':'platform','operator':'eq','value':'ios'}}")).json().path("segment_id").asString();
        api.delete("/v1/segments/" + archivedSegment, app.serverKey());
        String othersSegment = api.post("/v1/segments", other.serverKey(),
                q("{'name':'ios','filter':{'field':'platform','operator':'eq','value':'ios'}}")).json().path("segment_id").asString();

        java.util.function.BiFunction<String, String, String> body = (seg, hook) -> q("""
                {'name':'refs','status':'active','definition':{'trigger':{'type':'segment','segment_id':'%s'},'start':'h',
                 'nodes':{'h':{'type':'webhook','webhook_id':'%s','next':'h2'},
                          'h2':{'type':'webhook','webhook_id':'%s','next':'x'},'x':{'type':'exit'}}}}""".formatted(seg, hook, hook));
        record Bad(String segment, String webhook, List<String> fields) {
        }
        List<Bad> bad = List.of(
                new Bad(UUID.randomUUID().toString(), webhook, List.of("definition.trigger.segment_id")),
                new Bad(archivedSegment, webhook, List.of("definition.trigger.segment_id")),
                new Bad(othersSegment, webhook, List.of("definition.trigger.segment_id")),
                new Bad(segment, UUID.randomUUID().toString(), List.of("definition.nodes.h.webhook_id", "definition.nodes.h2.webhook_id")),
                new Bad(segment, othersWebhook, List.of("definition.nodes.h.webhook_id", "definition.nodes.h2.webhook_id")),
                new Bad(archivedSegment, othersWebhook, List.of("definition.trigger.segment_id",
                        "definition.nodes.h.webhook_id", "definition.nodes.h2.webhook_id")));
        for (Bad b : bad) {
            TestApi.Response r = create(app, body.apply(b.segment(), b.webhook()));
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(b.toString())
                    .containsExactlyElementsOf(b.fields());
        }
        assertThat(journeys(app)).isZero();

        JsonNode ok = created(app, body.apply(segment, webhook));
        String id = ok.path("journey_id").asString();
        assertThat(ok.path("definition").path("trigger").path("segment_id").asString()).isEqualTo(segment);
        // a PATCH with a bad reference changes nothing
        TestApi.Response r = api.patch("/v1/journeys/" + id, app.serverKey(),
                "{\"definition\":" + JSON.readTree(body.apply(archivedSegment, webhook)).path("definition") + "}");
        assertError(r, 422, "validation_failed");
        assertThat(versions(id)).hasSize(1);
        // pausing a journey whose segment has since been archived works; making it active again does not
        api.delete("/v1/segments/" + segment, app.serverKey());
        assertThat(api.patch("/v1/journeys/" + id, app.serverKey(), "{\"status\":\"paused\"}").status()).isEqualTo(200);
        TestApi.Response restart = api.patch("/v1/journeys/" + id, app.serverKey(), "{\"status\":\"active\"}");
        assertError(restart, 422, "validation_failed");
        assertThat(restart.json().path("error").path("details").findValuesAsString("field")).containsExactly("definition.trigger.segment_id");
        assertThat(versions(id)).hasSize(2);
    }

    @Test
    void everyBadInputIsA422NamingItsPathAndCreatesNothing() {
        TestApp app = newApp();
        String good = definition("e");
        String n = "definition.nodes.";
        record Case(String body, List<String> fields) {
            Case(String body, String field) {
                this(body, List.of(field));
            }
        }
        List<Case> cases = List.of(
                new Case("{'definition':" + good + "}", "name"),
                new Case("{'name':'','definition':" + good + "}", "name"),
                new Case("{'name':5,'definition':" + good + "}", "name"),
                new Case("{'name':'" + "n".repeat(191) + "','definition':" + good + "}", "name"),
                new Case("{'name':'a\\u0001b','definition':" + good + "}", "name"),
                new Case("{'name':'n','status':5,'definition':" + good + "}", "status"),
                new Case("{'name':'n'}", "definition"),
                new Case("{'name':'n','definition':null}", "definition"),
                new Case("{'name':'n','definition':[]}", "definition"),
                new Case("{'name':'n','definition':{}}", List.of("definition.trigger", "definition.start", "definition.nodes")),
                new Case("{'definition':{'trigger':{'type':'cron'},'start':'a','nodes':{'a':{'type':'exit'}}}}",
                        List.of("name", "definition.trigger.type")),
                new Case(withNode(good, "pause", "{'type':'wait','seconds':'60','next':'won'}"), n + "pause.seconds"),
                new Case(withNode(good, "pause", "{'type':'wait','seconds':60.5,'next':'won'}"), n + "pause.seconds"),
                new Case(withNode(good, "pause", "{'type':'wait','seconds':0,'next':'won'}"), n + "pause.seconds"),
                new Case(withNode(good, "pause", "{'type':'wait','seconds':2678401,'next':'won'}"), n + "pause.seconds"),
                new Case(withNode(good, "pause", "{'type':'wait','seconds':60,'next':'nowhere'}"), n + "pause.next"),
                new Case(withNode(good, "pause", "{'type':'wait_until','at':'2026-12-01T09:00:00','next':'won'}"), n + "pause.at"),
                new Case(withNode(good, "pause", "{'type':'wait_until','at':'soon','next':'won'}"), n + "pause.at"),
                // java.time parses it, no timestamptz holds it: an execution reaching it failed every batch it was in
                new Case(withNode(good, "pause", "{'type':'wait_until','at':'+999999999-12-31T23:59:59Z','next':'won'}"), n + "pause.at"),
                new Case(withNode(good, "pause", "{'type':'branch','filter':{'field':'created_at','operator':'lt',"
                        + "'value':'+999999999-12-31T23:59:59Z'},'yes':'won','no':'done'}"), n + "pause.filter.value"),
                new Case(withNode(good, "pause", "{'type':'branch','filter':{'field':'platform','operator':'eq','value':'pc'},"
                        + "'yes':'won','no':'done'}"), n + "pause.filter.value"),
                new Case(withNode(good, "pause", "{'type':'branch','filter':{'field':'platform','operator':'eq','value':'ios'},"
                        + "'yes':'won'}"), n + "pause.no"),
                new Case(withNode(good, "pause", "{'type':'split','branches':[{'weight':50,'next':'won'},{'weight':40,'next':'done'}]}"),
                        n + "pause.branches"),
                new Case(withNode(good, "pause", "{'type':'split','branches':[{'weight':100,'next':'won'}]}"), n + "pause.branches"),
                new Case(withNode(good, "pause", "{'type':'split','branches':[{'weight':50,'next':'won'},{'weight':'50','next':'done'}]}"),
                        n + "pause.branches[1].weight"),
                new Case(withNode(good, "pause", "{'type':'split','branches':[{'weight':0,'next':'won'},{'weight':100,'next':'done'}]}"),
                        n + "pause.branches[0].weight"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'body':'b'},'next':'pause'}"), n + "hello.content.title"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t'},'next':'pause'}"), n + "hello.content.body"),
                // a push step's content follows a notification's rules (docs/api-decisions.md, "Notification URLs")
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t','body':'b','click_url':'javascript:alert(1)'},"
                        + "'next':'pause'}"), n + "hello.content.click_url"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t','body':'b','image_url':'http://x/i.png'},"
                        + "'next':'pause'}"), n + "hello.content.image_url"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'a\\u0007b','body':'b'},'next':'pause'}"),
                        n + "hello.content.title"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t','body':'b'},'priority':'urgent','next':'pause'}"),
                        n + "hello.priority"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t','body':'b'},'interruption_level':'x',"
                        + "'next':'pause'}"), n + "hello.interruption_level"),
                new Case(withNode(good, "hello", "{'type':'push','content':{'title':'t','body':'b'}}"), n + "hello.next"),
                new Case(withNode(good, "pause", "{'type':'webhook','webhook_id':'nope','next':'won'}"), n + "pause.webhook_id"),
                new Case(withNode(good, "won", "{'type':'goal','name':'" + "g".repeat(191) + "','next':'done'}"), n + "won.name"),
                new Case(withNode(good, "won", "{'type':'teleport'}"), n + "won.type"),
                new Case(withNode(good, "won", "{'type':'goal','next':'hello'}"), List.of()), // through the wait: allowed
                new Case(withNode(good, "won", "{'type':'goal','next':'won'}"), n + "won"),
                new Case(withNode(good, "bad id", "{'type':'exit'}"), "definition.nodes"),
                new Case(good.replace("'start':'hello'".replace('\'', '"'), "\"start\":\"nowhere\""), "definition.start"));
        List<String> failures = new ArrayList<>();
        for (Case c : cases) {
            boolean wholeBody = c.body().startsWith("{'name'") || c.body().startsWith("{'definition'");
            String body = q(wholeBody ? c.body() : "{'name':'n','definition':" + c.body() + "}");
            TestApi.Response r = create(app, body);
            if (c.fields().isEmpty()) {
                if (r.status() != 201) failures.add(c.body() + ": " + r);
                continue;
            }
            if (r.status() != 422) {
                failures.add(c.body() + ": " + r.status());
                continue;
            }
            List<String> fields = r.json().path("error").path("details").findValuesAsString("field");
            if (!fields.equals(c.fields())) failures.add(c.body() + ": " + fields + ", expected " + c.fields());
        }
        assertThat(failures).isEmpty();
        assertThat(journeys(app)).as("only the allowed cycle").isEqualTo(1);

        assertError(api.post("/v1/journeys", app.serverKey(), "[]"), 400, "malformed_request");
        assertError(api.post("/v1/journeys", app.serverKey(), "{"), 400, "malformed_request");
    }

    /** {@code definition} with node {@code id} set to {@code node} (both in quote-free form). */
    static String withNode(String definition, String id, String node) {
        ObjectNode d = (ObjectNode) JSON.readTree(definition);
        ((ObjectNode) d.path("nodes")).set(id, JSON.readTree(q(node)));
        return d.toString().replace('"', '\'');
    }

    @Test
    void aBadPatchChangesNothing() {
        TestApp app = newApp();
        String id = journey(app, "active");
        String path = "/v1/journeys/" + id;
        for (String body : List.of("{'name':null}", "{'name':''}", "{'status':null}", "{'status':'running'}",
                "{'reentry_limit':null}", "{'definition':null}", "{'definition':{}}", "{'name':'ok','definition':{'start':'x'}}",
                "{'definition':" + withNode(definition("e"), "pause", "{'type':'wait','seconds':0,'next':'won'}") + "}")) {
            assertError(api.patch(path, app.serverKey(), q(body)), 422, "validation_failed");
        }
        JsonNode j = api.get(path, app.serverKey()).json();
        assertThat(j.path("version").asInt()).isEqualTo(1);
        assertThat(j.path("name").asString()).isEqualTo("welcome");
        assertThat(versions(id)).hasSize(1);
        assertThat(jdbc.sql("select action from audit_log where app_id = :app and target_id = :id order by occurred_at")
                .param("app", app.appId()).param("id", id).query(String.class).list()).containsExactly("journey.create");
    }
}
