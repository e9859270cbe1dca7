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
