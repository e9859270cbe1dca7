package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.time.Duration;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A read never writes: every read route of the API (and the health and docs pages), called on an
 * app with data, leaves every table of a database of its own exactly as it was. The only write a
 * request may cause is the API key's last-use time, at most once a minute per key; the warm-up
 * request takes that before the snapshot. Web Push key pairs are made with the app (or by the
 * scheduler role), so reads never have to make one.
 */
class ReadsWriteNothingTests {

    private static final String DEVICE = """
            {"platform":"ios","push_token":"a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
             "external_user_id":"user-42","timezone":"Europe/Berlin","tags":{"plan":"pro"}}""";
    private static final String FILTER = """
            {"all":[{"field":"platform","operator":"eq","value":"ios"},{"field":"tag.plan","operator":"eq","value":"pro"}]}""";

    private final DatabaseUrl db = TestDatabase.newDatabase();

    private AppInstance.Builder instance() {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", "api");
    }

    @Test
    void readRoutesLeaveEveryTableUnchanged() {
        try (AppInstance app = instance().start()) {
            TenantService tenants = app.bean(TenantService.class);
            Tenants.App created = tenants.createApp(tenants.createOrganisation("reads").id(), "reads", "Europe/Berlin");
            String server = tenants.issueKey(created.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            String client = tenants.issueKey(created.id(), KeyKind.PUBLIC, "public", Set.of(), null).rawKey();

            TestApi.Response device = ok(app.api.post("/v1/devices/register", client, DEVICE), 201, 200);
            String deviceId = device.json().path("device_id").asString();
            ok(app.api.post("/v1/events", client, "{\"event_type\":\"custom\",\"event_name\":\"checkout\"}"), 202);
            String templateId = ok(app.api.post("/v1/templates", server,
                    "{\"name\":\"welcome\",\"content\":{\"title\":\"Hi\",\"body\":\"Plan {{ tags.plan }}\"}}"), 201)
                    .json().path("template_id").asString();
            String segmentId = ok(app.api.post("/v1/segments", server, "{\"name\":\"pro\",\"filter\":" + FILTER + "}"), 201)
                    .json().path("segment_id").asString();
            String webhookId = ok(app.api.post("/v1/webhooks", server,
                    "{\"url\":\"https://hooks.example.com/push\",\"events\":[\"*\"]}"), 201)
                    .json().path("webhook_id").asString();
            await().atMost(Duration.ofSeconds(10)).until(() ->
                    app.jdbc().sql("select count(*) from events").query(Long.class).single() == 1);
            // each key's last-use time is recorded at most once a minute: take that write now
            ok(app.api.get("/v1/app/webpush", client), 200);
            ok(app.api.get("/v1/app/settings", server), 200);

            Map<String, String> before = snapshot(app.jdbc());
            List<TestApi.Response> reads = List.of(
                    app.api.get("/v1/app/settings", server),
                    app.api.get("/v1/app/webpush", client),
                    app.api.get("/v1/app/webpush", server),
                    app.api.get("/v1/analytics?days=7", server),
                    app.api.get("/v1/analytics", server),
                    app.api.post("/v1/segments/estimate", server, "{\"filter\":" + FILTER + "}"),
                    app.api.post("/v1/segments/estimate", server,
                            "{\"filter\":{\"field\":\"custom_event.checkout\",\"operator\":\"within_days\",\"value\":7}}"),
                    app.api.get("/v1/segments", server),
                    app.api.get("/v1/segments/" + segmentId, server),
                    app.api.get("/v1/templates", server),
                    app.api.get("/v1/templates/" + templateId, server),
                    app.api.get("/v1/devices", server),
                    app.api.get("/v1/devices/" + deviceId, server),
                    app.api.get("/v1/users/user-42", server),
                    app.api.get("/v1/webhooks", server),
                    app.api.get("/v1/webhooks/" + webhookId + "/deliveries", server),
                    app.api.get("/health", null),
                    app.api.get("/status", null),
                    app.api.get("/openapi.yaml", null),
                    app.api.get("/docs", null));
            for (TestApi.Response r : reads) {
                assertThat(r.status()).as(r.toString()).isEqualTo(200);
            }
            assertThat(snapshot(app.jdbc())).isEqualTo(before);
        }
    }

    @Test
    void webPushKeyPairIsMadeWithTheAppOrByTheSchedulerNeverByARead() {
        String server;
        java.util.UUID appId;
        try (AppInstance app = instance().start()) {
            TenantService tenants = app.bean(TenantService.class);
            appId = tenants.createApp(tenants.createOrganisation("vapid").id(), "vapid", "UTC").id();
            assertThat(pairs(app.jdbc(), appId)).isEqualTo(1);
            server = tenants.issueKey(appId, KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            String key = ok(app.api.get("/v1/app/webpush", server), 200).json().path("vapid_public_key").asString();
            assertThat(ok(app.api.get("/v1/app/settings", server), 200).json().path("webpush").path("vapid_public_key")
                    .asString()).isEqualTo(key);

            // an app without a pair (made by the admin CLI, or by an older version): reads say so and write nothing
            app.jdbc().sql("delete from app_credentials where app_id = :app").param("app", appId).update();
            TestApi.Response settings = ok(app.api.get("/v1/app/settings", server), 200);
            assertThat(settings.json().path("webpush").isNull()).as(settings.toString()).isTrue();
            TestApi.Response webpush = app.api.get("/v1/app/webpush", server);
            assertThat(webpush.status()).as(webpush.toString()).isEqualTo(503);
            assertThat(webpush.json().path("error").path("code").asString()).isEqualTo("service_unavailable");
            assertThat(webpush.header("Retry-After")).isPresent();
            assertThat(pairs(app.jdbc(), appId)).isZero();
        }
        // the scheduler role's sweep makes the missing pair
        try (AppInstance scheduler = instance().set("push.roles", "api,scheduler").start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> pairs(scheduler.jdbc(), appId) == 1);
            assertThat(ok(scheduler.api.get("/v1/app/webpush", server), 200).json().path("vapid_public_key").asString())
                    .hasSize(87);
        }
    }

    private static long pairs(JdbcClient jdbc, java.util.UUID appId) {
        return jdbc.sql("select count(*) from app_credentials where app_id = :app and provider = 'webpush'")
                .param("app", appId).query(Long.class).single();
    }

    /** Per table: its row count and the newest row version (xmin); any insert, update or delete changes one. */
    private static Map<String, String> snapshot(JdbcClient jdbc) {
        List<String> tables = jdbc.sql("""
                        select quote_ident(table_name) from information_schema.tables
                        where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name""")
                .query(String.class).list();
        Map<String, String> state = new LinkedHashMap<>();
        for (String table : tables) {
            state.put(table, jdbc.sql("select count(*) || '/' || coalesce(max(xmin::text::bigint), 0) from " + table)
                    .query(String.class).single());
        }
        assertThat(state).containsKeys("apps", "app_credentials", "devices", "events", "api_keys");
        return state;
    }

    private static TestApi.Response ok(TestApi.Response r, Integer... expected) {
        assertThat(r.status()).as(r.toString()).isIn((Object[]) expected);
        return r;
    }
}
