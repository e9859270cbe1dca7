package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.jobs.DeadLetters;
import dev.pushservice.platform.jobs.PermanentJobFailure;
import dev.pushservice.platform.jobs.RetryPolicy;
import dev.pushservice.support.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.support.GenericApplicationContext;
import tools.jackson.databind.JsonNode;

/**
 * Background work across instances sharing one fresh database: roles, retries into the dead-letter
 * table, the numbers {@code /health} reports, and what shutdown leaves behind.
 */
class JobsTests {

    /** Task data is stored as JSON: a plain record, not Serializable. */
    record Greeting(String text) {
    }

    private final DatabaseUrl db = TestDatabase.newDatabase();

    private AppInstance.Builder instance(String roles) {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", roles)
                .set("db-scheduler.polling-interval", "100ms");
    }

    @Test
    void apiOnlyInstanceSchedulesWithoutExecutingAndAWorkerExecutes() throws Exception {
        List<String> seenByApi = new CopyOnWriteArrayList<>();
        OneTimeTask<Greeting> apiSide = Tasks.oneTime("test-greet", Greeting.class)
                .execute((instance, ctx) -> seenByApi.add(instance.getData().text()));
        try (AppInstance api = instance("api").beans(c -> register(c, apiSide)).start()) {
            assertThat(api.bean("jobWorker", dev.pushservice.platform.jobs.JobRunner.class).isRunning()).isFalse();
            SchedulerClient client = api.bean(SchedulerClient.class);
            client.scheduleIfNotExists(apiSide.instance("due", new Greeting("hello")), Instant.now().minusSeconds(30));
            client.scheduleIfNotExists(apiSide.instance("later", new Greeting("later")), Instant.now().plus(Duration.ofHours(1)));

            JsonNode jobs = awaitJobs(api, j -> j.path("pending").asLong() == 2);
            assertThat(jobs.path("queue_depth").asLong()).isEqualTo(1);
            assertThat(jobs.path("oldest_due_age_seconds").asLong()).isBetween(30L, 600L);
            assertThat(jobs.path("running").asLong()).isZero();
            assertThat(jobs.path("retrying").asLong()).isZero();
            assertThat(jobs.path("dead_lettered").asLong()).isZero();

            // something must NOT happen: real time passes (fifteen polling intervals of a worker) and the task stays due
            await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(seenByApi::isEmpty);
            assertThat(count("select count(*) from scheduled_tasks where task_instance = 'due' and not picked")).isEqualTo(1);
        }

        List<String> seenByWorker = new CopyOnWriteArrayList<>();
        OneTimeTask<Greeting> workerSide = Tasks.oneTime("test-greet", Greeting.class)
                .execute((instance, ctx) -> seenByWorker.add(instance.getData().text()));
        try (AppInstance worker = instance("worker").beans(c -> register(c, workerSide)).start()) {
            await().atMost(Duration.ofSeconds(20)).until(() -> !seenByWorker.isEmpty());
            assertThat(seenByWorker).containsExactly("hello");
            JsonNode jobs = awaitJobs(worker, j -> j.path("pending").asLong() == 1);
            assertThat(jobs.path("queue_depth").asLong()).isZero();
            assertThat(jobs.path("oldest_due_age_seconds").asLong()).isZero();
        }
        assertThat(seenByApi).isEmpty();
    }

    @Test
    void aStoppedWorkerStartsAgainAndExecutes() throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        OneTimeTask<Greeting> task = Tasks.oneTime("test-restart", Greeting.class)
                .execute((instance, ctx) -> seen.add(instance.getData().text()));
        try (AppInstance worker = instance("worker").beans(c -> register(c, task)).start()) {
            worker.stopAndStart();
            assertThat(worker.bean("jobWorker", dev.pushservice.platform.jobs.JobRunner.class).isRunning()).isTrue();
            worker.bean(SchedulerClient.class).scheduleIfNotExists(task.instance("after-restart", new Greeting("again")), Instant.now());
            await().atMost(Duration.ofSeconds(20)).until(() -> !seen.isEmpty());
            assertThat(seen).containsExactly("again");
        }
    }

    @Test
    void failingTasksAreRetriedThenDeadLettered() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        AtomicInteger slowAttempts = new AtomicInteger();
        try (AppInstance worker = instance("api,worker,scheduler").beans(c -> {
            c.registerBean("alwaysFails", OneTimeTask.class, () -> Tasks.oneTime("test-always-fails", Greeting.class)
                    .onFailure(c.getBean(DeadLetters.class).handler(
                            new RetryPolicy(3, Duration.ofMillis(50), Duration.ofMillis(100))))
                    .execute((instance, ctx) -> {
                        attempts.incrementAndGet();
                        throw new IllegalStateException("always fails for " + instance.getData().text());
                    }));
            c.registerBean("permanent", OneTimeTask.class, () -> Tasks.oneTime("test-permanent", Greeting.class)
                    .onFailure(c.getBean(DeadLetters.class).handler(
                            new RetryPolicy(5, Duration.ofMillis(50), Duration.ofMillis(100))))
                    .execute((instance, ctx) -> {
                        throw new PermanentJobFailure("app no longer exists");
                    }));
            c.registerBean("slowRetry", OneTimeTask.class, () -> Tasks.oneTime("test-slow-retry", Greeting.class)
                    .onFailure(c.getBean(DeadLetters.class).handler(
                            new RetryPolicy(5, Duration.ofHours(1), Duration.ofHours(2))))
                    .execute((instance, ctx) -> {
                        slowAttempts.incrementAndGet();
                        throw new IllegalStateException("provider unavailable");
                    }));
        }).start()) {
            SchedulerClient client = worker.bean(SchedulerClient.class);
            Instant now = Instant.now();
            client.scheduleIfNotExists(Tasks.oneTime("test-always-fails", Greeting.class).execute((i, c) -> { })
                    .instance("chunk-1", new Greeting("chunk-1")), now);
            client.scheduleIfNotExists(Tasks.oneTime("test-permanent", Greeting.class).execute((i, c) -> { })
                    .instance("chunk-2", new Greeting("chunk-2")), now);
            client.scheduleIfNotExists(Tasks.oneTime("test-slow-retry", Greeting.class).execute((i, c) -> { })
                    .instance("chunk-3", new Greeting("chunk-3")), now);

            await().atMost(Duration.ofSeconds(20)).until(() -> count("select count(*) from dead_letter_jobs") == 2);
            assertThat(attempts).hasValue(3);
            assertThat(worker.jdbc().sql("select task_name, task_instance, attempts, last_error from dead_letter_jobs order by task_name")
                    .query((rs, n) -> rs.getString(1) + "/" + rs.getString(2) + "/" + rs.getInt(3) + "/" + rs.getString(4)).list())
                    .containsExactly(
                            "test-always-fails/chunk-1/3/java.lang.IllegalStateException: always fails for chunk-1",
                            "test-permanent/chunk-2/1/dev.pushservice.platform.jobs.PermanentJobFailure: app no longer exists");
            assertThat(count("select count(*) from scheduled_tasks where task_instance in ('chunk-1', 'chunk-2')")).isZero();

            await().atMost(Duration.ofSeconds(20)).until(() ->
                    count("select count(*) from scheduled_tasks where task_instance = 'chunk-3' and consecutive_failures = 1") == 1);
            assertThat(slowAttempts).hasValue(1);
            JsonNode jobs = awaitJobs(worker, j -> j.path("retrying").asLong() == 1);
            assertThat(jobs.path("dead_lettered").asLong()).isEqualTo(2);
            assertThat(jobs.path("pending").asLong()).isEqualTo(1);
            assertThat(jobs.path("queue_depth").asLong()).isZero();
            assertThat(jobs.path("running").asLong()).isZero();
            String page = worker.api.get("/status", null).body();
            assertThat(page).contains("Dead-lettered").contains("2 jobs");
        }
    }

    @Test
    void shutdownReleasesAnExecutionThatDidNotFinishAndAnotherWorkerTakesIt() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        OneTimeTask<Greeting> stubborn = Tasks.oneTime("test-stubborn", Greeting.class).execute((instance, ctx) -> {
            started.countDown();
            while (true) { // ignores interrupts, like a task stuck in a blocking call
                try {
                    if (finish.await(100, java.util.concurrent.TimeUnit.MILLISECONDS)) return;
                } catch (InterruptedException ignored) {
                    // keep blocking
                }
            }
        });
        AppInstance first = instance("worker").set("db-scheduler.shutdown-max-wait", "300ms")
                .beans(c -> register(c, stubborn)).start();
        try {
            first.bean(SchedulerClient.class).scheduleIfNotExists(stubborn.instance("export-1", new Greeting("x")), Instant.now());
            assertThat(started.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            assertThat(count("select count(*) from scheduled_tasks where task_instance = 'export-1' and picked")).isEqualTo(1);
        } finally {
            first.close();
        }
        assertThat(count("select count(*) from scheduled_tasks where task_instance = 'export-1' and not picked and picked_by is null"))
                .isEqualTo(1);
        finish.countDown();

        AtomicInteger runs = new AtomicInteger();
        OneTimeTask<Greeting> quick = Tasks.oneTime("test-stubborn", Greeting.class)
                .execute((instance, ctx) -> runs.incrementAndGet());
        try (AppInstance second = instance("worker").beans(c -> register(c, quick)).start()) {
            await().atMost(Duration.ofSeconds(20)).until(() -> runs.get() == 1);
            await().atMost(Duration.ofSeconds(10)).until(() -> count("select count(*) from scheduled_tasks") == 0);
        }
    }

    private static void register(GenericApplicationContext context, OneTimeTask<?> task) {
        context.registerBean(task.getName(), OneTimeTask.class, () -> task);
    }

    private static JsonNode awaitJobs(AppInstance app, java.util.function.Predicate<JsonNode> ready) {
        JsonNode[] last = new JsonNode[1];
        // counts are refreshed at most every 5 s
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
            last[0] = app.api.get("/health", null).json().path("jobs");
            return ready.test(last[0]);
        });
        return last[0];
    }

    /** Reads the database directly, so it also works while no instance is running. */
    private long count(String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection(db.jdbcUrl(), db.username(), db.password());
             Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            r.next();
            return r.getLong(1);
        }
    }
}
