package dev.pushservice.journeys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import dev.pushservice.support.TestTokens;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * How executions start: custom events of known users (in the event's transaction, bounded by
 * reentry_limit) and users entering a segment (the periodic evaluation, every second in tests).
 * Events go in through {@code POST /v1/events}, journeys through {@code /v1/journeys}; what started is
 * read from {@code journey_executions} (the worker may already have moved it on).
 */
class JourneyEntryTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;
    @Autowired
    TestClock clock;

    @AfterEach
    void resetClock() {
        clock.reset();
    }

    /** An execution as the entry wrote it (the worker may have moved it on since: step > 0). */
    record Execution(UUID userId, int version, String status, String nodeId, int step, Instant enteredAt, Instant dueAt) {
    }

    @Test
    void aCustomEventOfAKnownUserStartsEveryActiveJourneyOfThatName() {
        TestApp app = newApp();
        UUID first = journey(app, "active", 1, "signed_up");
        UUID second = journey(app, "active", 1, "signed_up");
        UUID otherName = journey(app, "active", 1, "signed_up_later");
        UUID paused = journey(app, "paused", 1, "signed_up");
        UUID draft = journey(app, "draft", 1, "signed_up");
        UUID archived = journey(app, "archived", 1, "signed_up");
        TestApp otherApp = newApp();
        UUID otherAppsJourney = journey(otherApp, "active", 1, "signed_up");
        Device ada = device(app, "ada");

        UUID event = event(app, ada.id(), "signed_up");

        // no waiting: the executions committed with the event, before its 202
        for (UUID started : List.of(first, second)) {
            List<Execution> executions = executions(started);
            assertThat(executions).as("journey %s", started).hasSize(1);
            Execution e = executions.getFirst();
            assertThat(e.userId()).isEqualTo(ada.userId());
            assertThat(e.version()).isEqualTo(1);
            assertThat(e.enteredAt()).isEqualTo(receivedAt(app, event));
            assertThat(e.step() > 0 || ("hold".equals(e.nodeId()) && "active".equals(e.status())
                    && e.enteredAt().equals(e.dueAt()))).as(e.toString()).isTrue();
        }
        for (UUID notStarted : List.of(otherName, paused, draft, archived, otherAppsJourney)) {
            assertThat(executions(notStarted)).as("journey %s", notStarted).isEmpty();
        }
    }

    @Test
    void onlyCustomEventsOfADeviceWithAKnownUserStartExecutions() {
        TestApp app = newApp();
        UUID journey = journey(app, "active", 100, "paid");
        Device anonymous = device(app, null);
        Device ada = device(app, "ada");

        event(app, anonymous.id(), "paid");
        accepted(api.post("/v1/events", app.serverKey(), "{\"event_type\":\"custom\",\"event_name\":\"paid\"}"));
        accepted(api.post("/v1/events", app.publicKey(),
                "{\"event_type\":\"outcome\",\"event_name\":\"paid\",\"device_id\":\"" + ada.id() + "\"}"));
        event(app, ada.id(), "Paid");
        assertThat(executions(journey)).isEmpty();

        event(app, ada.id(), "paid");
        assertThat(executions(journey)).extracting(Execution::userId).containsExactly(ada.userId());
    }

    @Test
    void reentryLimitBoundsTheExecutionsOneUserStarts() {
        TestApp app = newApp();
        UUID once = journey(app, "active", 1, "opened_app");
        UUID twice = journey(app, "active", 2, "opened_app");
        Device ada = device(app, "ada");
        Device bob = device(app, "bob");
        // a second device of the same user counts against the same limit
        Device adaTablet = device(app, "ada");

        event(app, ada.id(), "opened_app");
        event(app, ada.id(), "opened_app");
        event(app, adaTablet.id(), "opened_app");
        event(app, bob.id(), "opened_app");

        assertThat(executions(once)).extracting(Execution::userId).containsExactlyInAnyOrder(ada.userId(), bob.userId());
        assertThat(executions(twice)).extracting(Execution::userId)
                .containsExactlyInAnyOrder(ada.userId(), ada.userId(), bob.userId());
    }

    @Test
    void concurrentEventsOfOneUserStayWithinTheReentryLimit() throws Exception {
        TestApp app = newApp();
        UUID journey = journey(app, "active", 3, "tapped");
        UUID unlimited = journey(app, "active", 100, "tapped");
        Device ada = device(app, "ada");
        Device adaPhone = device(app, "ada");
        int events = 40;
        // concurrent requests: the writers put some in one batch (one statement asks for several entries)
        // and some in concurrent batches (two transactions upsert the same journey_entries row)
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<TestApi.Response>> answers = new ArrayList<>();
            for (int i = 0; i < events; i++) {
                String device = (i % 2 == 0 ? ada : adaPhone).id().toString();
                answers.add(pool.submit(() -> api.post("/v1/events", app.publicKey(),
                        "{\"event_type\":\"custom\",\"event_name\":\"tapped\",\"device_id\":\"" + device + "\"}")));
            }
            for (Future<TestApi.Response> answer : answers) accepted(answer.get());
        }
        assertThat(executions(journey)).hasSize(3);
        assertThat(executions(unlimited)).hasSize(40);
    }

    @Test
    void executionsKeepTheVersionCurrentWhenTheyEntered() {
        TestApp app = newApp();
        UUID journey = journey(app, "active", 100, "ordered");
        Device ada = device(app, "ada");
        event(app, ada.id(), "ordered");

        int second = newVersion(app, journey, "ordered", "again");
        event(app, ada.id(), "ordered");

        List<Execution> executions = executions(journey);
        assertThat(executions).extracting(Execution::version).containsExactlyInAnyOrder(1, second);
        Execution entered = executions.stream().filter(e -> e.version() == second).findFirst().orElseThrow();
        assertThat(entered.step() > 0 || "again".equals(entered.nodeId())).as(entered.toString()).isTrue();
    }

    @Test
    void usersEnteringASegmentStartOnceAndAgainAfterLeavingUpToTheLimit() {
        TestApp app = newApp();
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"gold\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}}");
        assertThat(segment.status()).as(segment.toString()).isEqualTo(201);
        UUID segmentId = UUID.fromString(segment.json().path("segment_id").asString());
        Device ada = device(app, "ada");
        Device bob = device(app, "bob");
        Device cy = device(app, "cy");
        tags(app, "ada", "gold");
        tags(app, "bob", "silver");
        UUID journey = segmentJourney(app, "active", 2, segmentId);
        UUID paused = segmentJourney(app, "paused", 2, segmentId);

        // already in the segment when the journey became active: ada enters at the first evaluation
        await().atMost(Duration.ofSeconds(30)).until(() -> executions(journey).size() == 1);
        assertThat(executions(journey).getFirst().userId()).isEqualTo(ada.userId());

        // the evaluation uses the application clock
        clock.advance(Duration.ofHours(2));
        Instant movedTo = clock.instant();
        tags(app, "bob", "gold");
        await().atMost(Duration.ofSeconds(30)).until(() -> executions(journey).size() == 2);
        Execution bobs = executions(journey).stream().filter(e -> e.userId().equals(bob.userId())).findFirst().orElseThrow();
        assertThat(bobs.enteredAt()).isAfterOrEqualTo(movedTo.minusSeconds(1));

        // ada leaves, comes back: a second entry; leaves and comes back again: the limit (2) is reached
        for (int round = 0; round < 2; round++) {
            tags(app, "ada", "silver");
            await().atMost(Duration.ofSeconds(30)).until(() -> !member(journey, ada.userId()));
            tags(app, "ada", "gold");
            await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, ada.userId()));
        }
        tags(app, "cy", "gold");
        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, cy.userId()));
        assertThat(executions(journey)).extracting(Execution::userId)
                .containsExactlyInAnyOrder(ada.userId(), ada.userId(), bob.userId(), cy.userId());
        // staying in the segment is not a new entry
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> executions(journey).size() == 4);
        assertThat(executions(paused)).isEmpty();
    }

    @Test
    void aDisabledDeviceLeavesTheSegmentAndAnArchivedSegmentStartsNoOne() {
        TestApp app = newApp();
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"gold\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}}");
        UUID segmentId = UUID.fromString(segment.json().path("segment_id").asString());
        Device ada = device(app, "ada");
        tags(app, "ada", "gold");
        UUID journey = segmentJourney(app, "active", 100, segmentId);
        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, ada.userId()));

        assertThat(api.delete("/v1/devices/" + ada.id(), app.serverKey()).status()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(30)).until(() -> !member(journey, ada.userId()));

        assertThat(api.delete("/v1/segments/" + segmentId, app.serverKey()).status()).isEqualTo(200);
        device(app, "ada");
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> !member(journey, ada.userId()));
        assertThat(executions(journey)).hasSize(1);
    }

    @Test
    void onlyKnownUsersEnterASegmentTriggeredJourney() {
        TestApp app = newApp();
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"ios\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}}");
        assertThat(segment.status()).as(segment.toString()).isEqualTo(201);
        Device anonymous = device(app, null);
        Device ada = device(app, "ada");
        UUID journey = segmentJourney(app, "active", 1, UUID.fromString(segment.json().path("segment_id").asString()));

        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, ada.userId()));
        assertThat(anonymous.userId()).isNotNull();
        assertThat(member(journey, anonymous.userId())).isFalse();
        assertThat(executions(journey)).extracting(Execution::userId).containsExactly(ada.userId());
    }

    @Test
    void aLargeSegmentEntersInBatchesEveryUserExactlyOnce() {
        TestApp app = newApp();
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"ios\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}}");
        assertThat(segment.status()).as(segment.toString()).isEqualTo(201);
        List<UUID> users = new ArrayList<>();
        for (int i = 0; i < 70; i++) users.add(device(app, "user-" + i).userId());
        device(app, null); // anonymous: never walked, never entered
        UUID journey = segmentJourney(app, "active", 1, UUID.fromString(segment.json().path("segment_id").asString()));

        await().atMost(Duration.ofSeconds(60)).until(() -> executions(journey).size() == 70);
        // a walk is 4 statements of at most 20 users (the tests' batch size): 20, 20, 20, 10
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                .until(() -> scan(journey).equals(new Scan(null, 4)));
        // walks again and again (every pass in tests) start no one twice
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> executions(journey).size() == 70);
        assertThat(executions(journey)).extracting(Execution::userId).containsExactlyInAnyOrderElementsOf(users);
        assertThat(walks(journey)).isGreaterThan(1);
    }

    @Test
    void betweenWalksAUserWhoStartsMatchingEntersAtTheNextPass() {
        TestApp app = newApp();
        TestApi.Response segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"gold\",\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}}");
        UUID segmentId = UUID.fromString(segment.json().path("segment_id").asString());
        Device ada = device(app, "ada");
        Device bob = device(app, "bob");
        tags(app, "ada", "gold");
        UUID journey = segmentJourney(app, "active", 5, segmentId);
        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, ada.userId()));
        // no walk for an hour: from now on a pass evaluates only the users changed since the last one
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> jdbc.sql("""
                        update journey_segment_scans set next_walk_at = now() + interval '1 hour'
                        where journey_id = :j and walk_after is null""").param("j", journey).update() == 1);
        int walks = walks(journey);

        tags(app, "bob", "gold"); // an updated user
        Device cy = device(app, "cy"); // a new named user with a new device
        tags(app, "cy", "gold");
        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, bob.userId()) && member(journey, cy.userId()));
        // leaving is seen the same way, and so is coming back (a new entry)
        tags(app, "ada", "silver");
        await().atMost(Duration.ofSeconds(30)).until(() -> !member(journey, ada.userId()));
        tags(app, "ada", "gold");
        await().atMost(Duration.ofSeconds(30)).until(() -> member(journey, ada.userId()));
        assertThat(executions(journey)).extracting(Execution::userId)
                .containsExactlyInAnyOrder(ada.userId(), ada.userId(), bob.userId(), cy.userId());
        assertThat(scan(journey).walkAfter()).as("no walk under way").isNull();
        assertThat(walks(journey)).as("no walk ran").isEqualTo(walks);
    }

    // --- helpers

    /** A journey's walk: its cursor (null when none is under way) and the statements it took so far. */
    record Scan(String walkAfter, int walkBatches) {
    }

    Scan scan(UUID journey) {
        return jdbc.sql("select walk_after, walk_batches from journey_segment_scans where journey_id = :j")
                .param("j", journey).query((rs, n) -> new Scan(rs.getString(1), rs.getInt(2))).optional().orElse(new Scan("", -1));
    }

    int walks(UUID journey) {
        return jdbc.sql("select walks from journey_segment_scans where journey_id = :j").param("j", journey)
                .query(Integer.class).single();
    }

    record Device(UUID id, UUID userId) {
    }

    Device device(TestApp app, String externalUserId) {
        String user = externalUserId == null ? "" : ",\"external_user_id\":\"" + externalUserId + "\"";
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"" + user + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        UUID id = UUID.fromString(r.json().path("device_id").asString());
        UUID userId = jdbc.sql("select user_id from devices where id = :id").param("id", id).query(UUID.class).optional().orElse(null);
        return new Device(id, userId);
    }

    void tags(TestApp app, String user, String plan) {
        TestApi.Response r = api.patch("/v1/users/" + user, app.serverKey(), "{\"tags\":{\"plan\":\"" + plan + "\"}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    UUID event(TestApp app, UUID device, String name) {
        TestApi.Response r = api.post("/v1/events", app.publicKey(),
                "{\"event_type\":\"custom\",\"event_name\":\"" + name + "\",\"device_id\":\"" + device + "\"}");
        accepted(r);
        return UUID.fromString(r.json().path("event_id").asString());
    }

    static void accepted(TestApi.Response r) {
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
    }

    Instant receivedAt(TestApp app, UUID event) {
        return jdbc.sql("select received_at from events where app_id = :app and id = :id")
                .param("app", app.appId()).param("id", event)
                .query((rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant()).single();
    }

    List<Execution> executions(UUID journey) {
        return jdbc.sql("""
                        select user_id, version, status, node_id, step, entered_at, due_at
                        from journey_executions where journey_id = :journey""")
                .param("journey", journey)
                .query((rs, n) -> new Execution(rs.getObject(1, UUID.class), rs.getInt(2), rs.getString(3), rs.getString(4),
                        rs.getInt(5), rs.getObject(6, OffsetDateTime.class).toInstant(),
                        rs.getObject(7, OffsetDateTime.class) == null ? null : rs.getObject(7, OffsetDateTime.class).toInstant()))
                .list();
    }

    boolean member(UUID journey, UUID user) {
        return jdbc.sql("select count(*) from journey_segment_members where journey_id = :j and user_id = :u")
                .param("j", journey).param("u", user).query(Long.class).single() > 0;
    }

    /**
     * A journey made through the API, triggered by the custom event {@code eventName}: hold (wait a
     * day) → done (exit); {@code paused} and {@code archived} ones are made active first.
     */
    UUID journey(TestApp app, String status, int reentryLimit, String eventName) {
        return createJourney(app, status, reentryLimit, "{\"type\":\"custom_event\",\"event_name\":\"" + eventName + "\"}");
    }

    UUID segmentJourney(TestApp app, String status, int reentryLimit, UUID segmentId) {
        return createJourney(app, status, reentryLimit, "{\"type\":\"segment\",\"segment_id\":\"" + segmentId + "\"}");
    }

    private UUID createJourney(TestApp app, String status, int reentryLimit, String trigger) {
        String created = "draft".equals(status) ? "draft" : "active";
        TestApi.Response r = api.post("/v1/journeys", app.serverKey(), "{\"name\":\"test journey\",\"status\":\"" + created
                + "\",\"reentry_limit\":" + reentryLimit + ",\"definition\":" + definition(trigger, "hold") + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        UUID id = UUID.fromString(r.json().path("journey_id").asString());
        if ("paused".equals(status)) {
            TestApi.Response paused = api.patch("/v1/journeys/" + id, app.serverKey(), "{\"status\":\"paused\"}");
            assertThat(paused.status()).as(paused.toString()).isEqualTo(200);
        } else if ("archived".equals(status)) {
            TestApi.Response archived = api.delete("/v1/journeys/" + id, app.serverKey());
            assertThat(archived.status()).as(archived.toString()).isEqualTo(200);
        }
        return id;
    }

    /** A PATCH whose new version starts at {@code start}; returns the new version. */
    private int newVersion(TestApp app, UUID journey, String eventName, String start) {
        TestApi.Response r = api.patch("/v1/journeys/" + journey, app.serverKey(), "{\"definition\":"
                + definition("{\"type\":\"custom_event\",\"event_name\":\"" + eventName + "\"}", start) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json().path("version").asInt();
    }

    private static String definition(String trigger, String start) {
        return "{\"trigger\":" + trigger + ",\"start\":\"" + start + "\",\"nodes\":{\"" + start
                + "\":{\"type\":\"wait\",\"seconds\":86400,\"next\":\"done\"},\"done\":{\"type\":\"exit\"}}}";
    }
}
