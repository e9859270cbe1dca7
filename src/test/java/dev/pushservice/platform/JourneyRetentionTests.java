package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.storage.PartitionMaintenance;
import dev.pushservice.platform.storage.Uuid7;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import dev.pushservice.support.TestTokens;
import java.time.Duration;
import java.util.Arrays;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationVersion;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Journey executions under retention (docs/storage.md, V54): executions entered by custom events get
 * time-ordered ids and land in their month's partition with their goals; once retention has passed, a
 * month whose executions have all ended is dropped whole (executions and goals) while the journey's
 * stats answer as before, and a month with an execution still waiting is kept until it ends. An
 * application instance of its own on a database of its own: retention here drops this month's
 * partitions, which the shared test database's other tests are using.
 */
class JourneyRetentionTests {

    private final DatabaseUrl db = TestDatabase.newDatabase();

    @Test
    void anEndedMonthIsDroppedWithItsGoalsAndStatsStayAMonthWithAWaitingExecutionIsKept() throws Exception {
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .start()) {
            JdbcClient jdbc = app.jdbc();
            TenantService tenants = app.bean(TenantService.class);
            Tenants.Organisation org = tenants.createOrganisation("journey retention");
            Tenants.App a = tenants.createApp(org.id(), "journey retention app", "UTC");
            String server = tenants.issueKey(a.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            String client = tenants.issueKey(a.id(), KeyKind.PUBLIC, "public", Set.of(), null).rawKey();

            // "done": goal then exit, at once; "slow": waits a day before its goal
            String done = journey(app.api, server, "finish", "'won':{'type':'goal','name':'won','next':'bye'},"
                    + "'bye':{'type':'exit'}", "won");
            String slow = journey(app.api, server, "linger", "'pause':{'type':'wait','seconds':86400,'next':'won'},"
                    + "'won':{'type':'goal','name':'won','next':'bye'},'bye':{'type':'exit'}", "pause");
            for (int i = 0; i < 3; i++) {
                UUID device = register(app.api, client, "user-" + i);
                event(app.api, client, device, "finish");
                if (i == 0) event(app.api, client, device, "linger");
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.sql(
                    "select count(*) from journey_executions where journey_id = cast(:j as uuid) and status = 'completed'")
                    .param("j", done).query(Long.class).single() == 3);
            await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.sql(
                    "select count(*) from journey_executions where journey_id = cast(:j as uuid) and status = 'waiting'")
                    .param("j", slow).query(Long.class).single() == 1);

            // time-ordered ids: this month's partition holds the executions and their goals
            Instant now = Instant.now();
            String month = "_p" + LocalDate.ofInstant(now, ZoneOffset.UTC).withDayOfMonth(1).format(DateTimeFormatter.BASIC_ISO_DATE);
            List<UUID> ids = jdbc.sql("select id from journey_executions where app_id = :app").param("app", a.id())
                    .query(UUID.class).list();
            assertThat(ids).hasSize(4).allMatch(id -> id.version() == 7)
                    .allMatch(id -> Duration.between(Uuid7.time(id), now).abs().compareTo(Duration.ofMinutes(5)) < 0);
            assertThat(jdbc.sql("select distinct tableoid::regclass::text from journey_executions where app_id = :app")
                    .param("app", a.id()).query(String.class).list()).containsExactly("journey_executions" + month);
            assertThat(jdbc.sql("select distinct tableoid::regclass::text from journey_goals where app_id = :app")
                    .param("app", a.id()).query(String.class).list()).containsExactly("journey_goals" + month);
            JsonNode doneBefore = stats(app.api, server, done);
            assertThat(total(doneBefore, "completed")).isEqualTo(3);
            assertThat(doneBefore.path("goals").get(0).path("total").asLong()).isEqualTo(3);
            JsonNode slowBefore = stats(app.api, server, slow);
            assertThat(total(slowBefore, "waiting")).isEqualTo(1);
            JsonNode listBefore = app.api.get("/v1/journeys", server).json();

            // four months on (past the 90 days' retention of this month): the waiting execution holds the month back
            PartitionMaintenance maintenance = app.bean(PartitionMaintenance.class);
            Instant later = now.plus(Duration.ofDays(122));
            PartitionMaintenance.Result held = maintenance.run(later);
            assertThat(held.dropped()).contains("journey_executions_legacy", "journey_executions_legacy_high",
                    "journey_goals_legacy", "journey_goals_legacy_high");
            assertThat(held.dropped()).doesNotContain("journey_executions" + month, "journey_goals" + month);
            assertThat(jdbc.sql("select count(*) from journey_executions where app_id = :app").param("app", a.id())
                    .query(Long.class).single()).isEqualTo(4);

            // the slow journey archived (its waiting execution cancelled): the month goes, executions and goals together
            assertThat(app.api.delete("/v1/journeys/" + slow, server).status()).isEqualTo(200);
            PartitionMaintenance.Result result = maintenance.run(later);
            assertThat(result.dropped()).contains("journey_executions" + month, "journey_goals" + month);
            assertThat(jdbc.sql("select count(*) from journey_executions where app_id = :app").param("app", a.id())
                    .query(Long.class).single()).isZero();
            assertThat(jdbc.sql("select count(*) from journey_goals where app_id = :app").param("app", a.id())
                    .query(Long.class).single()).isZero();

            // the stats answer from the counts that outlive the rows
            assertThat(stats(app.api, server, done)).isEqualTo(doneBefore);
            JsonNode slowAfter = stats(app.api, server, slow);
            assertThat(total(slowAfter, "waiting")).isZero();
            assertThat(total(slowAfter, "cancelled")).isEqualTo(1);
            assertThat(slowAfter.path("goals")).isEqualTo(slowBefore.path("goals"));
            JsonNode listAfter = app.api.get("/v1/journeys", server).json();
            for (int i = 0; i < listAfter.path("data").size(); i++) {
                JsonNode after = listAfter.path("data").get(i);
                if (after.path("journey_id").asString().equals(done)) {
                    assertThat(after).isEqualTo(listBefore.path("data").get(i));
                }
            }

        }
    }

    @Test
    void existingExecutionsMigrateInPlaceKeepTheirStatsAndKeepRunning() throws Exception {
        DriverManagerDataSource ds = new DriverManagerDataSource(db.jdbcUrl(), db.username(), db.password());
        // the last migration before V54 (other branches may add versions below it)
        MigrationVersion before = Arrays.stream(
                        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().info().all())
                .map(MigrationInfo::getVersion)
                .filter(v -> v != null && v.compareTo(MigrationVersion.fromVersion("54")) < 0)
                .max(MigrationVersion::compareTo).orElseThrow();
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").target(before).load().migrate();
        UUID appId = UUID.fromString("00000000-0000-4000-8000-000000000002");
        UUID journeyId = UUID.fromString("00000000-0000-4000-8000-000000000003");
        JdbcClient old = JdbcClient.create(ds);
        old.sql("""
                insert into organisations (id, name) values ('00000000-0000-4000-8000-000000000001', 'o');
                insert into apps (id, org_id, name) values ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'a');
                insert into journeys (id, app_id, name, status, reentry_limit, current_version, trigger_type, trigger_event_name,
                                      created_at, updated_at)
                values ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000002', 'j', 'active', 10, 1,
                        'custom_event', 'go', now(), now());
                insert into journey_versions (journey_id, version, name, status, reentry_limit, definition, created_at)
                values ('00000000-0000-4000-8000-000000000003', 1, 'j', 'active', 10,
                        '{"trigger":{"type":"custom_event","event_name":"go"},"start":"won",
                          "nodes":{"won":{"type":"goal","name":"won","next":"bye"},"bye":{"type":"exit"}}}', now());
                insert into users (id, app_id, external_user_id)
                select gen_random_uuid(), '00000000-0000-4000-8000-000000000002', 'u' || g from generate_series(1, 40) g;
                insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step, due_at,
                                                entered_at, updated_at, ended_at)
                select gen_random_uuid(), u.app_id, '00000000-0000-4000-8000-000000000003', 1, u.id, s.status,
                       case when s.status in ('active', 'waiting') then 'won' end, 0,
                       case s.status when 'active' then now() - interval '1 minute' when 'waiting' then now() + interval '20 days' end,
                       now() - interval '40 days', now(), case when s.status not in ('active', 'waiting') then now() end
                from (select id, app_id, row_number() over (order by id) as n from users) u
                join lateral (select case when u.n <= 20 then 'completed' when u.n <= 25 then 'failed'
                                          when u.n <= 35 then 'active' else 'waiting' end as status) s on true;
                insert into journey_goals (execution_id, node_id, app_id, journey_id, reached_at)
                select id, 'won', app_id, journey_id, now() from journey_executions where status = 'completed';""").update();

        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .start()) {
            JdbcClient jdbc = app.jdbc();
            for (String table : List.of("journey_executions", "journey_goals")) {
                assertThat(jdbc.sql("select relkind::text from pg_class where relname = :t").param("t", table)
                        .query(String.class).single()).as(table).isEqualTo("p");
            }
            assertThat(jdbc.sql("select count(*) from journey_executions").query(Long.class).single()).isEqualTo(40);
            assertThat(jdbc.sql("select indexname from pg_indexes where tablename = 'journey_executions'").query(String.class).list())
                    .contains("journey_executions_pkey", "journey_executions_journey_due_idx", "journey_executions_due_idx");
            assertThat(jdbc.sql("""
                            select t.tgname from pg_trigger t
                            where t.tgrelid = 'journey_executions'::regclass and not t.tgisinternal order by 1""")
                    .query(String.class).list())
                    .contains("journey_executions_started", "journey_executions_counts_ins", "journey_executions_counts_upd");

            // the worker goes on with the executions from before: the due ones reach their goal and complete
            String server = app.bean(TenantService.class).issueKey(appId, KeyKind.SERVER, "server",
                    EnumSet.allOf(Scope.class), null).rawKey();
            await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.sql(
                    "select count(*) from journey_executions where status = 'completed'").query(Long.class).single() == 30);
            // (the worker may have run them already: the goals from before plus theirs)
            assertThat(jdbc.sql("select count(*) from journey_goals").query(Long.class).single()).isEqualTo(30);
            JsonNode stats = stats(app.api, server, journeyId.toString());
            assertThat(total(stats, "completed")).isEqualTo(30);
            assertThat(total(stats, "failed")).isEqualTo(5);
            assertThat(total(stats, "waiting")).isEqualTo(5);
            assertThat(total(stats, "active")).isZero();
            assertThat(stats.path("goals").get(0).path("total").asLong()).isEqualTo(30);

            // a new entry gets a time-ordered id and this month's partition
            UUID user = jdbc.sql("select id from users where external_user_id = 'u1'").query(UUID.class).single();
            jdbc.sql("""
                            insert into events (id, app_id, event_type, event_name, device_id, user_id, occurred_at, received_at)
                            values (gen_random_uuid(), :app, 'custom', 'go', gen_random_uuid(), :user, now(), now())""")
                    .param("app", appId).param("user", user).update();
            UUID entered = jdbc.sql("select id from journey_executions where user_id = :user").param("user", user)
                    .query(UUID.class).list().stream().filter(id -> id.version() == 7).findFirst().orElseThrow();
            assertThat(jdbc.sql("select tableoid::regclass::text from journey_executions where id = :id").param("id", entered)
                    .query(String.class).single()).startsWith("journey_executions_p");
            await().atMost(Duration.ofSeconds(30)).until(() -> total(stats(app.api, server, journeyId.toString()), "completed") == 31);
        }
    }

    private static String journey(TestApi api, String key, String event, String nodes, String start) {
        TestApi.Response r = api.post("/v1/journeys", key, ("{'name':'" + event + "','status':'active','reentry_limit':10,"
                + "'definition':{'trigger':{'type':'custom_event','event_name':'" + event + "'},'start':'" + start
                + "','nodes':{" + nodes + "}}}").replace('\'', '"'));
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("journey_id").asString();
    }

    private static UUID register(TestApi api, String key, String user) {
        TestApi.Response r = api.post("/v1/devices/register", key, "{\"platform\":\"ios\",\"push_token\":\""
                + TestTokens.apns() + "\",\"external_user_id\":\"" + user + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("device_id").asString());
    }

    private static void event(TestApi api, String key, UUID device, String name) {
        TestApi.Response r = api.post("/v1/events", key, "{\"event_type\":\"custom\",\"event_name\":\"" + name
                + "\",\"device_id\":\"" + device + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
    }

    private static JsonNode stats(TestApi api, String key, String journey) {
        TestApi.Response r = api.get("/v1/journeys/" + journey + "/stats", key);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    private static long total(JsonNode stats, String status) {
        for (JsonNode e : stats.path("executions")) {
            if (e.path("status").asString().equals(status)) return e.path("total").asLong();
        }
        throw new AssertionError("no " + status + " in " + stats);
    }
}
