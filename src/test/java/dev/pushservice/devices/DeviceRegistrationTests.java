package dev.pushservice.devices;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

class DeviceRegistrationTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;

    @Autowired
    DataSource dataSource;

    static String json(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    TestApi.Response register(TestApp app, String body) {
        return api.post("/v1/devices/register", app.publicKey(), body);
    }

    int deviceCount(TestApp app) {
        return jdbc.sql("select count(*) from devices where app_id = :app").param("app", app.appId()).query(Integer.class).single();
    }

    @Test
    void newTokenCreatesDeviceAndKnownTokenRefreshesIt() {
        TestApp app = newApp();
        String token = TestTokens.apns();
        TestApi.Response created = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + token + "\",\"app_version\":\"1.0\","
                + "\"device_model\":\"iPhone15,2\",\"os_version\":\"17.1\",\"locale\":\"en-US\",\"timezone\":\"Europe/Berlin\"}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        JsonNode device = created.json();
        UUID id = UUID.fromString(device.path("device_id").asString());
        assertThat(device.path("enabled").asBoolean()).isTrue();
        assertThat(device.path("timezone").asString()).isEqualTo("Europe/Berlin");
        assertThat(created.body()).doesNotContain(token);

        TestApi.Response again = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + token.toUpperCase() + "\",\"app_version\":\"1.1\"}");
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("device_id").asString()).isEqualTo(id.toString());
        assertThat(again.json().path("app_version").asString()).isEqualTo("1.1");
        assertThat(again.json().path("device_model").asString()).isEqualTo("iPhone15,2");
        assertThat(deviceCount(app)).isEqualTo(1);
    }

    /** V56: new devices and their users get version 7 ids of their registration time, so ids sort as registrations came. */
    @Test
    void newDevicesAndUsersGetTimeOrderedIds() throws Exception {
        TestApp app = newApp();
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String body = i == 1 ? "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"ordered-" + i + "\"}"
                    : "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}";
            TestApi.Response created = register(app, body);
            assertThat(created.status()).as(created.toString()).isEqualTo(201);
            ids.add(UUID.fromString(created.json().path("device_id").asString()));
            Thread.sleep(3); // a later millisecond: ids of one millisecond are ordered only by their random bits
        }
        for (UUID id : ids) {
            assertThat(id.version()).as(id.toString()).isEqualTo(7);
            assertThat(dev.pushservice.platform.storage.Uuid7.time(id))
                    .isBetween(java.time.Instant.now().minusSeconds(60), java.time.Instant.now().plusSeconds(1));
        }
        // PostgreSQL orders uuids byte by byte: the database's own order of the ids is the order of registration
        List<UUID> ordered = jdbc.sql("select id from devices where app_id = :app order by id")
                .param("app", app.appId()).query(UUID.class).list();
        assertThat(ordered).containsExactlyElementsOf(ids);
        // the users the registrations made (anonymous, and the named one) too
        List<Integer> userVersions = jdbc.sql("""
                        select distinct (get_byte(uuid_send(u.id), 6) >> 4) from users u
                        join devices d on d.user_id = u.id where d.app_id = :app""")
                .param("app", app.appId()).query(Integer.class).list();
        assertThat(userVersions).containsExactly(7);
    }

    /**
     * V57: the functions a registration's transaction evaluates are PL/pgSQL, whose plans a session keeps. A
     * SQL-language function that PostgreSQL cannot inline is planned again in every transaction. storage_uuid7
     * written that way (V56) cost about 70 µs a call, twice per new device. Their results are what they were.
     */
    @Test
    void functionsEvaluatedInEveryRegistrationArePlannedOncePerSession() {
        List<String> sqlLanguage = jdbc.sql("""
                        select p.oid::regprocedure::text from pg_proc p join pg_language l on l.oid = p.prolang
                        where p.oid in ('register_device(uuid, text, text, bytea, text, jsonb, text, text, text, text, text, bigint, uuid)'::regprocedure,
                                        'upsert_named_user(uuid, text, jsonb)'::regprocedure,
                                        'storage_uuid7(timestamptz)'::regprocedure,
                                        'segment_version_key(text)'::regprocedure,
                                        'track_active_devices()'::regprocedure,
                                        'devices_record_registered()'::regprocedure)
                          and l.lanname <> 'plpgsql'""")
                .query(String.class).list();
        assertThat(sqlLanguage).as("functions planned again in every transaction").isEmpty();

        java.time.Instant at = java.time.Instant.parse("2026-11-27T12:00:00.123Z");
        UUID id = jdbc.sql("select storage_uuid7(cast(:at as timestamptz))")
                .param("at", java.sql.Timestamp.from(at)).query(UUID.class).single();
        assertThat(id.version()).isEqualTo(7);
        assertThat(id.variant()).isEqualTo(2);
        assertThat(dev.pushservice.platform.storage.Uuid7.time(id)).isEqualTo(at);
        UUID other = jdbc.sql("select storage_uuid7(cast(:at as timestamptz))")
                .param("at", java.sql.Timestamp.from(at)).query(UUID.class).single();
        assertThat(other).isNotEqualTo(id);
        assertThat(other.getMostSignificantBits() >>> 16).isEqualTo(id.getMostSignificantBits() >>> 16);

        assertThat(jdbc.sql("select array_to_string(segment_version_key('2.10.0-beta'), '.')").query(String.class).single())
                .isEqualTo("2.10");
        assertThat(jdbc.sql("select segment_version_key('beta') is null and segment_version_key(null) is null")
                .query(Boolean.class).single()).isTrue();
    }

    @Test
    void registeringADisabledDeviceReEnablesIt() {
        TestApp app = newApp();
        String token = TestTokens.fcm();
        String id = register(app, "{\"platform\":\"android\",\"push_token\":\"" + token + "\"}").json().path("device_id").asString();
        TestApi.Response deleted = api.delete("/v1/devices/" + id, app.publicKey());
        assertThat(deleted.status()).isEqualTo(200);
        assertThat(deleted.json().path("enabled").asBoolean()).isFalse();
        assertThat(deleted.json().path("invalidated_at").isString()).isTrue();
        assertThat(api.delete("/v1/devices/" + id, app.publicKey()).status()).isEqualTo(404);
        TestApi.Response back = register(app, "{\"platform\":\"android\",\"push_token\":\"" + token + "\"}");
        assertThat(back.status()).isEqualTo(200);
        assertThat(back.json().path("device_id").asString()).isEqualTo(id);
        assertThat(back.json().path("enabled").asBoolean()).isTrue();
        assertThat(back.json().path("invalidated_at").isNull()).isTrue();
    }

    @Test
    void concurrentRegistrationsOfOneTokenCreateOneDevice() throws Exception {
        TestApp app = newApp();
        String body = "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}";
        ExecutorService pool = Executors.newFixedThreadPool(12);
        List<Future<TestApi.Response>> results = new ArrayList<>();
        for (int i = 0; i < 12; i++) results.add(pool.submit(() -> register(app, body)));
        List<Integer> statuses = new ArrayList<>();
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (Future<TestApi.Response> f : results) {
            TestApi.Response r = f.get();
            statuses.add(r.status());
            ids.add(r.json().path("device_id").asString());
        }
        pool.shutdown();
        assertThat(statuses).containsOnly(200, 201);
        assertThat(statuses.stream().filter(s -> s == 201).count()).isEqualTo(1);
        assertThat(ids).hasSize(1);
        assertThat(deviceCount(app)).isEqualTo(1);
        assertThat(jdbc.sql("select count(*) from users where app_id = :app").param("app", app.appId())
                .query(Integer.class).single()).as("registrations that lost the race leave no anonymous user behind").isEqualTo(1);
    }

    @Test
    void concurrentRegistrationsOfOneStagedTokenClaimItOnce() throws Exception {
        TestApp app = newApp();
        String token = TestTokens.apns();
        UUID sourceUuid = UUID.randomUUID();
        stage(app, "ios", token, "onesignal", sourceUuid.toString(), null, "{\"plan\":\"legacy\"}", null);
        String body = "{\"platform\":\"ios\",\"push_token\":\"" + token + "\"}";
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Callable<TestApi.Response>> tasks = new ArrayList<>();
        for (int i = 0; i < 8; i++) tasks.add(() -> register(app, body));
        List<TestApi.Response> responses = new ArrayList<>();
        for (Future<TestApi.Response> f : pool.invokeAll(tasks)) responses.add(f.get());
        pool.shutdown();
        assertThat(responses).extracting(TestApi.Response::status).containsOnly(200, 201);
        assertThat(responses.stream().filter(r -> r.status() == 201).count()).isEqualTo(1);
        assertThat(responses).extracting(r -> r.json().path("device_id").asString()).containsOnly(sourceUuid.toString());
        assertThat(deviceCount(app)).isEqualTo(1);
        assertThat(jdbc.sql("select claimed_device_id from migration_staged_devices where app_id = :app")
                .param("app", app.appId()).query(UUID.class).single()).isEqualTo(sourceUuid);
        assertThat(jdbc.sql("select count(*) from users where app_id = :app").param("app", app.appId())
                .query(Integer.class).single()).isEqualTo(1);
    }

    /**
     * The race behind {@link #concurrentRegistrationsOfOneStagedTokenClaimItOnce}, made certain: a
     * transaction holding the staged record stands in for a claimer that has not committed yet. Both
     * registrations must wait for it rather than insert the token under a random id (which loses the
     * claim whenever such an insert reaches the token's index first).
     */
    @Test
    void aClaimWaitsForAnotherClaimOfTheSameRecord() throws Exception {
        TestApp app = newApp();
        String token = TestTokens.apns();
        UUID sourceUuid = UUID.randomUUID();
        stage(app, "ios", token, "onesignal", sourceUuid.toString(), null, null, null);
        String body = "{\"platform\":\"ios\",\"push_token\":\"" + token + "\"}";
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<TestApi.Response>> results = new ArrayList<>();
        try (Connection holder = dataSource.getConnection()) {
            holder.setAutoCommit(false);
            try (PreparedStatement lock = holder.prepareStatement(
                    "select id from migration_staged_devices where app_id = ? for update")) {
                lock.setObject(1, app.appId());
                lock.executeQuery().close();
            }
            for (int i = 0; i < 2; i++) results.add(pool.submit(() -> register(app, body)));
            await().atMost(Duration.ofSeconds(20)).until(() -> results.stream().allMatch(Future::isDone)
                    || jdbc.sql("select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")
                            .query(Integer.class).single() >= 2);
            holder.rollback();
        }
        List<TestApi.Response> responses = new ArrayList<>();
        for (Future<TestApi.Response> f : results) responses.add(f.get(20, TimeUnit.SECONDS));
        pool.shutdown();
        assertThat(responses).extracting(TestApi.Response::status).containsExactlyInAnyOrder(200, 201);
        assertThat(responses).extracting(r -> r.json().path("device_id").asString()).containsOnly(sourceUuid.toString());
        assertThat(jdbc.sql("select claimed_device_id from migration_staged_devices where app_id = :app")
                .param("app", app.appId()).query(UUID.class).single()).isEqualTo(sourceUuid);
    }

    @Test
    void webSubscriptionIsCheckedAndIdentifiedByEndpoint() throws Exception {
        TestApp app = newApp();
        String endpoint = "https://push.example.com/send/" + UUID.randomUUID();
        TestApi.Response created = register(app, "{\"platform\":\"web\",\"push_token\":" + json(TestTokens.webSubscription(endpoint)) + "}");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        TestApi.Response resubscribed = register(app, "{\"platform\":\"web\",\"push_token\":" + json(TestTokens.webSubscription(endpoint)) + "}");
        assertThat(resubscribed.status()).isEqualTo(200);
        assertThat(resubscribed.json().path("device_id").asString()).isEqualTo(created.json().path("device_id").asString());
        assertThat(created.body()).doesNotContain(endpoint);
    }

    @Test
    void badTokensAreRejectedPerPlatform() throws Exception {
        TestApp app = newApp();
        String valid = TestTokens.webSubscription("https://push.example.com/x");
        String offCurve = valid.replaceFirst("\"p256dh\":\"B", "\"p256dh\":\"A");
        List<String> bodies = List.of(
                "{\"platform\":\"ios\",\"push_token\":\"not-hex-zz\"}",
                "{\"platform\":\"ios\",\"push_token\":\"abc\"}",
                "{\"platform\":\"android\",\"push_token\":\"has space\"}",
                "{\"platform\":\"android\",\"push_token\":\"\"}",
                "{\"platform\":\"web\",\"push_token\":\"{not json\"}",
                "{\"platform\":\"web\",\"push_token\":" + json(valid.replace("https://push.example.com/x", "http://push.example.com/x")) + "}",
                "{\"platform\":\"web\",\"push_token\":" + json(valid.replace("https://push.example.com/x", "https://127.0.0.1/x")) + "}",
                "{\"platform\":\"web\",\"push_token\":" + json(valid.replace("https://push.example.com/x", "/relative")) + "}",
                "{\"platform\":\"web\",\"push_token\":" + json(valid.replaceFirst("\"auth\":\"[^\"]+\"", "\"auth\":\"AAAA\"")) + "}",
                "{\"platform\":\"web\",\"push_token\":" + json(valid.replaceFirst("\"p256dh\":\"[^\"]+\"", "\"p256dh\":\"AAAA\"")) + "}",
                "{\"platform\":\"web\",\"push_token\":" + json("{\"endpoint\":\"https://push.example.com/x\"}") + "}",
                "{\"platform\":\"ios\",\"push_token\":\"" + "ab".repeat(1025) + "\"}");
        for (String body : bodies) {
            TestApi.Response r = register(app, body);
            assertThat(r.status()).as(body + " -> " + r).isEqualTo(422);
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(body).contains("push_token");
        }
        if (!offCurve.equals(valid)) {
            TestApi.Response r = register(app, "{\"platform\":\"web\",\"push_token\":" + json(offCurve) + "}");
            assertThat(r.status()).isEqualTo(422);
        }
        assertThat(deviceCount(app)).isZero();
    }

    /**
     * The public key (shipped in every web page) cannot register a subscription whose endpoint is not
     * https, or whose host is a loopback, private, link-local, metadata or reserved address in any
     * written form: a 422 naming {@code push_token}, nothing stored. A name is accepted (it is checked
     * when the push is sent, see WebPushAddressGuardTests).
     */
    @Test
    void webEndpointsToInternalAddressesAreRefusedAtRegistration() {
        TestApp app = newApp();
        List<String> endpoints = List.of("http://push.example.com/x", "http://127.0.0.1:8080/x", "https://127.0.0.1/x",
                "https://127.0.0.1:443/x", "https://10.0.0.8/x", "https://172.20.1.1/x", "https://192.168.0.1/x",
                "https://100.100.100.200/x", "https://169.254.169.254/latest/meta-data/", "https://0.0.0.0/x",
                "https://localhost/x", "https://localhost./x", "https://push.localhost/x",
                "https://[::1]/x", "https://[0:0:0:0:0:0:0:1]/x", "https://[::]/x", "https://[fe80::1]/x",
                "https://[fd00:ec2::254]/x", "https://[::ffff:127.0.0.1]/x", "https://[::ffff:a9fe:a9fe]/x",
                "https://[64:ff9b::a9fe:a9fe]/x", "https://[2002:a9fe:a9fe::]/x",
                "https://0x7f000001/x", "https://2130706433/x", "https://017700000001/x", "https://0177.0.0.1/x",
                "https://127.1/x", "https://0/x");
        for (String endpoint : endpoints) {
            TestApi.Response r = register(app, "{\"platform\":\"web\",\"push_token\":" + json(TestTokens.webSubscription(endpoint)) + "}");
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(endpoint).containsExactly("push_token");
            assertThat(r.body()).as("the endpoint is never echoed").doesNotContain(endpoint.substring(8));
        }
        assertThat(deviceCount(app)).isZero();
        TestApi.Response named = register(app, "{\"platform\":\"web\",\"push_token\":"
                + json(TestTokens.webSubscription("https://push.example.test/" + UUID.randomUUID())) + "}");
        assertThat(named.status()).as(named.toString()).isEqualTo(201);
    }

    @Test
    void everyFieldIsValidatedAndNothingIsStored() {
        TestApp app = newApp();
        String token = TestTokens.apns();
        record Case(String fieldJson, String field) {
        }
        List<Case> cases = List.of(
                new Case("\"platform\":\"windows\"", "platform"),
                new Case("\"platform\":7", "platform"),
                new Case("\"push_token\":12345", "push_token"),
                new Case("\"external_user_id\":\"" + "u".repeat(191) + "\"", "external_user_id"),
                new Case("\"external_user_id\":42", "external_user_id"),
                new Case("\"identity_token\":\"" + "t".repeat(8193) + "\"", "identity_token"),
                new Case("\"app_version\":\"" + "1".repeat(51) + "\"", "app_version"),
                new Case("\"app_version\":1.5", "app_version"),
                new Case("\"device_model\":\"" + "m".repeat(121) + "\"", "device_model"),
                new Case("\"os_version\":\"" + "1".repeat(51) + "\"", "os_version"),
                new Case("\"locale\":\"" + "e".repeat(21) + "\"", "locale"),
                new Case("\"locale\":\"en US!\"", "locale"),
                new Case("\"timezone\":\"Mars/Olympus_Mons\"", "timezone"),
                new Case("\"timezone\":\"+02:00\"", "timezone"),
                new Case("\"timezone\":\"" + "E".repeat(65) + "\"", "timezone"),
                new Case("\"tags\":[1,2]", "tags"),
                new Case("\"tags\":{\"nested\":{\"a\":1}}", "tags.nested"),
                new Case("\"tags\":{\"list\":[1]}", "tags.list"),
                new Case("\"tags\":{\"bad key\":\"x\"}", "tags.bad key"),
                new Case("\"tags\":{\"x\":\"" + "v".repeat(1025) + "\"}", "tags.x"));
        for (Case c : cases) {
            String body = "{\"platform\":\"ios\",\"push_token\":\"" + token + "\"," + c.fieldJson() + "}";
            if (c.fieldJson().startsWith("\"platform\"") || c.fieldJson().startsWith("\"push_token\"")) {
                body = "{" + (c.field().equals("platform") ? "\"push_token\":\"" + token + "\"," : "\"platform\":\"ios\",") + c.fieldJson() + "}";
            }
            TestApi.Response r = register(app, body);
            assertThat(r.status()).as(c + " -> " + r).isEqualTo(422);
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(c.toString()).contains(c.field());
        }
        assertThat(register(app, "{\"push_token\":\"" + token + "\"}").json().path("error").path("details")
                .findValuesAsString("field")).contains("platform");
        assertThat(register(app, "{}").json().path("error").path("details").findValuesAsString("field"))
                .contains("platform", "push_token");
        assertThat(deviceCount(app)).isZero();
    }

    @Test
    void tagsAreStoredAsStringsOnTheUser() {
        TestApp app = newApp();
        TestApi.Response r = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"tagger\","
                + "\"tags\":{\"plan\":\"pro\",\"level\":7,\"ratio\":1.5,\"beta\":true,\"cleared\":null,\"a.b_c-d\":\"ok\"}}");
        assertThat(r.status()).isEqualTo(201);
        JsonNode tags = r.json().path("tags");
        assertThat(tags.path("plan").asString()).isEqualTo("pro");
        assertThat(tags.path("level").isString()).isTrue();
        assertThat(tags.path("level").asString()).isEqualTo("7");
        assertThat(tags.path("ratio").asString()).isEqualTo("1.5");
        assertThat(tags.path("beta").asString()).isEqualTo("true");
        assertThat(tags.path("cleared").asString()).isEmpty();
        assertThat(tags.path("a.b_c-d").asString()).isEqualTo("ok");
        JsonNode user = api.get("/v1/users/tagger", app.serverKey()).json();
        assertThat(user.path("tags").path("plan").asString()).isEqualTo("pro");
    }

    @Test
    void anonymousDeviceTagsMoveToTheUserItLaterNames() {
        TestApp app = newApp();
        String token = TestTokens.apns();
        TestApi.Response anon = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + token + "\",\"tags\":{\"source\":\"ad\"}}");
        assertThat(anon.json().path("external_user_id").isNull()).isTrue();
        assertThat(anon.json().path("tags").path("source").asString()).isEqualTo("ad");
        api.patch("/v1/users/anna", app.serverKey(), "{\"tags\":{\"plan\":\"gold\",\"source\":\"crm\"}}");
        TestApi.Response named = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + token + "\",\"external_user_id\":\"anna\"}");
        assertThat(named.status()).isEqualTo(200);
        assertThat(named.json().path("external_user_id").asString()).isEqualTo("anna");
        assertThat(named.json().path("tags").path("plan").asString()).isEqualTo("gold");
        assertThat(named.json().path("tags").path("source").asString()).isEqualTo("crm");
        assertThat(jdbc.sql("select count(*) from users where app_id = :app and external_user_id is null")
                .param("app", app.appId()).query(Integer.class).single()).isZero();
    }

    @Test
    void identityVerificationAcceptsOnlyValidEs256Tokens() throws Exception {
        TestApp app = newApp();
        ECKey key = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
        ECKey other = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
        TestApi.Response set = api.patch("/v1/app/settings", app.serverKey(), "{\"identity_verification\":{\"required\":true,"
                + "\"issuer\":\"https://backend.example\",\"keys\":[" + key.toPublicJWK().toJSONString() + "]}}");
        assertThat(set.status()).as(set.toString()).isEqualTo(200);
        assertThat(set.body()).doesNotContain("\"d\"");
        String aud = app.appId().toString();
        Date future = new Date(System.currentTimeMillis() + 600_000);

        String missing = "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"u1\"}";
        assertIdentityRejected(register(app, missing));
        assertThat(register(app, body("u1", sign(key, "https://backend.example", aud, "u1", future))).status()).isEqualTo(201);
        assertIdentityRejected(register(app, body("u1", sign(other, "https://backend.example", aud, "u1", future))));
        assertIdentityRejected(register(app, body("u1", sign(key, "https://backend.example", aud, "u2", future))));
        assertIdentityRejected(register(app, body("u1", sign(key, "https://backend.example", aud, "u1",
                new Date(System.currentTimeMillis() - 3_600_000)))));
        assertIdentityRejected(register(app, body("u1", sign(key, "https://evil.example", aud, "u1", future))));
        assertIdentityRejected(register(app, body("u1", sign(key, "https://backend.example", UUID.randomUUID().toString(), "u1", future))));
        assertIdentityRejected(register(app, body("u1", sign(key, "https://backend.example", aud, "u1", null))));
        SignedJWT hs = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), new JWTClaimsSet.Builder()
                .issuer("https://backend.example").audience(aud).subject("u1").expirationTime(future).build());
        hs.sign(new MACSigner(new byte[32]));
        assertIdentityRejected(register(app, body("u1", hs.serialize())));
        assertIdentityRejected(register(app, body("u1", "not.a.jwt")));
        // anonymous registrations do not claim an identity
        assertThat(register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}").status()).isEqualTo(201);
    }

    @Test
    void identitySettingsRejectPrivateOrWrongKeys() throws Exception {
        TestApp app = newApp();
        ECKey key = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
        ECKey p384 = new ECKeyGenerator(Curve.P_384).keyID("k2").generate();
        for (String keys : List.of(key.toJSONString(), p384.toPublicJWK().toJSONString(), "{\"kty\":\"RSA\"}", "\"text\"")) {
            TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(),
                    "{\"identity_verification\":{\"issuer\":\"i\",\"keys\":[" + keys + "]}}");
            assertThat(r.status()).as(keys).isEqualTo(422);
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).contains("identity_verification.keys[0]");
        }
        TestApi.Response noKeys = api.patch("/v1/app/settings", app.serverKey(), "{\"identity_verification\":{\"required\":true}}");
        assertThat(noKeys.status()).isEqualTo(422);
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("identity_verification").path("required").asBoolean()).isFalse();
    }

    private void assertIdentityRejected(TestApi.Response r) {
        assertThat(r.status()).as(r.toString()).isEqualTo(422);
        assertThat(r.json().path("error").path("details").findValuesAsString("field")).contains("identity_token");
    }

    private static String body(String user, String identityToken) {
        return "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"" + user
                + "\",\"identity_token\":\"" + identityToken + "\"}";
    }

    private static String sign(ECKey key, String issuer, String audience, String subject, Date exp) throws Exception {
        JWTClaimsSet.Builder claims = new JWTClaimsSet.Builder().issuer(issuer).audience(audience).subject(subject);
        if (exp != null) claims.expirationTime(exp);
        SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.ES256).keyID(key.getKeyID()).type(JOSEObjectType.JWT).build(),
                claims.build());
        jwt.sign(new ECDSASigner(key));
        return jwt.serialize();
    }

    @Test
    void activeDeviceLimitIsExactUnderConcurrency() throws Exception {
        TestApp app = newApp();
        jdbc.sql("update organisations set active_device_limit = 5 where id = :org").param("org", app.orgId()).update();
        ExecutorService pool = Executors.newFixedThreadPool(10);
        List<Callable<TestApi.Response>> tasks = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            tasks.add(() -> register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}"));
        }
        List<Integer> statuses = new ArrayList<>();
        for (Future<TestApi.Response> f : pool.invokeAll(tasks)) statuses.add(f.get().status());
        pool.shutdown();
        assertThat(statuses.stream().filter(s -> s == 201).count()).isEqualTo(5);
        assertThat(statuses.stream().filter(s -> s == 409).count()).isEqualTo(15);
        assertThat(deviceCount(app)).isEqualTo(5);

        TestApi.Response refused = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}");
        assertError(refused, 409, "conflict");
        // disabling one frees a slot; re-enabling a disabled one takes it again
        String id = api.get("/v1/devices?limit=1", app.serverKey()).json().path("data").get(0).path("device_id").asString();
        assertThat(api.delete("/v1/devices/" + id, app.publicKey()).status()).isEqualTo(200);
        String fresh = TestTokens.apns();
        assertThat(register(app, "{\"platform\":\"ios\",\"push_token\":\"" + fresh + "\"}").status()).isEqualTo(201);
        assertThat(jdbc.sql("select active from org_device_usage where org_id = :org").param("org", app.orgId())
                .query(Long.class).single()).isEqualTo(5);
    }

    @Test
    void stagedMigrationRecordsAreClaimed() {
        TestApp app = newApp();
        String uuidToken = TestTokens.apns();
        String otherToken = TestTokens.fcm();
        String unmatchedToken = TestTokens.apns();
        UUID sourceUuid = UUID.randomUUID();
        stage(app, "ios", uuidToken, "onesignal", sourceUuid.toString(), "migrated-user", "{\"plan\":\"legacy\",\"n\":3}", "Asia/Tokyo");
        stage(app, "android", otherToken, "airship", "channel-123", null, null, "+05:00");
        stage(app, "android", unmatchedToken, "airship", "channel-999", null, null, null);

        TestApi.Response a = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + uuidToken + "\",\"app_version\":\"2.0\"}");
        assertThat(a.status()).isEqualTo(201);
        assertThat(a.json().path("device_id").asString()).isEqualTo(sourceUuid.toString());
        assertThat(a.json().path("migrated_from").path("provider").asString()).isEqualTo("onesignal");
        assertThat(a.json().path("migrated_from").path("source_id").asString()).isEqualTo(sourceUuid.toString());
        assertThat(a.json().path("external_user_id").asString()).isEqualTo("migrated-user");
        assertThat(a.json().path("tags").path("plan").asString()).isEqualTo("legacy");
        assertThat(a.json().path("tags").path("n").asString()).isEqualTo("3");
        assertThat(a.json().path("timezone").asString()).isEqualTo("Asia/Tokyo");
        assertThat(a.json().path("app_version").asString()).isEqualTo("2.0");

        TestApi.Response b = register(app, "{\"platform\":\"android\",\"push_token\":\"" + otherToken + "\"}");
        assertThat(b.status()).isEqualTo(201);
        UUID derived = DeviceService.nameBased("airship:channel-123");
        assertThat(b.json().path("device_id").asString()).isEqualTo(derived.toString());
        assertThat(DeviceService.nameBased("airship:channel-123")).isEqualTo(derived);
        assertThat(derived.version()).isEqualTo(5);
        assertThat(b.json().path("timezone").isNull()).as("numeric offsets are ignored").isTrue();

        // the unmatched staged android row does not block an ios registration with another token, nor its own platform mismatch
        TestApi.Response c = register(app, "{\"platform\":\"ios\",\"push_token\":\"" + unmatchedToken + "\"}");
        assertThat(c.status()).isEqualTo(201);
        assertThat(c.json().path("migrated_from").isNull()).isTrue();

        // a staged UUID already used by another device never blocks: the device gets a fresh id
        TestApp other = newApp();
        String clash = TestTokens.apns();
        stage(other, "ios", clash, "onesignal", sourceUuid.toString(), null, null, null);
        TestApi.Response d = register(other, "{\"platform\":\"ios\",\"push_token\":\"" + clash + "\"}");
        assertThat(d.status()).isEqualTo(201);
        assertThat(d.json().path("device_id").asString()).isNotEqualTo(sourceUuid.toString());
        assertThat(d.json().path("migrated_from").path("provider").asString()).isEqualTo("onesignal");

        assertThat(jdbc.sql("select count(*) from migration_staged_devices where app_id = :app and claimed_at is not null")
                .param("app", app.appId()).query(Integer.class).single()).isEqualTo(2);
    }

    private void stage(TestApp app, String platform, String token, String provider, String sourceId, String user, String tags, String tz) {
        String identity = platform.equals("ios") ? token.toLowerCase() : token;
        jdbc.sql("""
                        insert into migration_staged_devices (app_id, platform, token_hash, source_provider, source_device_id,
                                                              external_user_id, tags, timezone)
                        values (:app, :platform, :hash, :provider, :source, :user, cast(:tags as jsonb), :tz)""")
                .param("app", app.appId()).param("platform", platform).param("hash", PushTokens.sha256(identity))
                .param("provider", provider).param("source", sourceId).param("user", user).param("tags", tags).param("tz", tz)
                .update();
    }

    @Test
    void readsAreScopedFilteredPaginatedAndNeverShowTokens() {
        TestApp app = newApp();
        TestApp other = newApp();
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String t = TestTokens.apns();
            tokens.add(t);
            register(app, "{\"platform\":\"ios\",\"push_token\":\"" + t + "\"}");
        }
        String androidId = register(app, "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"}")
                .json().path("device_id").asString();
        api.delete("/v1/devices/" + androidId, app.serverKey());
        String foreign = register(other, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}").json().path("device_id").asString();

        TestApi.Response all = api.get("/v1/devices", app.serverKey());
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().path("data")).hasSize(4);
        assertThat(all.json().path("pagination").path("has_more").asBoolean()).isFalse();
        tokens.forEach(t -> assertThat(all.body()).doesNotContain(t));
        assertThat(api.get("/v1/devices?platform=ios", app.serverKey()).json().path("data")).hasSize(3);
        assertThat(api.get("/v1/devices?enabled=false", app.serverKey()).json().path("data")).hasSize(1);
        assertThat(api.get("/v1/devices?platform=android&enabled=true", app.serverKey()).json().path("data")).isEmpty();
        TestApi.Response page1 = api.get("/v1/devices?limit=3&page=1", app.serverKey());
        assertThat(page1.json().path("data")).hasSize(3);
        assertThat(page1.json().path("pagination").path("has_more").asBoolean()).isTrue();
        TestApi.Response page2 = api.get("/v1/devices?limit=3&page=2", app.serverKey());
        assertThat(page2.json().path("data")).hasSize(1);
        assertThat(page2.json().path("pagination").path("has_more").asBoolean()).isFalse();

        assertThat(api.get("/v1/devices/" + androidId, app.serverKey()).json().path("platform").asString()).isEqualTo("android");
        assertError(api.get("/v1/devices/" + foreign, app.serverKey()), 404, "not_found");
        assertError(api.delete("/v1/devices/" + foreign, app.serverKey()), 404, "not_found");
        assertError(api.get("/v1/devices/not-a-uuid", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices?platform=windows", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices?enabled=yes", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices?limit=0", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices?limit=201", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices?page=abc", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/devices", app.publicKey()), 403, "forbidden");
        assertError(api.get("/v1/devices/" + androidId, app.publicKey()), 403, "forbidden");
        assertError(api.get("/v1/users/anyone", app.publicKey()), 403, "forbidden");
    }
}
