package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.db.EmbeddedPostgresServer;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.net.ServerSocket;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Whole instances started and stopped the way an operator does it: first start and restart on the
 * embedded database, {@code DATABASE_URL} spellings, and {@code /health} while Redis or the
 * database is gone.
 */
class InstanceLifecycleTests {

    private static final Pattern SERVER_KEY = Pattern.compile("ps_live_[A-Za-z0-9_-]{43}");
    private static final Pattern PUBLIC_KEY = Pattern.compile("ps_public_[A-Za-z0-9_-]{43}");

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void restartKeepsDataAndBootstrapsOnlyOnce(@TempDir Path dataDir, CapturedOutput output) throws Exception {
        AppInstance.Builder settings = AppInstance.with()
                .set("push.database-url", "") // embedded PostgreSQL in <dataDir>/postgres
                .set("push.data-dir", dataDir.toString())
                .set("push.bootstrap.enabled", "true");
        Path keyFile = dataDir.resolve("bootstrap-keys.txt");
        String serverKey;
        String publicKey;
        String keyFileText;
        FileTime keyFileWritten;

        try (AppInstance first = settings.start()) {
            assertThat(dataDir.resolve("postgres").resolve("PG_VERSION")).isRegularFile();
            assertThat(keyFile).isRegularFile();
            assertThat(Files.getPosixFilePermissions(keyFile)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
            keyFileText = Files.readString(keyFile);
            keyFileWritten = Files.getLastModifiedTime(keyFile);
            serverKey = only(SERVER_KEY, keyFileText);
            publicKey = only(PUBLIC_KEY, keyFileText);
            assertTenantCounts(first);
            // standard output is not a terminal here (as under a service manager or in a container):
            // it is log storage, so it names the file and never shows the raw keys
            assertThat(output.getAll()).contains(keyFile.toAbsolutePath().toString())
                    .doesNotContain(serverKey).doesNotContain(publicKey);
            TestApi.Response settingsRead = first.api.get("/v1/app/settings", serverKey);
            assertThat(settingsRead.status()).as(settingsRead.toString()).isEqualTo(200);
            // the public key exists and authenticates; it just may not read settings
            assertThat(first.api.get("/v1/app/settings", publicKey).status()).isEqualTo(403);
            assertThat(first.api.patch("/v1/app/settings", serverKey, "{\"name\":\"survives restarts\"}").status())
                    .isEqualTo(200);
        }

        try (AppInstance second = settings.start()) {
            assertTenantCounts(second);
            assertThat(Files.readString(keyFile)).isEqualTo(keyFileText);
            assertThat(Files.getLastModifiedTime(keyFile)).isEqualTo(keyFileWritten);
            TestApi.Response settingsRead = second.api.get("/v1/app/settings", serverKey);
            assertThat(settingsRead.status()).as(settingsRead.toString()).isEqualTo(200);
            assertThat(settingsRead.json().path("name").asString()).isEqualTo("survives restarts");
            assertThat(second.api.get("/v1/app/settings", publicKey).status()).isEqualTo(403);
            assertThat(second.api.get("/health", null).json().path("database").path("status").asString()).isEqualTo("up");
        }
    }

    @Test
    void postgresStyleDatabaseUrlIsAccepted(@TempDir Path dataDir) throws Exception {
        DatabaseUrl db = TestDatabase.newDatabase();
        String hostAndPath = db.jdbcUrl().substring("jdbc:postgresql://".length());
        String credentials = URLEncoder.encode(db.username(), StandardCharsets.UTF_8)
                + (db.password() == null ? "" : ":" + URLEncoder.encode(db.password(), StandardCharsets.UTF_8));
        String postgresUrl = "postgres://" + credentials + "@" + hostAndPath;
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", postgresUrl)
                .set("push.data-dir", dataDir.toString())
                .set("push.bootstrap.enabled", "true")
                .start()) {
            assertThat(dataDir.resolve("postgres")).doesNotExist();
            String serverKey = only(SERVER_KEY, Files.readString(dataDir.resolve("bootstrap-keys.txt")));
            assertThat(app.api.get("/v1/app/settings", serverKey).status()).isEqualTo(200);
            assertThat(app.api.get("/health", null).json().path("database").path("status").asString()).isEqualTo("up");
        }
    }

    @Test
    void redisDownDegradesHealthButTheApiStillServes() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(TestDatabase.newDatabase()))
                .set("push.redis-url", "redis://127.0.0.1:" + closedPort)
                .start()) {
            TestApi.Response health = app.api.get("/health", null);
            assertThat(health.status()).as(health.toString()).isEqualTo(200);
            JsonNode body = health.json();
            assertThat(body.path("status").asString()).isEqualTo("degraded");
            assertThat(body.path("redis").path("status").asString()).isEqualTo("down");
            assertThat(body.path("redis").path("latency_ms").isNull()).isTrue();
            assertThat(body.path("database").path("status").asString()).isEqualTo("up");
            assertThat(health.body()).doesNotContain(Integer.toString(closedPort));

            TestApi.Response page = app.api.get("/status", null);
            assertThat(page.status()).isEqualTo(200);
            assertThat(page.body()).contains("Degraded").contains("✕ Down").doesNotContain("redis://");

            String key = serverKey(app);
            for (int i = 0; i < 3; i++) {
                TestApi.Response r = app.api.get("/v1/app/settings", key);
                assertThat(r.status()).as(r.toString()).isEqualTo(200); // rate limits fail open
            }
        }
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "REDIS_URL", matches = ".+")
    void reachableRedisIsReportedUp() throws Exception {
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(TestDatabase.newDatabase()))
                .set("push.redis-url", System.getenv("REDIS_URL"))
                .start()) {
            JsonNode body = app.api.get("/health", null).json();
            assertThat(body.path("status").asString()).isEqualTo("ok");
            assertThat(body.path("redis").path("status").asString()).isEqualTo("up");
            assertThat(body.path("redis").path("latency_ms").isNumber()).isTrue();
            assertThat(body.path("redis").path("latency_ms").asDouble()).isBetween(0.0, 1000.0);
            TestApi.Response r = app.api.get("/v1/app/settings", serverKey(app));
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("RateLimit")).isPresent();
        }
    }

    @Test
    void unreachableDatabaseAnswers503Quickly() throws Exception {
        EmbeddedPostgresServer server = EmbeddedPostgresServer.startTemporary();
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(server.url()))
                .set("push.roles", "api")
                .start()) {
            assertThat(app.api.get("/health", null).status()).isEqualTo(200);
            server.close();

            // the last healthy snapshot is reused for up to a second; the first probe after it meets the dead database
            AtomicLong tookMillis = new AtomicLong();
            TestApi.Response health = await().atMost(Duration.ofSeconds(30)).until(() -> {
                long started = System.nanoTime();
                TestApi.Response probe = app.api.get("/health", null);
                tookMillis.set((System.nanoTime() - started) / 1_000_000);
                return probe;
            }, probe -> probe.status() != 200);
            assertThat(health.status()).as(health.toString()).isEqualTo(503);
            assertThat(tookMillis.get()).as("a dead database must not hang the probe").isLessThan(10_000);
            assertThat(health.header("X-Request-ID")).isPresent();
            JsonNode body = health.json();
            assertThat(body.path("status").asString()).isEqualTo("down");
            assertThat(body.path("api").path("status").asString()).isEqualTo("up");
            assertThat(body.path("database").path("status").asString()).isEqualTo("down");
            assertThat(body.path("database").path("latency_ms").isNull()).isTrue();
            assertThat(body.path("jobs").isNull()).isTrue();

            TestApi.Response page = app.api.get("/status", null);
            assertThat(page.status()).isEqualTo(503);
            assertThat(page.body()).contains("Down: the database is unreachable").contains("Unknown while the database is unreachable");
        } finally {
            server.close();
        }
    }

    private static void assertTenantCounts(AppInstance app) {
        var jdbc = app.jdbc();
        assertThat(jdbc.sql("select count(*) from organisations").query(Long.class).single()).isEqualTo(1);
        assertThat(jdbc.sql("select count(*) from apps").query(Long.class).single()).isEqualTo(1);
        assertThat(jdbc.sql("select kind from api_keys order by kind").query(String.class).list())
                .containsExactly("public", "server");
    }

    private static String serverKey(AppInstance app) {
        TenantService tenants = app.bean(TenantService.class);
        Tenants.Organisation org = tenants.createOrganisation("ops test");
        Tenants.App created = tenants.createApp(org.id(), "ops app", "UTC");
        return tenants.issueKey(created.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
    }

    private static String only(Pattern pattern, String text) {
        Matcher m = pattern.matcher(text);
        assertThat(m.find()).as("%s in key file", pattern).isTrue();
        String found = m.group();
        assertThat(m.find()).as("exactly one %s", pattern).isFalse();
        return found;
    }
}
