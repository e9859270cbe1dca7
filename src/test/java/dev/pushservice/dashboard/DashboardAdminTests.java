package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import com.eatthepath.pushy.apns.server.RejectedNotificationException;
import com.eatthepath.pushy.apns.server.RejectionReason;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;

/**
 * The dashboard's administration pages over real HTTP: API keys (create shown once, revoke, rotate),
 * app settings and write-only provider credentials with the credentials check (against the local
 * APNs peer and FCM server the delivery tests use), and owners changing roles and removing members.
 * Every refusal is checked to have changed nothing.
 */
@ExtendWith(OutputCaptureExtension.class)
class DashboardAdminTests extends DashboardTest {

    private static final Pattern RAW_SERVER_KEY = Pattern.compile("ps_live_[A-Za-z0-9_-]{43}");
    private static final ApnsTestPeer APNS;
    private static final LocalFcmServer FCM;
    private static final Path CA;
    private static volatile PushNotificationHandler apnsAnswer = (headers, payload) -> { };

    static {
        try {
            APNS = ApnsTestPeer.startAcceptingSilently();
            APNS.answer((PushNotificationHandler) (headers, payload) -> apnsAnswer.handlePushNotification(headers, payload));
            CA = ApnsTestPeer.writeCa(Files.createTempDirectory("dashboard-admin-tests"));
            FCM = new LocalFcmServer(0).start();
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void peers(DynamicPropertyRegistry registry) {
        registry.add("push.apns.host", () -> "localhost");
        registry.add("push.apns.port", APNS::port);
        registry.add("push.apns.trusted-ca-file", CA::toString);
        registry.add("push.fcm.base-url", () -> FCM.baseUrl().toString());
    }

    @Autowired
    JdbcClient jdbc;

    @AfterEach
    void acceptAgain() {
        apnsAnswer = (headers, payload) -> { };
    }

    // ---- API keys ---------------------------------------------------------------------------------

    @Test
    void anAdminCreatesAKeyShownOnlyInThatResponseThatWorksUntilRevoked(CapturedOutput output) {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.ADMIN);
        DashboardClient admin = signedIn(email);
        String keys = "/dashboard/apps/" + app.appId() + "/keys";

        HttpResponse<String> created = admin.submit(keys, keys, Map.of("kind", "server", "name", "dashboard made",
                "scopes", "notifications:read"));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(200);
        String raw = rawKey(created.body());
        assertThat(created.headers().firstValue("Cache-Control").orElseThrow()).contains("no-store");

        TestApi.Response call = api.get("/v1/app/settings", raw);
        assertThat(call.status()).as(call.toString()).isEqualTo(200);
        assertThat(api.post("/v1/notifications", raw, "{}").status()).as("only the scope asked for").isEqualTo(403);

        Tenants.Key key = keyNamed(app, "dashboard made");
        assertThat(key.scopes()).containsExactly("notifications:read");
        HttpResponse<String> again = admin.get(keys);
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).contains("dashboard made", key.hint()).doesNotContain(raw);
        assertThat(RAW_SERVER_KEY.matcher(again.body()).find()).as("no raw key on a later view").isFalse();
        assertThat(auditActors(app, "key.create", key.id())).containsExactly("member " + memberId(app, email));

        HttpResponse<String> revoked = admin.submit(keys, keys + "/" + key.id() + "/revoke", Map.of());
        assertThat(revoked.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(revoked)).startsWith(keys + "?revoked=");
        assertThat(api.get("/v1/app/settings", raw).status()).isEqualTo(401);
        assertThat(tenants.key(key.id()).revokedAt()).isNotNull();
        assertThat(admin.get(keys).body()).contains("revoked");
        assertThat(auditActors(app, "key.revoke", key.id())).containsExactly("member " + memberId(app, email));
        assertThat(output.getAll()).as("the raw key is never logged").doesNotContain(raw);
    }

    @Test
    void rotationIssuesAReplacementOnceAndEndsTheOldKeyAtOnceOrAfterTheGrace() {
        TestApp app = newApp();
        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        String keys = "/dashboard/apps/" + app.appId() + "/keys";
        String first = rawKey(admin.submit(keys, keys, Map.of("kind", "server", "name", "to rotate")).body());
        Tenants.Key old = keyNamed(app, "to rotate");

        HttpResponse<String> rotated = admin.submit(keys, keys + "/" + old.id() + "/rotate", Map.of("grace", "none"));
        assertThat(rotated.statusCode()).as(rotated.body()).isEqualTo(200);
        String second = rawKey(rotated.body());
        assertThat(second).isNotEqualTo(first);
        assertThat(rotated.body()).contains("The old key is revoked as of now");
        assertThat(api.get("/v1/app/settings", first).status()).isEqualTo(401);
        assertThat(api.get("/v1/app/settings", second).status()).isEqualTo(200);
        Tenants.Key replacement = tenants.keys(app.appId()).stream().filter(k -> k.name().equals("to rotate") && k.revokedAt() == null)
                .findFirst().orElseThrow();
        assertThat(replacement.scopes()).isEqualTo(old.scopes());

        HttpResponse<String> withGrace = admin.submit(keys, keys + "/" + replacement.id() + "/rotate", Map.of("grace", "1h"));
        assertThat(withGrace.statusCode()).isEqualTo(200);
        String third = rawKey(withGrace.body());
        assertThat(withGrace.body()).contains("keeps working until");
        assertThat(api.get("/v1/app/settings", second).status()).as("in its grace").isEqualTo(200);
        assertThat(api.get("/v1/app/settings", third).status()).isEqualTo(200);

        HttpResponse<String> revokedAgain = admin.submit(keys, keys + "/" + old.id() + "/rotate", Map.of("grace", "none"));
        assertThat(revokedAgain.statusCode()).as("a revoked key cannot be rotated").isEqualTo(409);
        assertThat(RAW_SERVER_KEY.matcher(revokedAgain.body()).find()).isFalse();
        HttpResponse<String> badGrace = admin.submit(keys, keys + "/" + replacement.id() + "/rotate", Map.of("grace", "forever"));
        assertThat(badGrace.statusCode()).isEqualTo(422);
        HttpResponse<String> badName = admin.submit(keys, keys, Map.of("kind", "server", "name", "x".repeat(1_000)));
        assertThat(badName.statusCode()).isEqualTo(422);
        assertThat(badName.body()).contains("key name");
        HttpResponse<String> badKind = admin.submit(keys, keys, Map.of("kind", "secret"));
        assertThat(badKind.statusCode()).isEqualTo(422);
        HttpResponse<String> badScope = admin.submit(keys, keys, Map.of("kind", "server", "scopes", "everything"));
        assertThat(badScope.statusCode()).isEqualTo(422);
        assertThat(RAW_SERVER_KEY.matcher(badName.body() + badKind.body() + badScope.body()).find()).isFalse();
        assertThat(tenants.keys(app.appId())).hasSize(5);
    }

    @Test
    void aMemberSeesKeysAndSettingsButEveryChangeIsRefusedAndChangesNothing() {
        TestApp app = newApp();
        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        String keys = "/dashboard/apps/" + app.appId() + "/keys";
        String settings = "/dashboard/apps/" + app.appId() + "/settings";
        Tenants.Key server = keyNamed(app, "server");

        HttpResponse<String> list = member.get(keys);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains(server.hint()).doesNotContain("id=\"create-key\"", "/revoke");
        assertThat(member.get(settings).body()).doesNotContain("Check credentials", "name=\"signing_key\"");

        List<HttpResponse<String>> refused = List.of(
                member.submit(keys, keys, Map.of("kind", "server", "name", "not allowed")),
                member.submit(keys, keys + "/" + server.id() + "/revoke", Map.of()),
                member.submit(keys, keys + "/" + server.id() + "/rotate", Map.of("grace", "none")),
                member.submit(settings, settings, Map.of("name", "renamed", "timezone", "UTC")),
                member.submit(settings, settings + "/json", Map.of("body", "{\"name\":\"renamed\"}")),
                member.submit(settings, settings + "/fcm/remove", Map.of()),
                member.submit(settings, settings + "/check", Map.of()));
        assertThat(refused).allSatisfy(r -> assertThat(r.statusCode()).as(r.body()).isEqualTo(403));
        assertThat(tenants.keys(app.appId())).hasSize(2).allSatisfy(k -> assertThat(k.revokedAt()).isNull());
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("name").asString()).isEqualTo("test app");
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and actor = 'member'")
                .param("app", app.appId()).query(Long.class).single()).isZero();
    }

    @Test
    void anotherOrganisationsAppAndKeysAreNotFound() {
        TestApp mine = newApp();
        TestApp theirs = newApp();
        DashboardClient owner = signedIn(mine, MemberRole.OWNER);
        Tenants.Key theirKey = keyNamed(theirs, "server");
        String myKeys = "/dashboard/apps/" + mine.appId() + "/keys";

        assertThat(owner.get("/dashboard/apps/" + theirs.appId() + "/keys").statusCode()).isEqualTo(404);
        assertThat(owner.get("/dashboard/apps/" + theirs.appId() + "/settings").statusCode()).isEqualTo(404);
        assertThat(owner.submit(myKeys, "/dashboard/apps/" + theirs.appId() + "/keys/" + theirKey.id() + "/revoke", Map.of())
                .statusCode()).isEqualTo(404);
        assertThat(owner.submit(myKeys, myKeys + "/" + theirKey.id() + "/revoke", Map.of()).statusCode())
                .as("their key under my app").isEqualTo(404);
        assertThat(owner.submit(myKeys, myKeys + "/" + theirKey.id() + "/rotate", Map.of()).statusCode()).isEqualTo(404);
        assertThat(owner.submit(myKeys, "/dashboard/apps/" + theirs.appId() + "/keys", Map.of("kind", "server")).statusCode())
                .isEqualTo(404);
        assertThat(owner.submit(myKeys, "/dashboard/apps/" + theirs.appId() + "/settings", Map.of("name", "mine now"))
                .statusCode()).isEqualTo(404);
        assertThat(owner.submit(myKeys, myKeys + "/not-a-key/revoke", Map.of()).statusCode()).isEqualTo(404);
        assertThat(tenants.key(theirKey.id()).revokedAt()).isNull();
        assertThat(tenants.keys(theirs.appId())).hasSize(2);
        assertThat(api.get("/v1/app/settings", theirs.serverKey()).json().path("name").asString()).isEqualTo("test app");
    }

    // ---- settings and credentials -----------------------------------------------------------------

    @Test
    void aBadSettingsValueIsShownOnThePageWith422AndChangesNothing() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.ADMIN);
        DashboardClient admin = signedIn(email);
        String settings = "/dashboard/apps/" + app.appId() + "/settings";

        HttpResponse<String> badZone = admin.submit(settings, settings, Map.of("name", "renamed", "timezone", "Mars/Olympus_Mons"));
        assertThat(badZone.statusCode()).isEqualTo(422);
        assertThat(badZone.body()).contains("timezone:").contains("value=\"Mars/Olympus_Mons\"");
        HttpResponse<String> badThrottle = admin.submit(settings, settings, Map.of("throttle_per_minute", "lots"));
        assertThat(badThrottle.statusCode()).isEqualTo(422);
        assertThat(badThrottle.body()).contains("throttle_per_minute:");
        HttpResponse<String> badQuiet = admin.submit(settings, settings, Map.of("quiet_start", "25:00", "quiet_end", "07:00"));
        assertThat(badQuiet.statusCode()).isEqualTo(422);
        HttpResponse<String> badJson = admin.submit(settings, settings + "/json", Map.of("body", "{\"frequency_cap\": {\"maximum\": 3}"));
        assertThat(badJson.statusCode()).isEqualTo(422);
        HttpResponse<String> badCap = admin.submit(settings, settings + "/json", Map.of("body", "{\"frequency_cap\": {\"nonsense\": 3}}"));
        assertThat(badCap.statusCode()).isEqualTo(422);
        assertThat(badCap.body()).contains("frequency_cap");

        JsonNode unchanged = api.get("/v1/app/settings", app.serverKey()).json();
        assertThat(unchanged.path("name").asString()).isEqualTo("test app");
        assertThat(unchanged.path("timezone").asString()).isEqualTo("UTC");
        assertThat(unchanged.path("throttle_per_minute").isNull()).isTrue();
        assertThat(unchanged.path("quiet_hours").isNull()).isTrue();
        assertThat(auditCount(app, "settings.update")).isZero();

        HttpResponse<String> good = admin.submit(settings, settings, Map.of("name", "renamed", "timezone", "Europe/Berlin",
                "quiet_start", "22:00", "quiet_end", "07:00", "throttle_per_minute", "600"));
        assertThat(good.statusCode()).as(good.body()).isEqualTo(200);
        assertThat(good.body()).contains("Settings saved.");
        JsonNode changed = api.get("/v1/app/settings", app.serverKey()).json();
        assertThat(changed.path("name").asString()).isEqualTo("renamed");
        assertThat(changed.path("timezone").asString()).isEqualTo("Europe/Berlin");
        assertThat(changed.path("quiet_hours").path("start").asString()).isEqualTo("22:00");
        assertThat(changed.path("throttle_per_minute").asInt()).isEqualTo(600);
        assertThat(jdbc.sql("""
                        select actor || ' ' || member_id || ' ' || array_to_string(changed_fields, ';') from audit_log
                        where app_id = :app and action = 'settings.update'""")
                .param("app", app.appId()).query(String.class).list())
                .containsExactly("member " + memberId(app, email) + " name;quiet_hours;throttle_per_minute;timezone");
    }

    @Test
    void credentialsAreWriteOnlyAndTheCheckShowsEachProvidersVerdict(CapturedOutput output) throws Exception {
        TestApp app = newApp();
        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        String settings = "/dashboard/apps/" + app.appId() + "/settings";
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        String pemBody = pem.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "").strip().split("\\s+")[0];
        LocalServiceAccount account = LocalServiceAccount.registeredWith(FCM, "dashboard-" + app.appId());
        String accountJson = account.json(FCM.tokenUri());
        String fcmKeyBody = account.privateKeyPem().replace("-----BEGIN PRIVATE KEY-----", "").strip().split("\\s+")[0];

        HttpResponse<String> badKey = admin.submit(settings, settings + "/apns", Map.of("bundle_id", "dev.pushservice.test",
                "environment", "sandbox", "key_id", "LOCAL12345", "team_id", "LOCALTEAM1",
                "signing_key", pem.replace("-----END PRIVATE KEY-----", "")));
        assertThat(badKey.statusCode()).isEqualTo(422);
        assertThat(badKey.body()).contains("apns.token.signing_key").doesNotContain(pemBody).contains("value=\"LOCAL12345\"");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("apns").isNull()).isTrue();

        HttpResponse<String> apns = admin.submit(settings, settings + "/apns", Map.of("bundle_id", "dev.pushservice.test",
                "environment", "sandbox", "key_id", "LOCAL12345", "team_id", "LOCALTEAM1", "signing_key", pem));
        assertThat(apns.statusCode()).as(apns.body()).isEqualTo(200);
        HttpResponse<String> fcm = admin.submit(settings, settings + "/fcm", Map.of("service_account", accountJson));
        assertThat(fcm.statusCode()).as(fcm.body()).isEqualTo(200);

        HttpResponse<String> page = admin.get(settings);
        assertThat(page.body()).contains("LOCAL12345", "LOCALTEAM1", "dev.pushservice.test", account.projectId(), account.clientEmail())
                .doesNotContain(pemBody, fcmKeyBody, "PRIVATE KEY", "private_key");
        assertThat(auditCount(app, "credentials.update")).isEqualTo(2);

        HttpResponse<String> ok = admin.submit(settings, settings + "/check", Map.of());
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.body()).contains("data-provider=\"apns\" data-status=\"ok\"", "data-provider=\"fcm\" data-status=\"ok\"",
                "data-provider=\"webpush\" data-status=\"ok\"");

        apnsAnswer = (headers, payload) -> {
            throw new RejectedNotificationException(RejectionReason.INVALID_PROVIDER_TOKEN);
        };
        HttpResponse<String> refused = admin.submit(settings, settings + "/check", Map.of());
        assertThat(refused.body()).contains("data-provider=\"apns\" data-status=\"invalid\"", "InvalidProviderToken")
                .doesNotContain(pemBody, "PRIVATE KEY");
        assertThat(admin.get(settings).body()).as("the invalid mark, with the provider's reason, as the settings read shows it")
                .contains("Refused by APNs since", "InvalidProviderToken");

        HttpResponse<String> removed = admin.submit(settings, settings + "/apns/remove", Map.of());
        assertThat(removed.statusCode()).isEqualTo(200);
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("apns").isNull()).isTrue();
        assertThat(admin.submit(settings, settings + "/check", Map.of()).body())
                .contains("data-provider=\"apns\" data-status=\"not_configured\"", "data-provider=\"fcm\" data-status=\"ok\"");
        assertThat(admin.submit(settings, settings + "/webpush/remove", Map.of()).statusCode()).isEqualTo(404);
        assertThat(output.getAll()).as("no secret is logged").doesNotContain(pemBody, fcmKeyBody);
    }

    // ---- members ----------------------------------------------------------------------------------

    @Test
    void ownersChangeRolesAndTheLastOwnerCannotBeDemoted() {
        TestApp app = newApp();
        String ownerEmail = member(app.orgId(), MemberRole.OWNER);
        String otherEmail = member(app.orgId(), MemberRole.MEMBER);
        DashboardClient owner = signedIn(ownerEmail);
        DashboardClient other = signedIn(otherEmail);
        UUID ownerId = memberId(app, ownerEmail);
        UUID otherId = memberId(app, otherEmail);
        String keys = "/dashboard/apps/" + app.appId() + "/keys";

        assertThat(owner.get("/dashboard/members").body()).contains("/dashboard/members/" + otherId + "/role");
        assertThat(other.get("/dashboard/members").body()).contains(ownerEmail).doesNotContain("/role\"", "/remove\"");
        assertThat(other.submit(keys, keys, Map.of("kind", "server")).statusCode()).isEqualTo(403);

        HttpResponse<String> promoted = owner.submit("/dashboard/members", "/dashboard/members/" + otherId + "/role", Map.of("role", "admin"));
        assertThat(promoted.statusCode()).isEqualTo(302);
        assertThat(members.member(otherId).orElseThrow().role()).isEqualTo(MemberRole.ADMIN);
        assertThat(other.submit(keys, keys, Map.of("kind", "server", "name", "after promotion")).statusCode())
                .as("the stored role counts, not the session's").isEqualTo(200);
        assertThat(other.submit("/dashboard/members", "/dashboard/members/" + ownerId + "/role", Map.of("role", "member"))
                .statusCode()).as("an admin manages no members").isEqualTo(403);

        HttpResponse<String> lastOwner = owner.submit("/dashboard/members", "/dashboard/members/" + ownerId + "/role", Map.of("role", "admin"));
        assertThat(lastOwner.statusCode()).isEqualTo(409);
        assertThat(lastOwner.body()).contains("last owner");
        assertThat(members.member(ownerId).orElseThrow().role()).isEqualTo(MemberRole.OWNER);
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + ownerId + "/remove", Map.of()).statusCode())
                .isEqualTo(409);
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + otherId + "/role", Map.of("role", "king"))
                .statusCode()).isEqualTo(422);

        owner.submit("/dashboard/members", "/dashboard/members/" + otherId + "/role", Map.of("role", "owner"));
        HttpResponse<String> stepDown = owner.submit("/dashboard/members", "/dashboard/members/" + ownerId + "/role", Map.of("role", "member"));
        assertThat(stepDown.statusCode()).as("another owner remains").isEqualTo(302);
        assertThat(members.member(ownerId).orElseThrow().role()).isEqualTo(MemberRole.MEMBER);
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + otherId + "/role", Map.of("role", "member"))
                .statusCode()).as("no longer an owner").isEqualTo(403);
        assertThat(members.member(otherId).orElseThrow().role()).isEqualTo(MemberRole.OWNER);

        TestApp elsewhere = newApp();
        UUID stranger = memberId(elsewhere, member(elsewhere.orgId(), MemberRole.MEMBER));
        assertThat(other.submit("/dashboard/members", "/dashboard/members/" + stranger + "/role", Map.of("role", "owner"))
                .statusCode()).as("another organisation's member").isEqualTo(404);
        assertThat(other.submit("/dashboard/members", "/dashboard/members/" + stranger + "/remove", Map.of()).statusCode())
                .isEqualTo(404);
        assertThat(members.member(stranger).orElseThrow().role()).isEqualTo(MemberRole.MEMBER);
    }

    @Test
    void aRemovedMembersSessionsStopWorkingAtOnce() {
        TestApp app = newApp();
        String ownerEmail = member(app.orgId(), MemberRole.OWNER);
        String leaverEmail = member(app.orgId(), MemberRole.ADMIN);
        DashboardClient owner = signedIn(ownerEmail);
        DashboardClient leaver = signedIn(leaverEmail);
        DashboardClient leaverOnAnotherDevice = signedIn(leaverEmail);
        UUID leaverId = memberId(app, leaverEmail);
        String keysPage = "/dashboard/apps/" + app.appId() + "/keys";
        assertThat(leaver.get(keysPage).statusCode()).isEqualTo(200);
        String csrf = DashboardClient.csrf(leaver.get(keysPage).body());

        HttpResponse<String> removed = owner.submit("/dashboard/members", "/dashboard/members/" + leaverId + "/remove", Map.of());
        assertThat(removed.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(removed)).isEqualTo("/dashboard/members?removed");

        assertThat(members.member(leaverId)).isEmpty();
        for (DashboardClient gone : List.of(leaver, leaverOnAnotherDevice)) {
            HttpResponse<String> page = gone.get(keysPage);
            assertThat(page.statusCode()).isEqualTo(302);
            assertThat(DashboardClient.location(page)).isEqualTo("/dashboard/sign-in");
        }
        HttpResponse<String> late = leaver.post(keysPage, Map.of("kind", "server", "_csrf", csrf));
        assertThat(late.statusCode()).isIn(302, 403);
        assertThat(tenants.keys(app.appId())).hasSize(2);
        assertThat(leaver.signIn(leaverEmail, PASSWORD).headers().firstValue("Location").orElseThrow()).contains("error");
        assertThat(owner.get("/dashboard/members").body()).doesNotContain(leaverEmail).contains(ownerEmail);
        assertThat(owner.get(keysPage).statusCode()).as("the owner's own session is untouched").isEqualTo(200);
    }

    // ---- helpers ----------------------------------------------------------------------------------

    private static String rawKey(String html) {
        Matcher m = RAW_SERVER_KEY.matcher(html);
        assertThat(m.find()).as("a raw key in:\n" + html).isTrue();
        String raw = m.group();
        assertThat(m.find()).as("the raw key once").isFalse();
        return raw;
    }

    private Tenants.Key keyNamed(TestApp app, String name) {
        return tenants.keys(app.appId()).stream().filter(k -> k.name().equals(name)).findFirst().orElseThrow();
    }

    private UUID memberId(TestApp app, String email) {
        return members.members(app.orgId()).stream().filter(m -> m.email().equals(email)).map(Member::id).findFirst().orElseThrow();
    }

    private List<String> auditActors(TestApp app, String action, UUID target) {
        return jdbc.sql("select actor || ' ' || coalesce(member_id::text, '-') from audit_log where app_id = :app and action = :action and target_id = :target")
                .param("app", app.appId()).param("action", action).param("target", target.toString()).query(String.class).list();
    }

    private long auditCount(TestApp app, String action) {
        return jdbc.sql("select count(*) from audit_log where app_id = :app and action = :action")
                .param("app", app.appId()).param("action", action).query(Long.class).single();
    }
}
