package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.PushServiceApplication;
import dev.pushservice.members.MemberLink;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The dashboard as a browser uses it, over real HTTP with a cookie jar: sign-in and its cookie,
 * failures and lock-out, CSRF, sign-out, sessions in PostgreSQL shared by instances, the CLI's
 * first owner, invites, the organisation check, and the wall between the dashboard and the API.
 */
class DashboardTests extends DashboardTest {

    @Autowired
    JdbcClient jdbc;

    @TempDir
    Path cliDataDir;

    @Test
    void signInSetsAnHttpOnlyLaxSessionCookieForTheDashboardOnlyAndPagesCarryAStrictPolicy() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.MEMBER);
        DashboardClient browser = browser();

        HttpResponse<String> unsigned = browser.get("/dashboard");
        assertThat(unsigned.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(unsigned)).isEqualTo("/dashboard/sign-in");

        HttpResponse<String> page = browser.get("/dashboard/sign-in");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.headers().firstValue("Content-Security-Policy")).contains(DashboardSecurity.CONTENT_SECURITY_POLICY);
        assertThat(page.headers().firstValue("Content-Security-Policy").orElseThrow()).contains("default-src 'none'")
                .doesNotContain("unsafe-inline");
        assertThat(page.headers().firstValue("X-Frame-Options")).contains("DENY");
        assertThat(page.body()).contains("<form").doesNotContainIgnoringCase("<script").doesNotContain("style=");

        HttpResponse<String> signIn = browser.post("/dashboard/sign-in",
                Map.of("email", email.toUpperCase(), "password", PASSWORD, "_csrf", DashboardClient.csrf(page.body())));
        assertThat(signIn.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(signIn)).isEqualTo("/dashboard");
        String cookie = signIn.headers().allValues("Set-Cookie").stream()
                .filter(c -> c.startsWith(DashboardSecurity.COOKIE + "=")).findFirst().orElseThrow();
        assertThat(cookie).contains("Path=/dashboard", "HttpOnly", "SameSite=Lax")
                .as("plain HTTP here: Secure only behind TLS").doesNotContain("Secure");

        HttpResponse<String> home = browser.get("/dashboard");
        assertThat(home.statusCode()).isEqualTo(200);
        assertThat(home.body()).contains(tenants.organisation(app.orgId()).name(), "test app", email);
        HttpResponse<String> css = browser.get("/dashboard/assets/dashboard.css");
        assertThat(css.statusCode()).isEqualTo(200);
        assertThat(css.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/css");
    }

    @Test
    void aWrongPasswordIsAnErrorOnThePageAndRepeatedFailuresLockTheAddress() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.OWNER);
        DashboardClient browser = browser();

        HttpResponse<String> wrong = browser.signIn(email, "not the password");
        assertThat(DashboardClient.location(wrong)).isEqualTo("/dashboard/sign-in?error");
        assertThat(browser.get("/dashboard/sign-in?error").body()).contains("Wrong e-mail address or password.");
        assertThat(browser.get("/dashboard").statusCode()).as("not signed in").isEqualTo(302);

        // five failures in a row (PUSH_DASHBOARD_MAX_FAILURES): the fifth locks the address
        for (int i = 2; i <= 4; i++) {
            assertThat(DashboardClient.location(browser.signIn(email, "wrong " + i))).isEqualTo("/dashboard/sign-in?error");
        }
        assertThat(DashboardClient.location(browser.signIn(email, "wrong 5"))).isEqualTo("/dashboard/sign-in?locked");
        // now even the right password is refused, from any browser (the count is in the database)
        DashboardClient other = browser();
        HttpResponse<String> locked = other.signIn(email, PASSWORD);
        assertThat(DashboardClient.location(locked)).isEqualTo("/dashboard/sign-in?locked");
        assertThat(other.get("/dashboard/sign-in?locked").body()).contains("Too many failed sign-ins");
        assertThat(other.get("/dashboard").statusCode()).isEqualTo(302);
        assertThat(jdbc.sql("select failures from sign_in_failures where email = :e and locked_until > now()")
                .param("e", email).query(Integer.class).optional()).contains(5);

        // an unknown address is answered like a known one
        assertThat(DashboardClient.location(browser().signIn("nobody-" + UUID.randomUUID() + "@example.com", PASSWORD)))
                .isEqualTo("/dashboard/sign-in?error");
    }

    @Test
    void aPostWithoutTheCsrfTokenIsRefused() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.OWNER);
        DashboardClient anonymous = browser();
        anonymous.get("/dashboard/sign-in");
        HttpResponse<String> refused = anonymous.post("/dashboard/sign-in", Map.of("email", email, "password", PASSWORD));
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/html");
        assertThat(refused.body()).contains("without a valid security token");
        assertThat(anonymous.get("/dashboard").statusCode()).as("not signed in").isEqualTo(302);

        DashboardClient owner = signedIn(email);
        assertThat(owner.post("/dashboard/members/invites", Map.of("role", "member")).statusCode()).isEqualTo(403);
        assertThat(owner.post("/dashboard/members/invites", Map.of("role", "member", "_csrf", "forged")).statusCode()).isEqualTo(403);
        assertThat(owner.post("/dashboard/sign-out", Map.of()).statusCode()).isEqualTo(403);
        assertThat(jdbc.sql("select count(*) from member_links where org_id = :org and kind = 'invite'")
                .param("org", app.orgId()).query(Integer.class).single()).isZero();
        assertThat(owner.get("/dashboard").statusCode()).as("still signed in").isEqualTo(200);
    }

    @Test
    void signOutEndsTheSessionEverywhere() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.MEMBER);
        DashboardClient browser = signedIn(email);
        String session = browser.sessionCookie().orElseThrow().getValue();

        HttpResponse<String> out = browser.submit("/dashboard", "/dashboard/sign-out", Map.of());
        assertThat(out.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(out)).isEqualTo("/dashboard/sign-in?signed-out");
        assertThat(browser.get("/dashboard").statusCode()).isEqualTo(302);
        // the old cookie, replayed by someone who kept it, no longer opens anything
        HttpResponse<String> replayed = browser().get("/dashboard", "Cookie", DashboardSecurity.COOKIE + "=" + session);
        assertThat(replayed.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(replayed)).isEqualTo("/dashboard/sign-in");
        assertThat(jdbc.sql("select count(*) from spring_session where principal_name = :e").param("e", email)
                .query(Integer.class).single()).isZero();
    }

    @Test
    void aSessionIsStoredInPostgresAndServedByAnotherInstance() {
        TestApp app = newApp();
        String email = member(app.orgId(), MemberRole.ADMIN);
        DashboardClient browser = signedIn(email);
        String session = browser.sessionCookie().orElseThrow().getValue();
        assertThat(jdbc.sql("select count(*) from spring_session where principal_name = :e").param("e", email)
                .query(Integer.class).single()).isEqualTo(1);

        // a second instance (as after a restart, or behind a load balancer) knows the session
        try (ConfigurableApplicationContext second = new SpringApplicationBuilder(PushServiceApplication.class)
                .web(WebApplicationType.SERVLET)
                .run("--server.port=0", "--push.redis-url=", "--push.bootstrap.enabled=false",
                        "--push.roles=api", "--db-scheduler.enabled=false",
                        // as behind a proxy that terminates TLS (PUSH_DASHBOARD_SECURE_COOKIE=always)
                        "--push.dashboard.secure-cookie=always",
                        "--push.database-url=" + TestDatabase.asDatabaseUrlSetting(TestDatabase.url()),
                        "--push.data-dir=" + dataDir())) {
            String otherBase = "http://127.0.0.1:" + second.getEnvironment().getProperty("local.server.port");
            DashboardClient elsewhere = new DashboardClient(otherBase);
            HttpResponse<String> page = elsewhere.get("/dashboard", "Cookie", DashboardSecurity.COOKIE + "=" + session);
            assertThat(page.statusCode()).isEqualTo(200);
            assertThat(page.body()).contains(email);
            String fresh = elsewhere.get("/dashboard/sign-in").headers().allValues("Set-Cookie").stream()
                    .filter(c -> c.startsWith(DashboardSecurity.COOKIE + "=")).findFirst().orElseThrow();
            assertThat(fresh).contains("Secure", "HttpOnly", "SameSite=Lax", "Path=/dashboard");
        }
    }

    @Test
    void theCliMakesTheFirstOwnerWhoseLinkWorksOnce() throws Exception {
        UUID org = tenants.createOrganisation(TestTokens.unique("cli org ")).id();
        String email = TestTokens.unique("Owner").toLowerCase() + "@Example.com";
        Cli added = cli("member", "add", "--org", org.toString(), "--email", email, "--role", "owner", "--json");
        assertThat(added.exit()).as(added.toString()).isZero();
        JsonNode json = JsonMapper.builder().build().readTree(added.out());
        assertThat(json.path("email").asString()).isEqualTo(email.toLowerCase());
        assertThat(json.path("role").asString()).isEqualTo("owner");
        String link = json.path("sign_in_link").asString();
        assertThat(link).startsWith("http://localhost:8080/dashboard/join?token=");
        String path = link.replaceFirst("^https?://[^/]+", "");
        String token = path.substring(path.indexOf("token=") + 6);
        // the organisation's audit log names the CLI as the actor, the new member as the target
        assertThat(jdbc.sql("""
                        select actor || ' ' || action || ' ' || target_id || ' ' || (details ->> 'role') || ' ' || (details ->> 'email')
                        from org_audit_log where org_id = :org and member_id is null""")
                .param("org", org).query(String.class).list())
                .containsExactly("cli member.add " + json.path("id").asString() + " owner " + email.toLowerCase());
        // only the token's hash is stored
        assertThat(jdbc.sql("select count(*) from member_links where encode(token_hash, 'escape') like :t")
                .param("t", "%" + token + "%").query(Integer.class).single()).isZero();

        Cli text = cli("member", "list", "--org", org.toString());
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).contains(email.toLowerCase(), "owner", "link not used").doesNotContain(token);

        DashboardClient browser = browser();
        assertThat(browser.signIn(email, PASSWORD).headers().firstValue("Location").orElseThrow())
                .as("no password yet").endsWith("?error");
        HttpResponse<String> form = browser.get(path);
        assertThat(form.statusCode()).isEqualTo(200);
        assertThat(form.body()).contains("Choose your password", email.toLowerCase());
        HttpResponse<String> tooShort = browser.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(form.body()),
                "token", token, "password", "short", "password_confirmation", "short"));
        assertThat(tooShort.statusCode()).isEqualTo(422);
        assertThat(tooShort.body()).contains("at least 12 characters");
        HttpResponse<String> set = browser.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(form.body()),
                "token", token, "password", PASSWORD, "password_confirmation", PASSWORD));
        assertThat(set.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(set)).isEqualTo("/dashboard/sign-in?joined");
        assertThat(jdbc.sql("select action from org_audit_log where org_id = :org and actor = 'member' and member_id = :id")
                .param("org", org).param("id", UUID.fromString(json.path("id").asString())).query(String.class).list())
                .as("the member chose their password").containsExactly("member.activate");
        assertThat(DashboardClient.location(browser.signIn(email, PASSWORD))).isEqualTo("/dashboard");
        assertThat(browser.get("/dashboard/members").body()).contains(email.toLowerCase(), "owner");

        // the link is spent
        assertThat(browser().get(path).statusCode()).isEqualTo(404);
        DashboardClient again = browser();
        HttpResponse<String> reuse = again.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(again.get("/dashboard/sign-in").body()),
                "token", token, "password", "another password!", "password_confirmation", "another password!"));
        assertThat(reuse.statusCode()).isEqualTo(404);
        assertThat(DashboardClient.location(browser().signIn(email, PASSWORD))).isEqualTo("/dashboard");

        Cli duplicate = cli("member", "add", "--org", org.toString(), "--email", email, "--role", "member");
        assertThat(duplicate.exit()).isEqualTo(1);
        assertThat(duplicate.err()).contains("exists already").doesNotContain("Exception");
    }

    @Test
    void anOwnersInviteLinkMakesAMemberOnceAndOnlyOwnersInvite() {
        TestApp app = newApp();
        DashboardClient owner = signedIn(member(app.orgId(), MemberRole.OWNER));
        HttpResponse<String> made = owner.submit("/dashboard/members", "/dashboard/members/invites", Map.of("role", "admin"));
        assertThat(made.statusCode()).isEqualTo(200);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("id=\"invite-link\">([^<]+)<").matcher(made.body());
        assertThat(m.find()).as(made.body()).isTrue();
        String path = m.group(1).replaceFirst("^https?://[^/]+", "").replace("&amp;", "&");
        String token = path.substring(path.indexOf("token=") + 6);
        assertThat(owner.get("/dashboard/members").body()).as("shown once").doesNotContain(token);

        String email = TestTokens.unique("invited").toLowerCase() + "@example.com";
        DashboardClient invited = browser();
        HttpResponse<String> form = invited.get(path);
        assertThat(form.statusCode()).isEqualTo(200);
        assertThat(form.body()).contains("Join the organisation");
        HttpResponse<String> joined = invited.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(form.body()),
                "token", token, "email", email, "password", PASSWORD, "password_confirmation", PASSWORD));
        assertThat(DashboardClient.location(joined)).isEqualTo("/dashboard/sign-in?joined");
        assertThat(members.members(app.orgId())).anySatisfy(x -> {
            assertThat(x.email()).isEqualTo(email);
            assertThat(x.role()).isEqualTo(MemberRole.ADMIN);
        });

        // once: a second person with the same link gets "not found", and no member is made
        DashboardClient second = browser();
        assertThat(second.get(path).statusCode()).isEqualTo(404);
        HttpResponse<String> reuse = second.post("/dashboard/join", Map.of("_csrf", DashboardClient.csrf(second.get("/dashboard/sign-in").body()),
                "token", token, "email", "second@example.com", "password", PASSWORD, "password_confirmation", PASSWORD));
        assertThat(reuse.statusCode()).isEqualTo(404);
        assertThat(members.members(app.orgId())).hasSize(2);

        // the invited admin signs in; neither an admin nor a member may invite
        DashboardClient admin = signedIn(email);
        assertThat(admin.get("/dashboard/members").body()).doesNotContain("Make an invite link");
        assertThat(admin.submit("/dashboard/members", "/dashboard/members/invites", Map.of("role", "owner")).statusCode()).isEqualTo(403);
        DashboardClient plain = signedIn(member(app.orgId(), MemberRole.MEMBER));
        assertThat(plain.submit("/dashboard/members", "/dashboard/members/invites", Map.of("role", "member")).statusCode()).isEqualTo(403);
        assertThat(jdbc.sql("select count(*) from member_links where org_id = :org and kind = 'invite'")
                .param("org", app.orgId()).query(Integer.class).single()).isEqualTo(1);
    }

    @Test
    void theAppOverviewShowsTheOrganisationsOwnDataAndAnotherOrganisationsAppIsNotFound() {
        TestApp app = newApp();
        String[] ios = new String[3];
        for (int i = 0; i < 3; i++) {
            ios[i] = api.post("/v1/devices/register", app.publicKey(),
                    "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}").json().path("device_id").asString();
        }
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"}");
        jdbc.sql("update devices set invalidated_at = now() where app_id = :app and id = cast(:id as uuid)")
                .param("app", app.appId()).param("id", ios[0]).update();
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            TestApi.Response created = api.send(api.request("/v1/notifications", app.serverKey())
                    .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                    .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"campaign " + i + "\",\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}")));
            assertThat(created.status()).as(created.toString()).isEqualTo(202);
            sent.add(created.json().path("notification_id").asString());
        }

        DashboardClient browser = signedIn(member(app.orgId(), MemberRole.MEMBER));
        assertThat(browser.get("/dashboard").body()).contains("/dashboard/apps/" + app.appId());
        HttpResponse<String> page = browser.get("/dashboard/apps/" + app.appId());
        assertThat(page.statusCode()).isEqualTo(200);
        String html = page.body();
        assertThat(html).contains("id=\"subscribed\">3<", "id=\"invalid\">1<");
        assertThat(html).containsPattern("data-platform=\"ios\">\\s*<td>ios</td>\\s*<td class=\"num\">2</td>\\s*<td class=\"num\">0</td>\\s*<td class=\"num\">1</td>");
        assertThat(html).containsPattern("data-platform=\"android\">\\s*<td>android</td>\\s*<td class=\"num\">1</td>");
        // the ten latest, newest first, with the counts the API shows for them
        for (String id : sent.subList(2, 12)) assertThat(html).contains("data-id=\"" + id + "\"");
        for (String id : sent.subList(0, 2)) assertThat(html).doesNotContain(id);
        assertThat(html.indexOf(sent.get(11))).isLessThan(html.indexOf(sent.get(2)));
        assertThat(html).contains("campaign 11");
        JsonNode newest = api.get("/v1/notifications/" + sent.get(11), app.serverKey()).json();
        assertThat(html).containsPattern("data-id=\"" + sent.get(11) + "\">(?s).*?<td class=\"num\">"
                + newest.path("accepted_count").asLong() + "</td>");

        TestApp other = newApp();
        for (String foreign : List.of("/dashboard/apps/" + other.appId(), "/dashboard/apps/" + UUID.randomUUID(), "/dashboard/apps/not-an-id")) {
            HttpResponse<String> refused = browser.get(foreign);
            assertThat(refused.statusCode()).as(foreign).isEqualTo(404);
            assertThat(refused.body()).contains("App not found").doesNotContain(other.appId().toString());
        }
        assertThat(browser.get("/dashboard").body()).doesNotContain(other.appId().toString());
        DashboardClient outsider = signedIn(member(other.orgId(), MemberRole.OWNER));
        assertThat(outsider.get("/dashboard/apps/" + app.appId()).statusCode()).isEqualTo(404);
        assertThat(outsider.get("/dashboard/members").body()).doesNotContain("@example.com</td>\n        <td>member");
    }

    @Test
    void anApiKeyNeverSignsInAndASessionCookieNeverAuthorizesTheApi() {
        TestApp app = newApp();
        DashboardClient anonymous = browser();
        for (String key : List.of(app.serverKey(), app.publicKey())) {
            HttpResponse<String> r = anonymous.get("/dashboard", "Authorization", "Bearer " + key);
            assertThat(r.statusCode()).isEqualTo(302);
            assertThat(DashboardClient.location(r)).isEqualTo("/dashboard/sign-in");
            HttpResponse<String> basic = anonymous.get("/dashboard/members", "Authorization", "Basic "
                    + java.util.Base64.getEncoder().encodeToString(("user:" + key).getBytes()));
            assertThat(basic.statusCode()).isEqualTo(302);
        }

        DashboardClient browser = signedIn(member(app.orgId(), MemberRole.OWNER));
        String session = browser.sessionCookie().orElseThrow().getValue();
        // the API reads only its key: a valid dashboard session is a 401 in the API's own shape
        TestApi.Response settings = api.send(api.request("/v1/app/settings", null).header("Cookie", DashboardSecurity.COOKIE + "=" + session));
        assertThat(settings.status()).isEqualTo(401);
        assertThat(settings.errorCode()).isEqualTo("unauthorized");
        assertThat(settings.header("Set-Cookie")).isEmpty();
        assertThat(settings.header("Content-Security-Policy")).isEmpty();
        // and the dashboard serves no /v1 route: with a key the API answers as ever, without a session
        TestApi.Response withKey = api.send(api.request("/v1/app/settings", app.serverKey()).header("Cookie", DashboardSecurity.COOKIE + "=" + session));
        assertThat(withKey.status()).isEqualTo(200);
        assertThat(withKey.header("Set-Cookie")).isEmpty();
        assertThat(api.get("/health", null).header("Set-Cookie")).isEmpty();
    }

    @Autowired
    org.springframework.web.context.WebApplicationContext web;

    /**
     * The filters only the dashboard needs are mapped to its paths alone, not to {@code /*}: Spring Security's, Spring
     * Session's, and the resource URL filter Boot adds because WebJars are on the classpath (which wrapped every
     * API response for nothing).
     */
    @Test
    void dashboardOnlyFiltersAreMappedToTheDashboardAlone() {
        Map<String, ? extends jakarta.servlet.FilterRegistration> registrations =
                java.util.Objects.requireNonNull(web.getServletContext()).getFilterRegistrations();
        List<String> dashboardOnly = List.of("springSecurityFilterChain", "springSessionRepositoryFilter", "resourceUrlEncodingFilter");
        for (String name : dashboardOnly) {
            assertThat(registrations).as("registered filters").containsKey(name);
            assertThat(registrations.get(name).getUrlPatternMappings()).as(name)
                    .containsExactlyInAnyOrder("/dashboard", "/dashboard/*");
        }
    }

    @Test
    void apiRequestsNeverMeetTheDashboardsSecurityFilters() {
        // Spring Security's firewall refuses encoded slashes, percent signs and semicolons; the API
        // accepts them in path values (spec rule 6), so it must never run in front of /v1
        TestApp app = newApp();
        String id = "a/b;c%d";
        String path = "/v1/users/" + java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
        TestApi.Response patched = api.patch(path, app.serverKey(), "{\"tags\":{\"k\":\"v\"}}");
        assertThat(patched.status()).as(patched.toString()).isEqualTo(200);
        assertThat(patched.json().path("external_user_id").asString()).isEqualTo(id);
        assertThat(patched.header("X-Frame-Options")).as("no Spring Security headers on the API").isEmpty();
        // while under /dashboard the firewall does its job
        assertThat(browser().get("/dashboard/apps/a%2Fb").statusCode()).isEqualTo(400);
    }

    // --- the admin CLI in its own JVM, as an operator runs it ------------------------------------

    record Cli(int exit, String out, String err) {
    }

    private Cli cli(String... args) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
                "-cp", System.getProperty("java.class.path"), PushServiceApplication.class.getName(), "admin"));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("DATABASE_URL", TestDatabase.asDatabaseUrlSetting(TestDatabase.url()));
        builder.environment().put("PUSH_DATA_DIR", cliDataDir.toString());
        builder.environment().remove("PUSH_PUBLIC_URL");
        builder.environment().remove("PORT");
        Path out = Files.createTempFile("cli-out", ".txt");
        Path err = Files.createTempFile("cli-err", ".txt");
        Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!process.waitFor(180, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("admin " + String.join(" ", args) + " did not finish");
        }
        Cli run = new Cli(process.exitValue(), Files.readString(out), Files.readString(err));
        Files.delete(out);
        Files.delete(err);
        return run;
    }

    @Test
    void signedInPagesLoadHtmxAndTheirScriptFromTheJarUnderAPolicyWithoutInlineScript() {
        TestApp app = newApp();
        DashboardClient browser = signedIn(member(app.orgId(), MemberRole.MEMBER));

        HttpResponse<String> page = browser.get("/dashboard/apps/" + app.appId());
        assertThat(page.statusCode()).isEqualTo(200);
        String policy = page.headers().firstValue("Content-Security-Policy").orElseThrow();
        assertThat(policy).contains("script-src 'self'").doesNotContain("unsafe-inline", "unsafe-eval");
        assertThat(page.body()).as("WebJar links carry the version").contains("src=\"/dashboard/assets/lib/htmx.org/2.",
                "src=\"/dashboard/assets/dashboard.js\"", "name=\"csrf-token\"", "aria-current=\"page\"",
                "/dashboard/apps/" + app.appId() + "/notifications");
        assertThat(page.body().split("<head>", -1)).as("one head").hasSize(2);
        assertThat(page.body()).doesNotContain("<script>").as("no inline script").doesNotContainPattern("<script(?![^>]*src=)");

        for (String asset : List.of("/dashboard/assets/lib/htmx.org/dist/htmx.js", "/dashboard/assets/dashboard.js",
                "/dashboard/assets/lib/uplot/dist/uPlot.iife.min.js")) {
            HttpResponse<String> js = browser.get(asset);
            assertThat(js.statusCode()).as(asset).isEqualTo(200);
            assertThat(js.headers().firstValue("Content-Type").orElseThrow()).as(asset).contains("javascript");
        }
        HttpResponse<String> css = browser.get("/dashboard/assets/lib/uplot/dist/uPlot.min.css");
        assertThat(css.statusCode()).isEqualTo(200);
        assertThat(browser().get("/dashboard/assets/lib/htmx.org/dist/htmx.js").statusCode())
                .as("assets need no session").isEqualTo(200);
    }
}
