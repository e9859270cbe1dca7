package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.EmbeddedPostgresServer;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.nio.file.Path;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The database stopped under a running instance (its own temporary PostgreSQL): requests answer 503
 * {@code service_unavailable} with {@code Retry-After}, never a 500, whether the failure comes from a
 * handler (registration, events) or from the API key's lookup before routing (drills/database-restart.sh
 * found 500s for both). Every response is checked against openapi.yaml by {@link TestApi}.
 */
class DatabaseUnreachableTests {

    @Test
    void requestsAnswer503WithRetryAfterWhileTheDatabaseIsDown(@TempDir Path dataDir) {
        EmbeddedPostgresServer postgres = EmbeddedPostgresServer.startTemporary();
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(postgres.url()))
                .set("push.data-dir", dataDir.toString())
                .set("push.database.connection-timeout", "1s")
                .start()) {
            TenantService tenants = app.bean(TenantService.class);
            Tenants.Organisation org = tenants.createOrganisation("outage");
            Tenants.App created = tenants.createApp(org.id(), "outage app", "UTC");
            String server = tenants.issueKey(created.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            String neverSeen = tenants.issueKey(created.id(), KeyKind.SERVER, "later", EnumSet.allOf(Scope.class), null).rawKey();
            String device = "{\"platform\":\"android\",\"push_token\":\"outage-token\"}";
            assertThat(app.api.post("/v1/devices/register", server, device).status()).isEqualTo(201);
            assertThat(app.api.post("/v1/events", server, "{\"event_type\":\"opened\"}").status()).isEqualTo(202);
            assertThat(app.api.get("/v1/app/settings", server).status()).isEqualTo(200);

            postgres.close();

            // the keys are known (cached): the handlers' statements fail
            assertUnavailable(app.api.post("/v1/devices/register", server, device));
            assertUnavailable(app.api.post("/v1/events", server, "{\"event_type\":\"opened\"}"));
            // a key not seen yet: its lookup before routing fails
            assertUnavailable(app.api.get("/v1/app/settings", neverSeen));
        } finally {
            postgres.close();
        }
    }

    private static void assertUnavailable(TestApi.Response r) {
        assertThat(r.status()).as(r.toString()).isEqualTo(503);
        assertThat(r.header("Retry-After")).as(r.toString()).hasValue("1");
        assertThat(r.json().path("error").path("code").asString()).isEqualTo("service_unavailable");
    }
}
