package dev.pushservice.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.ApiTest;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The group-commit writer on its own (a private instance on the real database): back-pressure when
 * the database stalls, and nothing queued is lost when it stops.
 */
class EventWriterTests extends ApiTest {

    @Autowired
    EventRepository repository;
    @Autowired
    TransactionTemplate transaction;
    @Autowired
    org.springframework.context.ApplicationEventPublisher published;
    @Autowired
    DataSource dataSource;
    @Autowired
    JdbcClient jdbc;

    static NewEvent event(UUID app) {
        Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
        return new NewEvent(UUID.randomUUID(), app, EventType.OPENED, null, null, null, null, now, now);
    }

    long stored(UUID app) {
        return jdbc.sql("select count(*) from events where app_id = :app").param("app", app).query(Long.class).single();
    }

    static EventWriter started(EventWriter writer) {
        writer.start();
        return writer;
    }

    /** Waits until a transaction waits for the lock on the events table: the writer took a batch and stalls. */
    void awaitWriterStalledOnTheLock() {
        await().atMost(Duration.ofSeconds(10)).until(() -> jdbc.sql(
                "select count(*) from pg_locks where relation = 'events'::regclass and not granted")
                .query(Long.class).single() > 0);
    }

    @Test
    void aFullQueueIsRefusedAndEverythingQueuedIsWrittenOnceTheDatabaseMovesAgain() throws Exception {
        UUID app = newApp().appId();
        EventWriter writer = started(new EventWriter(repository, transaction, published, 1, 1000, 5, Duration.ofMillis(100)));
        List<EventWriter.Submission.Queued> queued = new ArrayList<>();
        int refused = 0;
        try (Connection blocker = dataSource.getConnection()) {
            blocker.setAutoCommit(false);
            try (Statement s = blocker.createStatement()) {
                s.execute("lock table events in access exclusive mode");
            }
            // the writer takes a batch and blocks on the lock; then 5 fit in the queue; the rest are refused
            for (int i = 0; i < 20; i++) {
                switch (writer.submit(event(app))) {
                    case EventWriter.Submission.Queued q -> queued.add(q);
                    case EventWriter.Submission.Overloaded o -> refused++;
                }
                if (i == 0) awaitWriterStalledOnTheLock(); // the writer took the first one
            }
            assertThat(queued.stream().filter(q -> q.outcome().isDone())).isEmpty();
            blocker.rollback();
        }
        // the queue holds 5, the blocked batch at most 5 more (1 unless the writer was starved of CPU)
        assertThat(queued.size()).isBetween(5, 10);
        assertThat(refused).isEqualTo(20 - queued.size());
        for (var q : queued) assertThat(q.outcome().get(30, TimeUnit.SECONDS)).isEqualTo(EventWriter.Outcome.STORED);
        writer.stop();
        assertThat(stored(app)).isEqualTo(queued.size());
    }

    @Test
    void stoppingWritesEverythingAlreadyQueuedAndThenRefuses() throws Exception {
        UUID app = newApp().appId();
        EventWriter writer = started(new EventWriter(repository, transaction, published, 2, 50, 10_000, Duration.ofSeconds(1)));
        List<EventWriter.Submission.Queued> queued = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) queued.add((EventWriter.Submission.Queued) writer.submit(event(app)));
        writer.stop();
        for (var q : queued) {
            assertThat(q.outcome().isDone()).isTrue();
            assertThat(q.outcome().get()).isEqualTo(EventWriter.Outcome.STORED);
        }
        assertThat(stored(app)).isEqualTo(3_000);
        assertThat(writer.submit(event(app))).isInstanceOf(EventWriter.Submission.Overloaded.class);
    }

    @Test
    void severalEventsOfOneUserInOneBatchStartNoMoreExecutionsThanTheReentryLimitLeaves() throws Exception {
        TestApp app = newApp();
        dev.pushservice.support.TestApi.Response journey = api.post("/v1/journeys", app.serverKey(), """
                {"name":"welcome","status":"active","reentry_limit":3,"definition":{
                  "trigger":{"type":"custom_event","event_name":"signed_in"},"start":"hold",
                  "nodes":{"hold":{"type":"wait","seconds":86400,"next":"done"},"done":{"type":"exit"}}}}""");
        assertThat(journey.status()).as(journey.toString()).isEqualTo(201);
        UUID journeyId = UUID.fromString(journey.json().path("journey_id").asString());
        dev.pushservice.support.TestApi.Response device = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + dev.pushservice.support.TestTokens.apns()
                        + "\",\"external_user_id\":\"ada\"}");
        UUID deviceId = UUID.fromString(device.json().path("device_id").asString());
        Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
        EventWriter writer = started(new EventWriter(repository, transaction, published, 1, 1000, 100, Duration.ofSeconds(1)));
        List<EventWriter.Submission.Queued> queued = new ArrayList<>();
        try (Connection blocker = dataSource.getConnection()) {
            blocker.setAutoCommit(false);
            try (Statement s = blocker.createStatement()) {
                s.execute("lock table events in access exclusive mode");
            }
            // the first event's batch stalls on the lock; the next five queue behind it and form one batch
            for (int i = 0; i < 6; i++) {
                queued.add((EventWriter.Submission.Queued) writer.submit(new NewEvent(UUID.randomUUID(), app.appId(),
                        EventType.CUSTOM, "signed_in", deviceId, null, null, now, now)));
                if (i == 0) awaitWriterStalledOnTheLock();
            }
            blocker.rollback();
        }
        for (var q : queued) assertThat(q.outcome().get(30, TimeUnit.SECONDS)).isEqualTo(EventWriter.Outcome.STORED);
        writer.stop();
        assertThat(stored(app.appId())).isEqualTo(6);
        // one entry for the first batch, two of the five asked for by the second: three in all
        assertThat(jdbc.sql("select count(*) from journey_executions where journey_id = :j").param("j", journeyId)
                .query(Long.class).single()).isEqualTo(3);
    }
}
