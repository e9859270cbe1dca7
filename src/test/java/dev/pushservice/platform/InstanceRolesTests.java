package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.jobs.JobRunner;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.support.GenericApplicationContext;

/**
 * {@code PUSH_ROLES}: single-role instances sharing one database each do their part and nothing
 * else. {@code api} serves {@code /v1} and runs no jobs; {@code worker} executes queued work and
 * answers {@code /v1} with 404; {@code scheduler} runs the recurring tasks that find due work, once
 * at a time however many scheduler instances run.
 */
class InstanceRolesTests {

    /** Task data is stored as JSON. */
    record Work(String text) {
    }

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private final DatabaseUrl db = TestDatabase.newDatabase();
    /** "role:what" for every execution, in every instance of this test (they share the JVM). */
    private final List<String> executed = new CopyOnWriteArrayList<>();

    private AppInstance.Builder instance(String roles) {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", roles)
                .set("db-scheduler.polling-interval", "100ms")
                .beans(c -> registerTasks(c, roles));
    }

    /** The same tasks in every instance, as one jar deploys them; each execution records the role that ran it. */
    private void registerTasks(GenericApplicationContext context, String role) {
        OneTimeTask<Work> work = Tasks.oneTime("test-work", Work.class)
                .execute((instance, ctx) -> executed.add(role + ":" + instance.getData().text()));
        AtomicInteger sweeps = new AtomicInteger();
        // a sweep that finds due work and hands it to workers through the scheduling client
        RecurringTask<Void> sweep = Tasks.recurring("test-sweep", FixedDelay.of(Duration.ofMillis(200)))
                .execute((instance, ctx) -> {
                    executed.add(role + ":sweep");
                    context.getBean(SchedulerClient.class).scheduleIfNotExists(
                            work.instance("swept-" + sweeps.incrementAndGet(), new Work("swept")), Instant.now());
                });
        context.registerBean("testWork", OneTimeTask.class, () -> work);
        context.registerBean("testSweep", RecurringTask.class, () -> sweep);
    }

    @Test
    void threeSingleRoleInstancesEachDoTheirPartAgainstOneDatabase() throws Exception {
        try (AppInstance api = instance("api").start();
             AppInstance worker = instance("worker").start();
             AppInstance scheduler = instance("scheduler").start()) {
            assertRunners(api, false, false);
            assertRunners(worker, true, false);
            assertRunners(scheduler, false, true);
            // the journey execution worker runs in the worker role only
            assertThat(api.bean("journeyWorker", org.springframework.context.SmartLifecycle.class).isRunning()).isFalse();
            assertThat(worker.bean("journeyWorker", org.springframework.context.SmartLifecycle.class).isRunning()).isTrue();
            assertThat(scheduler.bean("journeyWorker", org.springframework.context.SmartLifecycle.class).isRunning()).isFalse();

            String key = serverKey(api);
            TestApi.Response settings = api.api.get("/v1/app/settings", key);
            assertThat(settings.status()).as(settings.toString()).isEqualTo(200);
            assertThat(api.api.get("/openapi.yaml", null).status()).isEqualTo(200);
            assertThat(api.api.get("/docs", null).status()).isEqualTo(200);
            for (AppInstance notApi : List.of(worker, scheduler)) {
                assertServesOnlyHealthAndMetrics(notApi, key);
            }

            // the API enqueues work; only the worker executes it
            api.bean(SchedulerClient.class).scheduleIfNotExists(
                    api.bean("testWork", OneTimeTask.class).instance("from-api", new Work("from-api")), Instant.now());
            await().atMost(Duration.ofSeconds(20)).until(() -> executed.contains("worker:from-api"));
            // the scheduler's sweep runs and its work reaches the worker
            await().atMost(Duration.ofSeconds(20)).until(() -> executed.contains("scheduler:sweep")
                    && executed.contains("worker:swept"));

            assertThat(executed).allMatch(e -> e.equals("worker:from-api") || e.equals("worker:swept")
                    || e.equals("scheduler:sweep"));
            assertThat(api.jdbc().sql("select task_name || '/' || task_instance from recurring_tasks order by 1")
                    .query(String.class).list()).containsExactly("delivery-cancelled-leases/recurring", "export-clean-up/recurring", "frequency-cap-prune/recurring",
                            "journey-counts-fold/recurring", "journey-segment-entries/recurring", "notification-counts-fold/recurring", "notification-due-drafts/recurring", "notification-reconcile/recurring", "storage-partition-maintenance/recurring", "test-sweep/recurring", "webpush-key-pairs/recurring");
        }
    }

    @Test
    void severalSchedulersRunARecurringTaskOnceAtATime() {
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        List<String> runs = new CopyOnWriteArrayList<>();
        java.util.function.Function<String, AppInstance.Builder> scheduler = name -> AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", "scheduler")
                .set("db-scheduler.polling-interval", "50ms")
                .beans(c -> c.registerBean("testSlowSweep", RecurringTask.class, () ->
                        Tasks.recurring("test-slow-sweep", FixedDelay.of(Duration.ofMillis(20)))
                                .execute((instance, ctx) -> {
                                    mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
                                    try {
                                        // real time must pass: a run that lasts lets two schedulers' runs overlap if they could
                                        Thread.sleep(60);
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    } finally {
                                        running.decrementAndGet();
                                    }
                                    runs.add(name);
                                })));
        try (AppInstance first = scheduler.apply("first").start();
             AppInstance second = scheduler.apply("second").start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> runs.size() >= 15);
            assertThat(mostAtOnce).as("executions of one recurring task at once, over two schedulers").hasValue(1);
            assertThat(first.jdbc().sql("select count(*) from recurring_tasks where task_name = 'test-slow-sweep'")
                    .query(Long.class).single()).isEqualTo(1);
        }
    }

    @Test
    void anUnknownRoleStopsTheStartWithAClearMessage() {
        assertThatThrownBy(() -> AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", "api,workr")
                .start())
                .rootCause()
                .hasMessageContaining("PUSH_ROLES: unknown role 'workr'")
                .hasMessageContaining("api, worker, scheduler");
    }

    private static void assertRunners(AppInstance app, boolean worker, boolean scheduler) {
        assertThat(app.bean("jobWorker", JobRunner.class).isRunning()).as("worker running").isEqualTo(worker);
        assertThat(app.bean("jobScheduler", JobRunner.class).isRunning()).as("scheduler running").isEqualTo(scheduler);
    }

    /**
     * Through a plain client: the contract describes what {@code api} instances answer, and these
     * 404s are the documented answer of instances without that role (README, docs/api-decisions.md).
     */
    private static void assertServesOnlyHealthAndMetrics(AppInstance app, String key) throws Exception {
        for (String path : List.of("/v1/app/settings", "/v1/devices", "/v1", "/openapi.yaml", "/docs", "/")) {
            TestApi.Response r = raw(app, HttpRequest.newBuilder().GET(), path, key);
            assertThat(r.status()).as(path + " " + r).isEqualTo(404);
            assertThat(r.header("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
            assertThat(r.json().path("error").path("code").asString()).isEqualTo("not_found");
            assertThat(r.json().path("error").path("message").asString()).contains("does not serve the API");
            assertThat(r.json().path("request_id").asString()).isEqualTo(r.header("X-Request-ID").orElseThrow());
        }
        TestApi.Response post = raw(app, HttpRequest.newBuilder().POST(HttpRequest.BodyPublishers.ofString("{}"))
                .header("Content-Type", "application/json"), "/v1/devices/register", key);
        assertThat(post.status()).as(post.toString()).isEqualTo(404);
        TestApi.Response health = app.api.get("/health", null);
        assertThat(health.status()).as(health.toString()).isEqualTo(200);
        assertThat(app.api.get("/status", null).status()).isEqualTo(200);
        assertThat(app.api.get("/actuator/prometheus", null).status()).isEqualTo(200);
    }

    private static TestApi.Response raw(AppInstance app, HttpRequest.Builder request, String path, String key)
            throws Exception {
        HttpResponse<String> r = HTTP.send(request.uri(URI.create(app.api.base() + path))
                .header("Authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofString());
        return new TestApi.Response(r.statusCode(), r.headers().map(), r.body());
    }

    private static String serverKey(AppInstance app) {
        TenantService tenants = app.bean(TenantService.class);
        Tenants.Organisation org = tenants.createOrganisation("roles test");
        Tenants.App created = tenants.createApp(org.id(), "roles app", "UTC");
        return tenants.issueKey(created.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
    }
}
