package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Issue 27's remaining gaps, over real HTTP: membership changes in the organisation's audit log
 * (each change one entry with its actor, target and fields; visible to owners and admins of that
 * organisation only), the journeys list's totals for a page of many journeys, the APNs certificate
 * (.p12) upload on the settings page, and the dashboard's HTML 404 for an unknown path.
 */
class DashboardOrgAuditTests extends DashboardTest {

    private static final Pattern INVITE_LINK = Pattern.compile("id=\"invite-link\">([^<]+)<");

    @Autowired
    JdbcClient jdbc;

    /** An org audit entry as stored. */
    record Stored(String actor, UUID memberId, String action, String targetType, String targetId, List<String> fields,
                  String details) {
    }

    private List<Stored> entries(UUID org) {
        return jdbc.sql("""
                        select actor, member_id, action, target_type, target_id, changed_fields, details::text as details
                        from org_audit_log where org_id = :org order by id""")
                .param("org", org)
                .query((rs, n) -> new Stored(rs.getString("actor"), rs.getObject("member_id", UUID.class), rs.getString("action"),
                        rs.getString("target_type"), rs.getString("target_id"),
                        List.of((String[]) rs.getArray("changed_fields").getArray()), rs.getString("details")))
                .list();
    }

    private UUID memberId(UUID org, String email) {
        return members.members(org).stream().filter(m -> m.email().equals(email)).map(Member::id).findFirst().orElseThrow();
    }

    @Test
    void eachMembershipChangeLeavesOneOrganisationEntryWithItsActorTargetAndFields() {
        TestApp app = newApp();
        UUID org = app.orgId();
        String ownerEmail = member(org, MemberRole.OWNER);
        UUID ownerId = memberId(org, ownerEmail);
        List<Stored> made = entries(org);
        assertThat(made).extracting(Stored::action).containsExactly("member.add", "member.activate");
        assertThat(made.get(0).actor()).as("added in-process, outside a request").isEqualTo("system");
        assertThat(made.get(0).targetId()).isEqualTo(ownerId.toString());
        assertThat(made.get(0).fields()).containsExactly("email", "role");
        assertThat(made.get(0).details()).contains("\"role\": \"owner\"", ownerEmail);
        assertThat(made.get(1).actor()).isEqualTo("member");
        assertThat(made.get(1).memberId()).as("the member chose their own password").isEqualTo(ownerId);
        assertThat(made.get(1).fields()).containsExactly("password");

        DashboardClient owner = signedIn(ownerEmail);
        // invite created
        HttpResponse<String> invited = owner.submit("/dashboard/members", "/dashboard/members/invites", Map.of("role", "admin"));
        assertThat(invited.statusCode()).isEqualTo(200);
        Matcher m = INVITE_LINK.matcher(invited.body());
        assertThat(m.find()).isTrue();
        String path = m.group(1).replaceFirst("^https?://[^/]+", "").replace("&amp;", "&");
        String token = path.substring(path.indexOf("token=") + 6);
        Stored invite = entries(org).get(2);
        assertThat(invite).extracting(Stored::actor, Stored::memberId, Stored::action, Stored::targetType, Stored::fields)
                .containsExactly("member", ownerId, "member.invite", "invite", List.of("role"));
        assertThat(invite.details()).contains("\"role\": \"admin\"");

        // invite accepted: the new member joined
        DashboardClient joiner = browser();
        String joinerEmail = "joiner-" + UUID.randomUUID().toString().substring(0, 8) + "@example.com";
        HttpResponse<String> form = joiner.get(path);
        assertThat(joiner.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(form.body()), "token", token,
                "email", joinerEmail, "password", PASSWORD, "password_confirmation", PASSWORD)).statusCode()).isEqualTo(302);
        UUID joinerId = memberId(org, joinerEmail);
        Stored joined = entries(org).get(3);
        assertThat(joined).extracting(Stored::actor, Stored::memberId, Stored::action, Stored::targetType, Stored::targetId)
                .containsExactly("member", joinerId, "member.join", "member", joinerId.toString());
        assertThat(joined.details()).contains(joinerEmail, "\"role\": \"admin\"", invite.targetId());

        // role changed: from and to
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + joinerId + "/role", Map.of("role", "member"))
                .statusCode()).isEqualTo(302);
        Stored changed = entries(org).get(4);
        assertThat(changed).extracting(Stored::actor, Stored::memberId, Stored::action, Stored::targetId, Stored::fields)
                .containsExactly("member", ownerId, "member.role_change", joinerId.toString(), List.of("role"));
        assertThat(changed.details()).contains("\"role_from\": \"admin\"", "\"role_to\": \"member\"");
        // the same role again is no change, and a refused change leaves no entry
        owner.submit("/dashboard/members", "/dashboard/members/" + joinerId + "/role", Map.of("role", "member"));
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + ownerId + "/role", Map.of("role", "admin"))
                .statusCode()).as("the last owner").isEqualTo(409);
        assertThat(entries(org)).hasSize(5);

        // removed
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + joinerId + "/remove", Map.of()).statusCode()).isEqualTo(302);
        List<Stored> all = entries(org);
        assertThat(all).hasSize(6);
        assertThat(all.get(5)).extracting(Stored::actor, Stored::memberId, Stored::action, Stored::targetId)
                .containsExactly("member", ownerId, "member.remove", joinerId.toString());
        assertThat(all.get(5).details()).contains(joinerEmail, "\"role\": \"member\"");
        assertThat(all).as("never a token or a password").allSatisfy(e ->
                assertThat(e.details() + e.fields()).doesNotContain(token, PASSWORD, "{bcrypt}"));
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and action like 'member.%'")
                .param("app", app.appId()).query(Integer.class).single()).as("not an app's entries").isZero();

        // the owner's page shows them, newest first, in words; the removed member by their address
        HttpResponse<String> page = owner.get("/dashboard/members/audit");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("id=\"org-audit\"", "role admin → member", "data-action=\"member.remove\"",
                "data-action=\"member.join\"", "data-action=\"member.invite\"", joinerEmail)
                .doesNotContain(token);
        assertThat(page.body().indexOf("member.remove")).isLessThan(page.body().indexOf("member.join"));
        assertThat(owner.get("/dashboard/members").body()).contains("id=\"org-audit-link\"");
        // append-only
        assertThat(jdbc.sql("select count(*) from org_audit_log where org_id = :org").param("org", org).query(Integer.class).single())
                .isEqualTo(6);
        assertThatThrownBy(() -> jdbc.sql("delete from org_audit_log where org_id = :org")
                .param("org", org).update()).hasMessageContaining("append-only");
    }

    @Test
    void onlyOwnersAndAdminsOfTheOrganisationSeeItsLog() {
        TestApp app = newApp();
        String ownerEmail = member(app.orgId(), MemberRole.OWNER);
        String plainEmail = member(app.orgId(), MemberRole.MEMBER);
        DashboardClient owner = signedIn(ownerEmail);
        assertThat(owner.submit("/dashboard/members", "/dashboard/members/" + memberId(app.orgId(), plainEmail) + "/role",
                Map.of("role", "member")).statusCode()).isEqualTo(302);

        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        HttpResponse<String> seen = admin.get("/dashboard/members/audit");
        assertThat(seen.statusCode()).isEqualTo(200);
        assertThat(seen.body()).contains(plainEmail, "data-action=\"member.add\"");

        DashboardClient plain = signedIn(plainEmail);
        HttpResponse<String> refused = plain.get("/dashboard/members/audit");
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).doesNotContain(ownerEmail, "member.add");
        assertThat(plain.get("/dashboard/members").body()).doesNotContain("org-audit-link");

        TestApp elsewhere = newApp();
        DashboardClient stranger = signedIn(elsewhere, MemberRole.OWNER);
        HttpResponse<String> theirs = stranger.get("/dashboard/members/audit");
        assertThat(theirs.statusCode()).isEqualTo(200);
        assertThat(theirs.body()).doesNotContain(plainEmail, ownerEmail);
    }

    // ---- journeys list --------------------------------------------------------------------------

    @Test
    void theJourneysListShowsEachJourneysTotalsForAPageOfManyJourneys() {
        TestApp app = newApp();
        int count = 30;
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            TestApi.Response created = api.post("/v1/journeys", app.serverKey(), """
                    {"name":"Journey %d","status":"draft","reentry_limit":1,"definition":{"trigger":{"type":"custom_event","event_name":"e%d"},
                     "start":"goal","nodes":{"goal":{"type":"goal","name":"done","next":"done"},"done":{"type":"exit"}}}}"""
                    .formatted(i, i));
            assertThat(created.status()).as(created.toString()).isEqualTo(201);
            ids.add(created.json().path("journey_id").asString());
        }
        // journey i: i active, i % 3 waiting, i % 5 completed, i % 2 failed executions; completed ones reached the goal
        Instant now = Instant.now();
        for (int i = 0; i < count; i++) {
            UUID journey = UUID.fromString(ids.get(i));
            insertExecutions(app, journey, "active", i, now);
            insertExecutions(app, journey, "waiting", i % 3, now);
            insertExecutions(app, journey, "completed", i % 5, now);
            insertExecutions(app, journey, "failed", i % 2, now);
            jdbc.sql("""
                            insert into journey_goals (execution_id, node_id, app_id, journey_id, reached_at)
                            select id, 'goal', app_id, journey_id, now() from journey_executions
                            where journey_id = :j and status = 'completed'""")
                    .param("j", journey).update();
        }

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        String base = "/dashboard/apps/" + app.appId() + "/journeys";
        HttpResponse<String> first = member.get(base);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.body().split("data-id=\"", -1)).as("a full page: 25 journeys").hasSize(26);
        assertThat(first.body()).contains(base + "?page=2");
        HttpResponse<String> second = member.get(base + "?page=2");
        assertThat(second.statusCode()).isEqualTo(200);
        String both = first.body() + second.body();
        for (int i = 0; i < count; i++) {
            long entered = i + i % 3 + i % 5 + i % 2;
            assertThat(both).as("journey %d", i).containsPattern("data-id=\"" + ids.get(i) + "\">(?s)(?:(?!</tr>).)*?"
                    + "<td class=\"num entered\">" + entered + "</td>\\s*<td class=\"num\">" + (i + i % 3) + "</td>\\s*"
                    + "<td class=\"num\">" + (i % 5) + "</td>\\s*<td class=\"num\">" + (i % 5) + "</td>");
        }
    }

    private void insertExecutions(TestApp app, UUID journey, String status, int n, Instant now) {
        if (n == 0) return;
        jdbc.sql("""
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, entered_at, updated_at)
                        select gen_random_uuid(), :app, :j, 1, gen_random_uuid(), :status, :now, :now from generate_series(1, :n)""")
                .param("app", app.appId()).param("j", journey).param("status", status)
                .param("now", java.sql.Timestamp.from(now)).param("n", n).update();
    }

    // ---- APNs certificate upload ----------------------------------------------------------------

    @Test
    void anAdminUploadsAnApnsCertificateWhosePasswordIsWriteOnly() throws Exception {
        TestApp app = newApp();
        String settings = "/dashboard/apps/" + app.appId() + "/settings";
        String upload = settings + "/apns-certificate";
        String secret = "p12-secret-" + UUID.randomUUID();
        byte[] p12 = TestCertificates.shared().clientPkcs12("CN=Apple Push Services: dev.pushservice.test", secret,
                Instant.now().plus(Duration.ofDays(90)));

        DashboardClient plain = signedIn(app, MemberRole.MEMBER);
        assertThat(plain.get(settings).body()).doesNotContain("id=\"apns-certificate\"");
        assertThat(plain.upload(settings, upload, Map.of("bundle_id", "dev.pushservice.test", "environment", "sandbox",
                "password", secret), "certificate", "push.p12", p12).statusCode()).isEqualTo(403);

        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        HttpResponse<String> form = admin.get(settings);
        assertThat(form.body()).contains("id=\"apns-certificate\"", "enctype=\"multipart/form-data\"", "name=\"certificate\"",
                "type=\"password\" name=\"password\"");

        HttpResponse<String> wrong = admin.upload(settings, upload, Map.of("bundle_id", "dev.pushservice.test",
                "environment", "sandbox", "password", "not-it"), "certificate", "push.p12", p12);
        assertThat(wrong.statusCode()).isEqualTo(422);
        assertThat(wrong.body()).contains("does not open the PKCS#12 file").doesNotContain("not-it");
        HttpResponse<String> missing = admin.upload(settings, upload, Map.of("bundle_id", "dev.pushservice.test",
                "environment", "sandbox"), "certificate", "", new byte[0]);
        assertThat(missing.statusCode()).isEqualTo(422);
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("apns").isNull()).as("nothing changed").isTrue();

        HttpResponse<String> saved = admin.upload(settings, upload, Map.of("bundle_id", "dev.pushservice.test",
                "environment", "sandbox", "password", secret), "certificate", "push.p12", p12);
        assertThat(saved.statusCode()).as(saved.body()).isEqualTo(200);
        assertThat(saved.body()).contains("APNs certificate saved.", "Apple Push Services").doesNotContain(secret);
        JsonNode apns = api.get("/v1/app/settings", app.serverKey()).json().path("apns");
        assertThat(apns.path("auth").asString()).isEqualTo("certificate");
        assertThat(apns.path("environment").asString()).isEqualTo("sandbox");
        assertThat(admin.get(settings).body()).doesNotContain(secret);
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and action = 'credentials.update' and actor = 'member'")
                .param("app", app.appId()).query(Integer.class).single()).isEqualTo(1);
    }

    // ---- unknown paths ----------------------------------------------------------------------------

    @Test
    void anUnknownDashboardPathIsTheDashboards404PageAndAnUnknownApiPathStaysJson() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.MEMBER);
        DashboardClient browser = signedIn(email);
        for (String path : List.of("/dashboard/nowhere", "/dashboard/apps/" + app.appId() + "/nowhere/at/all")) {
            HttpResponse<String> page = browser.get(path);
            assertThat(page.statusCode()).as(path).isEqualTo(404);
            assertThat(page.headers().firstValue("Content-Type").orElseThrow()).as(path).startsWith("text/html");
            assertThat(page.body()).as(path).contains("<h1>Not found</h1>", "There is no page at this address.",
                    "dashboard.css", email, "/dashboard/sign-out").doesNotContain("\"error\"");
        }
        // a visitor who is not signed in: an unknown asset (open to visitors) is the page without anyone's header
        HttpResponse<String> asset = browser().get("/dashboard/assets/nothing-here.css");
        assertThat(asset.statusCode()).isEqualTo(404);
        assertThat(asset.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/html");
        assertThat(asset.body()).contains("<h1>Not found</h1>").doesNotContain("/dashboard/sign-out");
        // any other unknown path asks a visitor to sign in first (it does not say which pages exist)
        assertThat(browser().get("/dashboard/nowhere").statusCode()).isEqualTo(302);

        TestApi.Response api404 = api.get("/v1/nowhere", app.serverKey());
        assertThat(api404.status()).isEqualTo(404);
        assertThat(api404.header("Content-Type").orElseThrow()).startsWith("application/json");
        assertThat(api404.json().path("error").path("code").asString()).isEqualTo("not_found");
    }
}
