package dev.pushservice.apps.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.db.EmbeddedPostgresServer;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestDatabase;
import dev.pushservice.support.TestTokens;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The admin CLI as an operator runs it: a separate JVM started with {@code admin …} arguments
 * against this JVM's test database, while the API runs here so keys issued by the CLI are checked
 * over real HTTP. Runs that do not depend on each other are started together, since each JVM
 * start costs seconds.
 */
class AdminCliTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final ExecutorService PARALLEL = Executors.newFixedThreadPool(4);
    private static final String UNREACHABLE_DATABASE = "postgres://postgres@127.0.0.1:1/push";

    @TempDir
    Path dataDir;

    @org.springframework.beans.factory.annotation.Autowired
    org.springframework.jdbc.core.simple.JdbcClient jdbc;

    @AfterAll
    static void stopPool() {
        PARALLEL.shutdownNow();
    }

    @Test
    void providerCredentialsAreSetFromAFileCheckedLikeTheApiAndNeverPrinted(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        TestApp app = newApp();
        var account = dev.pushservice.delivery.fcm.LocalServiceAccount.generate("cli-proj");
        String signingKey = dev.pushservice.delivery.apns.TestCertificates.pkcs8Pem(
                dev.pushservice.delivery.apns.TestCertificates.ec("secp256r1").getPrivate());
        java.nio.file.Path good = dir.resolve("good.json");
        java.nio.file.Files.writeString(good, "{\"fcm\":{\"service_account\":" + account.json(java.net.URI.create("https://oauth2.googleapis.com/token"))
                + "},\"apns\":{\"bundle_id\":\"com.example.cli\",\"environment\":\"production\",\"token\":{\"key_id\":\"KEYID12345\","
                + "\"team_id\":\"TEAMID1234\",\"signing_key\":" + JSON.writeValueAsString(signingKey) + "}}}");
        java.nio.file.Path bad = dir.resolve("bad.json");
        java.nio.file.Files.writeString(bad, "{\"fcm\":{\"service_account\":{\"type\":\"service_account\"}}}");
        java.nio.file.Path wrongShape = dir.resolve("shape.json");
        java.nio.file.Files.writeString(wrongShape, "{\"name\":\"not a credential\"}");

        // the CLI must seal secrets with the service's key, as an operator shares PUSH_SECRET_KEY
        api.get("/v1/app/webpush", app.publicKey());
        String secretKey = java.nio.file.Files.readString(dataDir().resolve("secret.key")).trim();
        List<Run> runs = cliAll(Map.of("PUSH_SECRET_KEY", secretKey), List.of(
                List.of("app", "credentials", "--app", app.appId().toString(), "--file", good.toString(), "--json"),
                List.of("app", "credentials", "--app", app.appId().toString(), "--file", bad.toString()),
                List.of("app", "credentials", "--app", app.appId().toString(), "--file", wrongShape.toString()),
                List.of("app", "credentials", "--app", app.appId().toString(), "--file", dir.resolve("missing.json").toString())));
        Run set = runs.get(0).succeeded();
        assertThat(set.json().path("fcm").path("project_id").asString()).isEqualTo("cli-proj");
        assertThat(set.json().path("apns").path("key_id").asString()).isEqualTo("KEYID12345");
        assertThat(set.out() + set.err()).doesNotContain("PRIVATE KEY");
        for (Run refused : runs.subList(1, 4)) {
            assertThat(refused.exit()).as(refused.toString()).isEqualTo(1);
            assertThat(refused.err()).doesNotContain("Exception").doesNotContain("\tat ");
        }
        assertThat(runs.get(1).err()).contains("fcm.service_account");
        assertThat(runs.get(2).err()).contains("\"apns\" and/or \"fcm\"");
        var settings = api.get("/v1/app/settings", app.serverKey()).json();
        assertThat(settings.path("fcm").path("project_id").asString()).isEqualTo("cli-proj");
        assertThat(settings.path("apns").path("bundle_id").asString()).isEqualTo("com.example.cli");
        // the service opens what the CLI sealed
        assertThat(fcmCredentials.find(app.appId()).orElseThrow().credentials().projectId()).isEqualTo("cli-proj");
        // audited once, as the CLI, by field name only; refused runs changed nothing and left nothing
        assertThat(jdbc.sql("""
                        select actor || ' ' || action || ' ' || array_to_string(changed_fields, ';')
                        from audit_log where app_id = :app and action = 'credentials.update'""")
                .param("app", app.appId()).query(String.class).list())
                .containsExactly("cli credentials.update apns.bundle_id;apns.environment;apns.token;fcm.service_account");
    }

    @org.springframework.beans.factory.annotation.Autowired
    dev.pushservice.delivery.CredentialSource<dev.pushservice.delivery.fcm.FcmCredentials> fcmCredentials;

    @org.springframework.beans.factory.annotation.Autowired
    dev.pushservice.delivery.webpush.VapidKeyService vapidKeys;

    @Test
    void organisationsAndAppsAreCreatedAndListed() {
        String name = TestTokens.unique("Acme ");
        Run created = cli("org", "create", "--name", name, "--json").succeeded();
        UUID orgId = UUID.fromString(created.json().path("id").asString());
        assertThat(created.json().path("name").asString()).isEqualTo(name);
        assertThat(tenants.organisation(orgId).name()).isEqualTo(name);

        List<Run> runs = cliAll(
                List.of("org", "list"),
                List.of("app", "create", "--org", orgId.toString(), "--name", "Shop iOS", "--timezone", "Europe/Berlin"),
                List.of("app", "create", "--org", orgId.toString(), "--name", "Shop web", "--json"));
        Run orgList = runs.get(0).succeeded();
        assertThat(orgList.out()).contains("ID", "NAME", "CREATED").containsPattern(orgId + " +" + name);

        Run berlin = runs.get(1).succeeded();
        assertThat(berlin.out()).startsWith("Created app \"Shop iOS\" (id ")
                .contains("in organisation \"" + name + "\" (id " + orgId + "), time zone Europe/Berlin.");
        JsonNode web = runs.get(2).succeeded().json();
        assertThat(web.path("timezone").asString()).isEqualTo("UTC");
        assertThat(web.path("org_id").asString()).isEqualTo(orgId.toString());
        // the CLI (which may hold another PUSH_SECRET_KEY) leaves the Web Push key pair to the service's scheduler
        UUID webId = UUID.fromString(web.path("id").asString());
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30))
                .until(() -> vapidKeys.publicKey(webId).isPresent());
        assertThat(vapidKeys.find(webId).orElseThrow().credentials().publicKeyBase64Url())
                .isEqualTo(vapidKeys.publicKey(webId).orElseThrow());

        Run apps = cli("app", "list", "--org", orgId.toString()).succeeded();
        assertThat(apps.out().lines().toList()).hasSize(3);
        assertThat(apps.out()).contains("TIMEZONE")
                .containsPattern(orgId + " +Shop iOS +Europe/Berlin +\\S+Z")
                .containsPattern(web.path("id").asString() + " +" + orgId + " +Shop web +UTC +\\S+Z");
        // the two apps were created concurrently, so their order is not asserted
        assertThat(tenants.apps(orgId)).extracting(Tenants.App::name, Tenants.App::timezone)
                .containsExactlyInAnyOrder(tuple("Shop iOS", "Europe/Berlin"), tuple("Shop web", "UTC"));
    }

    @Test
    void keysIssuedByTheCliAuthenticateWithTheirScopesAndAreNeverListedRaw() {
        TestApp app = newApp();
        String appId = app.appId().toString();
        Instant before = Instant.now();
        List<Run> created = cliAll(
                List.of("key", "create", "--app", appId, "--kind", "server", "--name", "reader",
                        "--scopes", "notifications:read", "--expires-in", "30d", "--json"),
                List.of("key", "create", "--app", appId, "--kind", "public",
                        "--scopes", "notifications:write,notifications:read"),
                List.of("key", "create", "--app", appId, "--kind", "server", "--expires-at", "2030-01-01T00:00:00Z"));

        Run readerRun = created.get(0).succeeded();
        JsonNode reader = readerRun.json();
        String readerKey = reader.path("raw_key").asString();
        assertThat(readerKey).startsWith("ps_live_");
        assertThat(reader.path("kind").asString()).isEqualTo("server");
        assertThat(reader.path("name").asString()).isEqualTo("reader");
        assertThat(reader.path("scopes").toString()).isEqualTo("[\"notifications:read\"]");
        assertThat(reader.path("state").asString()).isEqualTo("active");
        Instant readerExpiry = Instant.parse(reader.path("expires_at").asString());
        assertThat(readerExpiry).isBetween(before.plus(Duration.ofDays(30)), Instant.now().plus(Duration.ofDays(30)));
        assertThat(readerRun.err()).contains("cannot be shown again");

        Run publicRun = created.get(1).succeeded();
        assertThat(publicRun.out()).startsWith("Created public key \"public key\" (id ")
                .contains("for app \"test app\" (id " + appId + ")")
                .contains("scopes   devices:write events:write")
                .contains("expires  never")
                .contains("Store this key now: it cannot be shown again");
        assertThat(publicRun.err()).contains("Note: a public key always gets exactly devices:write and events:write; --scopes was ignored.");
        String publicKey = rawKeyIn(publicRun.out(), "ps_public_");

        Run datedRun = created.get(2).succeeded();
        assertThat(datedRun.out()).startsWith("Created server key \"server key\" (id ")
                .contains("scopes   devices:write events:write notifications:read notifications:write")
                .contains("expires  2030-01-01T00:00:00Z");
        String datedKey = rawKeyIn(datedRun.out(), "ps_live_");

        // over real HTTP: the read-only key reads but may not write; the public key is refused on server routes
        assertThat(api.get("/v1/app/settings", readerKey).status()).isEqualTo(200);
        assertThat(api.patch("/v1/app/settings", readerKey, "{\"name\":\"x\"}").status()).isEqualTo(403);
        assertThat(api.patch("/v1/app/settings", datedKey, "{\"name\":\"renamed by dated key\"}").status()).isEqualTo(200);
        assertThat(api.get("/v1/app/settings", publicKey).status()).isEqualTo(403);

        List<Run> lists = cliAll(List.of("key", "list", "--app", appId), List.of("key", "list", "--app", appId, "--json"));
        Run table = lists.get(0).succeeded();
        JsonNode keys = lists.get(1).succeeded().json();
        for (Run list : lists) {
            assertThat(list.out()).doesNotContain(readerKey, publicKey, datedKey, app.serverKey(), app.publicKey());
        }
        assertThat(table.out()).contains("ID", "KIND", "NAME", "HINT", "SCOPES", "STATE", "CREATED", "EXPIRES", "LAST USED")
                .containsPattern(reader.path("id").asString() + " +server +reader +" + hintPattern(readerKey)
                        + " +notifications:read +active +\\S+ +" + readerExpiry.toString().substring(0, 19) + "Z +\\S+Z")
                // the public key was used (and refused with 403) above, so it has a last-used time
                .containsPattern(hintPattern(publicKey) + " +devices:write,events:write +active +\\S+ +- +\\S+Z");
        assertThat(keys.size()).isEqualTo(5);
        JsonNode listedReader = keys.valueStream()
                .filter(k -> k.path("id").asString().equals(reader.path("id").asString())).findFirst().orElseThrow();
        assertThat(listedReader.has("raw_key")).isFalse();
        assertThat(listedReader.path("hint").asString()).isEqualTo(reader.path("hint").asString());
        assertThat(listedReader.path("last_used_at").isNull()).isFalse();
    }

    @Test
    void rotationReplacesTheKeyAndRevocationStopsIt() {
        TestApp app = newApp();
        Tenants.IssuedKey original = tenants.issueKey(app.appId(), KeyKind.SERVER, "deploy",
                EnumSet.of(Scope.NOTIFICATIONS_READ), null);
        assertThat(api.get("/v1/app/settings", original.rawKey()).status()).isEqualTo(200);

        JsonNode rotated = cli("key", "rotate", "--key", original.key().id().toString(), "--json").succeeded().json();
        String second = rotated.path("raw_key").asString();
        assertThat(rotated.path("name").asString()).isEqualTo("deploy");
        assertThat(rotated.path("scopes").toString()).isEqualTo("[\"notifications:read\"]");
        assertThat(rotated.path("replaced").path("id").asString()).isEqualTo(original.key().id().toString());
        assertThat(rotated.path("replaced").path("state").asString()).isEqualTo("revoked");
        assertThat(api.get("/v1/app/settings", second).status()).isEqualTo(200);
        assertThat(api.get("/v1/app/settings", original.rawKey()).status()).isEqualTo(401);

        String secondId = rotated.path("id").asString();
        Run graceRun = cli("key", "rotate", "--key", secondId, "--grace", "1h").succeeded();
        assertThat(graceRun.out()).contains("Rotated server key \"deploy\"", "replaces " + secondId,
                "The old key keeps working until ", "Store this key now: it cannot be shown again");
        String third = rawKeyIn(graceRun.out(), "ps_live_");
        assertThat(api.get("/v1/app/settings", third).status()).isEqualTo(200);
        assertThat(api.get("/v1/app/settings", second).status()).isEqualTo(200);
        Tenants.Key inGrace = tenants.key(UUID.fromString(secondId));
        assertThat(inGrace.expiresAt()).isBetween(Instant.now().plus(Duration.ofMinutes(55)), Instant.now().plus(Duration.ofHours(1)));

        Run revoked = cli("key", "revoke", "--key", secondId).succeeded();
        assertThat(revoked.out()).isEqualTo("Revoked server key \"deploy\" (id " + secondId + ", "
                + inGrace.hint() + ") of app " + app.appId() + ".\n");
        assertThat(api.get("/v1/app/settings", second).status()).isEqualTo(401);
        assertThat(api.get("/v1/app/settings", third).status()).isEqualTo(200);

        List<Run> again = cliAll(
                List.of("key", "revoke", "--key", secondId, "--json"),
                List.of("key", "rotate", "--key", secondId));
        JsonNode revokeAgain = again.get(0).succeeded().json();
        assertThat(revokeAgain.path("already_revoked").asBoolean()).isTrue();
        assertThat(revokeAgain.path("state").asString()).isEqualTo("revoked");
        Run rotateRevoked = again.get(1);
        assertThat(rotateRevoked.exit()).as(rotateRevoked.toString()).isEqualTo(1);
        assertThat(rotateRevoked.err()).startsWith("Error: Key " + secondId + " is revoked; only an active key can be rotated\n");
        assertOneLineError(rotateRevoked);

        // the audit log: what the CLI changed, as "cli"; the refused and no-op runs left nothing
        String thirdId = tenants.keys(app.appId()).stream().filter(k -> k.hint().equals(dev.pushservice.platform.auth.ApiKeys.hint(third)))
                .findFirst().orElseThrow().id().toString();
        List<String> audited = jdbc.sql("""
                        select actor || ' ' || action || ' ' || target_id || ' ' || array_to_string(changed_fields, ';')
                        from audit_log where app_id = :app and actor = 'cli' order by id""")
                .param("app", app.appId()).query(String.class).list();
        assertThat(audited).containsExactly(
                "cli key.create " + secondId + " kind;name;scopes",
                "cli key.rotate " + original.key().id() + " replaced_by;revoked_at",
                "cli key.create " + thirdId + " kind;name;scopes",
                "cli key.rotate " + secondId + " expires_at;replaced_by",
                "cli key.revoke " + secondId + " revoked_at");
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and (request_id is not null or key_id is not null)"
                + " and actor = 'cli'").param("app", app.appId()).query(Long.class).single()).isZero();
    }

    @Test
    void badInputIsAUsageErrorThatNeverTouchesTheDatabase() {
        // DATABASE_URL points nowhere: exit 2 (not 1) proves parsing rejected the input before any connection
        String id = UUID.randomUUID().toString();
        Map<List<String>, String> cases = new java.util.LinkedHashMap<>();
        cases.put(List.of(), "Error: Missing command: choose one of org, app, key, member, help");
        cases.put(List.of("frob"), "Error: Unknown command 'frob' for 'push-service admin'");
        cases.put(List.of("key", "revok", "--key", id), "Error: Unknown command 'revok' for 'push-service admin key' (did you mean revoke");
        cases.put(List.of("org", "list", "--colour"), "Error: Unknown option: '--colour'");
        cases.put(List.of("org", "create"), "Error: Missing required option: '--name=<name>'");
        cases.put(List.of("org", "create", "--name", "  "), "Error: Invalid value for option '--name': must not be empty");
        cases.put(List.of("org", "create", "--name", "n".repeat(191)), "Error: Invalid value for option '--name': must be at most 190 characters");
        cases.put(List.of("org", "create", "--name", "tab\there"), "Error: Invalid value for option '--name': must not contain control characters");
        cases.put(List.of("app", "create", "--org", "not-a-uuid", "--name", "x"),
                "Error: Invalid value for option '--org': 'not-a-uuid' is not an id");
        cases.put(List.of("app", "create", "--org", id, "--name", "x", "--timezone", "Mars/Olympus"),
                "Error: Invalid value for option '--timezone': 'Mars/Olympus' is not a time zone");
        cases.put(List.of("app", "create", "--org", id, "--name", "x", "--timezone", "+02:00"),
                "is not a time zone; use an IANA name");
        cases.put(List.of("key", "create", "--app", id, "--kind", "root"),
                "Error: Invalid value for option '--kind': 'root' is not a key kind; use server or public");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--scopes", "devices:write,push:all"),
                "'push:all' is not a scope; use devices:write, notifications:write, notifications:read, events:write");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-in", "3 weeks"),
                "Error: Invalid value for option '--expires-in': '3 weeks' is not a duration");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-in", "0d"),
                "Error: --expires-in must be longer than 0");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-at", "2020-01-01T00:00:00Z"),
                "Error: --expires-at must be in the future (it is 2020-01-01T00:00:00Z)");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-at", "tomorrow"),
                "'tomorrow' is not a date-time");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-at", "+999999999-01-01T00:00:00Z"),
                "'+999999999-01-01T00:00:00Z' is not a date-time between years 0001 and 9999");
        cases.put(List.of("key", "create", "--app", id, "--kind", "server", "--expires-in", "1d", "--expires-at", "2030-01-01T00:00:00Z"),
                "are mutually exclusive");
        cases.put(List.of("key", "rotate", "--key", id, "--grace", "1y"),
                "Error: Invalid value for option '--grace': '1y' is not a duration");
        cases.put(List.of("key", "list"), "Error: Missing required option: '--app=APP_ID'");

        Map<String, String> env = Map.of("DATABASE_URL", UNREACHABLE_DATABASE);
        List<List<String>> argLists = new ArrayList<>(cases.keySet());
        List<Run> runs = cliAll(env, argLists);
        for (int i = 0; i < runs.size(); i++) {
            Run run = runs.get(i);
            String expected = cases.get(argLists.get(i));
            assertThat(run.exit()).as(run.toString()).isEqualTo(2);
            assertThat(run.out()).as(run.toString()).isEmpty();
            assertThat(run.err()).as(run.toString()).startsWith("Error: ").contains(expected)
                    .contains("Usage: push-service admin");
            assertThat(run.err().lines().findFirst().orElseThrow()).as(run.toString()).contains(expected.replace("Error: ", ""));
            assertOneLineError(run);
        }
    }

    @Test
    void helpIsPrintedOnStdout() {
        Map<String, String> env = Map.of("DATABASE_URL", UNREACHABLE_DATABASE);
        List<Run> runs = cliAll(env, List.of(List.of("help"), List.of("--help"), List.of("key", "create", "--help"),
                List.of("key", "rotate", "-h")));
        for (Run run : runs) {
            assertThat(run.exit()).as(run.toString()).isEqualTo(0);
            assertThat(run.err()).as(run.toString()).isEmpty();
        }
        assertThat(runs.get(0).out()).contains("Usage: push-service admin", "org", "app", "key", "Examples:", "--json");
        assertThat(runs.get(1).out()).isEqualTo(runs.get(0).out());
        assertThat(runs.get(2).out()).contains("Usage: push-service admin key create", "--kind=server|public",
                "--scopes", "--expires-in", "--expires-at", "devices:write and events:write");
        assertThat(runs.get(3).out()).contains("Usage: push-service admin key rotate", "--grace");
    }

    @Test
    void unknownIdsAndAnUnreachableDatabaseFailWithStatusOne() {
        String id = UUID.randomUUID().toString();
        Map<List<String>, String> notFound = new java.util.LinkedHashMap<>();
        notFound.put(List.of("app", "create", "--org", id, "--name", "x"), "Error: No organisation " + id);
        notFound.put(List.of("app", "list", "--org", id), "Error: No organisation " + id);
        notFound.put(List.of("key", "create", "--app", id, "--kind", "server"), "Error: No app " + id);
        notFound.put(List.of("key", "rotate", "--key", id), "Error: No key " + id);
        List<List<String>> argLists = new ArrayList<>(notFound.keySet());
        List<CompletableFuture<Run>> pending = new ArrayList<>();
        for (List<String> args : argLists) pending.add(CompletableFuture.supplyAsync(() -> cli(Map.of(), args), PARALLEL));
        CompletableFuture<Run> unreachable = CompletableFuture.supplyAsync(
                () -> cli(Map.of("DATABASE_URL", UNREACHABLE_DATABASE), List.of("org", "list")), PARALLEL);

        for (int i = 0; i < argLists.size(); i++) {
            Run run = pending.get(i).join();
            assertThat(run.exit()).as(run.toString()).isEqualTo(1);
            assertThat(run.out()).as(run.toString()).isEmpty();
            assertThat(run.err()).as(run.toString()).startsWith(notFound.get(argLists.get(i)) + "\n")
                    .contains("Usage: push-service admin " + argLists.get(i).get(0) + " " + argLists.get(i).get(1));
            assertOneLineError(run);
        }
        Run down = unreachable.join();
        assertThat(down.exit()).as(down.toString()).isEqualTo(1);
        assertThat(down.out()).isEmpty();
        assertThat(down.err()).as(down.toString())
                .isEqualTo("Error: Cannot connect to the database (DATABASE_URL): Connection to 127.0.0.1:1 refused. "
                        + "Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.\n");
    }

    @Test
    void withoutDatabaseUrlTheEmbeddedPostgresIsStartedKeptAndShared() throws Exception {
        Map<String, String> embedded = new HashMap<>();
        embedded.put("DATABASE_URL", null);
        Run created = cli(embedded, List.of("org", "create", "--name", "Embedded Org", "--json")).succeeded();
        String firstOrg = created.json().path("id").asString();
        assertThat(dataDir.resolve("postgres/PG_VERSION")).exists();

        // a second run starts the server again on the same files and sees the organisation
        Run listed = cli(embedded, List.of("org", "list")).succeeded();
        assertThat(listed.out()).containsPattern(firstOrg + " +Embedded Org");

        // while another process (the service, here this test JVM) owns the server, the CLI attaches to it
        try (EmbeddedPostgresServer running = EmbeddedPostgresServer.startOrAttach(dataDir, true)) {
            String secondOrg = cli(embedded, List.of("org", "create", "--name", "While running", "--json"))
                    .succeeded().json().path("id").asString();
            DatabaseUrl url = running.url();
            try (Connection c = DriverManager.getConnection(url.jdbcUrl(), url.username(), url.password());
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("select id::text from organisations order by created_at")) {
                List<String> ids = new ArrayList<>();
                while (rs.next()) ids.add(rs.getString(1));
                // the query itself proves the CLI left the server it did not start running
                assertThat(ids).containsExactly(firstOrg, secondOrg);
            }
        }
    }

    // ---------------------------------------------------------------- running the CLI

    record Run(List<String> args, int exit, String out, String err) {

        Run succeeded() {
            assertThat(exit).as(toString()).isZero();
            assertThat(err).as(toString()).doesNotContain("Exception", "\tat ", "ERROR", "WARN");
            return this;
        }

        JsonNode json() {
            return JSON.readTree(out);
        }

        @Override
        public String toString() {
            return "admin " + String.join(" ", args) + " -> exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private static void assertOneLineError(Run run) {
        assertThat(run.err()).as(run.toString()).doesNotContain("Exception", "\tat ");
        assertThat(run.err().lines().filter(l -> l.startsWith("Error:")).count()).as(run.toString()).isEqualTo(1);
    }

    private static String hintPattern(String rawKey) {
        String prefix = rawKey.startsWith("ps_public_") ? "ps_public_" : "ps_live_";
        return prefix + "…" + java.util.regex.Pattern.quote(rawKey.substring(rawKey.length() - 4));
    }

    private static String rawKeyIn(String out, String prefix) {
        return out.lines().map(String::strip).filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no raw key in:\n" + out));
    }

    private Run cli(String... args) {
        return cli(Map.of(), List.of(args));
    }

    private List<Run> cliAll(List<String>... argLists) {
        return cliAll(Map.of(), List.of(argLists));
    }

    private List<Run> cliAll(Map<String, String> env, List<List<String>> argLists) {
        List<CompletableFuture<Run>> runs = argLists.stream()
                .map(args -> CompletableFuture.supplyAsync(() -> cli(env, args), PARALLEL)).toList();
        return runs.stream().map(CompletableFuture::join).toList();
    }

    /**
     * Starts {@code java … PushServiceApplication admin args} with {@code DATABASE_URL} = the test
     * database and {@code PUSH_DATA_DIR} = a temp dir; {@code env} overrides (a null value removes
     * the variable).
     */
    private Run cli(Map<String, String> env, List<String> args) {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                // start-up speed over peak performance: these JVMs live for seconds
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
                // no hsperfdata file: a file of the same pid left locked by a JVM in another pid
                // namespace makes the JVM print a warning on stdout, which the tests read
                "-XX:-UsePerfData",
                "-cp", System.getProperty("java.class.path"), "dev.pushservice.PushServiceApplication", "admin"));
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command);
        Map<String, String> environment = builder.environment();
        environment.put("DATABASE_URL", TestDatabase.asDatabaseUrlSetting(TestDatabase.url()));
        environment.put("PUSH_DATA_DIR", dataDir.toString());
        env.forEach((k, v) -> {
            if (v == null) environment.remove(k);
            else environment.put(k, v);
        });
        try {
            Path out = Files.createTempFile("cli-out", ".txt");
            Path err = Files.createTempFile("cli-err", ".txt");
            builder.redirectOutput(out.toFile()).redirectError(err.toFile());
            Process process = builder.start();
            if (!process.waitFor(180, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("admin " + args + " did not finish within 180 s");
            }
            Run run = new Run(args, process.exitValue(), Files.readString(out), Files.readString(err));
            Files.delete(out);
            Files.delete(err);
            return run;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
