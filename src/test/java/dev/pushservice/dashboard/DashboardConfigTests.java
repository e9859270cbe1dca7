package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
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
 * The configuration pages (templates, segments, journeys, webhooks, exports, audit log) over real
 * HTTP: each renders what the API made, changes go through the features' services with the API's
 * rules (a refused form is a 422 that changes nothing), only admins change, another organisation's
 * app or resource is a 404, and dashboard changes are audited with the member as the actor.
 */
class DashboardConfigTests extends DashboardTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Autowired
    JdbcClient jdbc;

    private static String q(String s) {
        return s.replace('\'', '"');
    }

    private static Map<String, String> form(String... pairs) {
        Map<String, String> form = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) form.put(pairs[i], pairs[i + 1]);
        return form;
    }

    private JsonNode created(TestApi.Response r) {
        assertThat(r.status()).as(r.toString()).isIn(201, 202);
        return r.json();
    }

    private int count(String sql, UUID app) {
        return jdbc.sql(sql).param("app", app).query(Integer.class).single();
    }

    private String register(TestApp app, String platform) {
        String token = platform.equals("ios") ? TestTokens.apns() : TestTokens.fcm();
        return api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"" + platform + "\",\"push_token\":\"" + token + "\"}")
                .json().path("device_id").asString();
    }

    @Test
    void templatesAreListedCreatedEditedAndDeletedByAdminsWithTheApisRules() {
        TestApp app = newApp();
        String base = "/dashboard/apps/" + app.appId() + "/templates";
        String fromApi = created(api.post("/v1/templates", app.serverKey(),
                q("{'name':'From the API','status':'published','content':{'title':'Hi {{ tags.first_name }}','body':'Body'}}")))
                .path("template_id").asString();

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> list = member.get(base);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains("data-id=\"" + fromApi + "\"", "From the API", "published")
                .doesNotContain("New template");
        HttpResponse<String> view = member.get(base + "/" + fromApi);
        assertThat(view.statusCode()).isEqualTo(200);
        assertThat(view.body()).contains("Hi {{ tags.first_name }}").doesNotContain("Save a new version");

        // a member may read but not change: 403 and nothing changes
        HttpResponse<String> refused = member.submit(base + "/new", base, form("name", "Nope", "title", "T", "body", "B"));
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(member.submit(base + "/" + fromApi, base + "/" + fromApi + "/delete", Map.of()).statusCode()).isEqualTo(403);
        assertThat(count("select count(*) from templates where app_id = :app", app.appId())).isEqualTo(1);
        assertThat(api.get("/v1/templates/" + fromApi, app.serverKey()).json().path("status").asString()).isEqualTo("published");

        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        // invalid: no title, a broken placeholder, data that is not JSON: 422, every message, nothing stored
        HttpResponse<String> invalid = admin.submit(base + "/new", base,
                form("name", "Welcome", "status", "draft", "title", "", "body", "Hello {{ name", "data", ""));
        assertThat(invalid.statusCode()).isEqualTo(422);
        assertThat(invalid.body()).contains("id=\"errors\"", "content.title", "content.body").contains("value=\"Welcome\"");
        HttpResponse<String> badJson = admin.submit(base + "/new", base,
                form("name", "Welcome", "title", "T", "body", "B", "data", "{not json"));
        assertThat(badJson.statusCode()).isEqualTo(422);
        assertThat(badJson.body()).contains("content.data: is not valid JSON");
        assertThat(count("select count(*) from templates where app_id = :app", app.appId())).isEqualTo(1);

        HttpResponse<String> create = admin.submit(base + "/new", base, form("name", "Welcome", "status", "published",
                "title", "Hello {{ tags.first_name }}", "body", "Welcome aboard", "click_url", "https://example.com/a",
                "interruption_level", "active", "data", "{\"screen\":\"home\"}"));
        assertThat(create.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(create)).isEqualTo(base);
        JsonNode listed = api.get("/v1/templates", app.serverKey()).json().path("data");
        String id = null;
        for (JsonNode t : listed) if (t.path("name").asString().equals("Welcome")) id = t.path("template_id").asString();
        assertThat(id).isNotNull();
        JsonNode made = api.get("/v1/templates/" + id, app.serverKey()).json();
        assertThat(made.path("status").asString()).isEqualTo("published");
        assertThat(made.path("content").path("title").asString()).isEqualTo("Hello {{ tags.first_name }}");
        assertThat(made.path("content").path("data").path("screen").asString()).isEqualTo("home");
        assertThat(made.path("content").path("interruption_level").asString()).isEqualTo("active");

        // edit: a new version with the form's values; an invalid edit changes nothing
        HttpResponse<String> badEdit = admin.submit(base + "/" + id, base + "/" + id,
                form("name", "", "status", "published", "title", "T", "body", "B"));
        assertThat(badEdit.statusCode()).isEqualTo(422);
        assertThat(badEdit.body()).contains("name:");
        assertThat(api.get("/v1/templates/" + id, app.serverKey()).json().path("version").asInt()).isEqualTo(1);
        HttpResponse<String> edit = admin.submit(base + "/" + id, base + "/" + id,
                form("name", "Welcome v2", "status", "draft", "title", "New title", "body", "New body", "data", ""));
        assertThat(edit.statusCode()).isEqualTo(302);
        JsonNode edited = api.get("/v1/templates/" + id, app.serverKey()).json();
        assertThat(edited.path("version").asInt()).isEqualTo(2);
        assertThat(edited.path("name").asString()).isEqualTo("Welcome v2");
        assertThat(edited.path("content").path("title").asString()).isEqualTo("New title");
        JsonNode data = edited.path("content").path("data");
        assertThat(data.isMissingNode() || data.isNull()).as("data removed: %s", data).isTrue();

        HttpResponse<String> delete = admin.submit(base + "/" + id, base + "/" + id + "/delete", Map.of());
        assertThat(delete.statusCode()).isEqualTo(302);
        assertThat(api.get("/v1/templates/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("archived");

        // audited as the API audits them, with the member as the actor
        UUID adminId = jdbc.sql("select member_id from audit_log where app_id = :app and action = 'template.create'")
                .param("app", app.appId()).query(UUID.class).list().stream().filter(java.util.Objects::nonNull).findFirst().orElseThrow();
        assertThat(members.member(adminId).orElseThrow().role()).isEqualTo(MemberRole.ADMIN);
        assertThat(jdbc.sql("select actor || ' ' || action || ' ' || array_to_string(changed_fields, ',') from audit_log "
                        + "where app_id = :app and action like 'template.%' order by id").param("app", app.appId()).query(String.class).list())
                .containsExactly("api_key template.create content,name,status", "member template.create content,name,status",
                        "member template.update content,name,status", "member template.archive status");

        // another organisation's admin: every page and change of this app is a 404
        DashboardClient outsider = signedIn(member(newApp().orgId(), MemberRole.OWNER));
        assertThat(outsider.get(base).statusCode()).isEqualTo(404);
        assertThat(outsider.get(base + "/" + id).statusCode()).isEqualTo(404);
        assertThat(outsider.submit("/dashboard", base + "/" + fromApi + "/delete", Map.of()).statusCode()).isEqualTo(404);
        assertThat(api.get("/v1/templates/" + fromApi, app.serverKey()).json().path("status").asString()).isEqualTo("published");
        // and this org's admin asking for another app's template by id: 404 too
        TestApp mine2 = newApp();
        String foreign = created(api.post("/v1/templates", mine2.serverKey(),
                q("{'name':'Other','content':{'title':'T','body':'B'}}"))).path("template_id").asString();
        assertThat(admin.get(base + "/" + foreign).statusCode()).isEqualTo(404);
        assertThat(admin.get(base + "/not-an-id").statusCode()).isEqualTo(404);
    }

    @Test
    void segmentsHaveAJsonEditorWithALiveEstimateAndTheParsersMessages() {
        TestApp app = newApp();
        String base = "/dashboard/apps/" + app.appId() + "/segments";
        register(app, "ios");
        register(app, "ios");
        register(app, "android");
        String fromApi = created(api.post("/v1/segments", app.serverKey(),
                q("{'name':'Android users','filter':{'field':'platform','operator':'eq','value':'android'}}"))).path("segment_id").asString();

        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        assertThat(admin.get(base).body()).contains("data-id=\"" + fromApi + "\"", "Android users", "New segment");
        HttpResponse<String> page = admin.get(base + "/" + fromApi);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("hx-post=\"" + base + "/estimate\"", "hx-trigger=\"keyup changed delay:500ms\"",
                "id=\"estimate-count\">1<", "&quot;android&quot;");
        assertThat(admin.get(base + "/new").body()).contains("<textarea name=\"filter\"");

        // the estimate fragment, as htmx posts it (CSRF token in the header dashboard.js adds)
        String token = DashboardClient.csrf(admin.get(base + "/new").body());
        HttpResponse<String> ios = admin.post(base + "/estimate", form("_csrf", token, "filter", q("{'field':'platform','operator':'eq','value':'ios'}")));
        assertThat(ios.statusCode()).isEqualTo(200);
        assertThat(ios.body()).contains("id=\"estimate-count\">2<").doesNotContain("<html");
        HttpResponse<String> all = admin.post(base + "/estimate", form("_csrf", token, "filter",
                q("{'any':[{'field':'platform','operator':'eq','value':'ios'},{'field':'platform','operator':'eq','value':'android'}]}")));
        assertThat(all.body()).contains("id=\"estimate-count\">3<");
        HttpResponse<String> wrongOperator = admin.post(base + "/estimate", form("_csrf", token, "filter", q("{'field':'platform','operator':'nope','value':'ios'}")));
        assertThat(wrongOperator.statusCode()).isEqualTo(200);
        assertThat(wrongOperator.body()).contains("The filter is not valid", "filter.operator").doesNotContain("estimate-count");
        HttpResponse<String> notJson = admin.post(base + "/estimate", form("_csrf", token, "filter", "{\"field\": "));
        assertThat(notJson.statusCode()).isEqualTo(200);
        assertThat(notJson.body()).contains("filter: is not valid JSON");
        assertThat(admin.post(base + "/estimate", form("filter", "{}")).statusCode()).as("no CSRF token").isEqualTo(403);

        // create; an invalid filter is a 422 with the parser's message and nothing is stored
        HttpResponse<String> invalid = admin.submit(base + "/new", base, form("name", "Broken", "description", "",
                "filter", q("{'field':'platform','operator':'eq'}")));
        assertThat(invalid.statusCode()).isEqualTo(422);
        assertThat(invalid.body()).contains("filter.value");
        assertThat(count("select count(*) from segments where app_id = :app", app.appId())).isEqualTo(1);
        HttpResponse<String> create = admin.submit(base + "/new", base, form("name", "iOS", "description", "Apple phones",
                "filter", q("{'field':'platform','operator':'eq','value':'ios'}")));
        assertThat(create.statusCode()).isEqualTo(302);
        String id = null;
        for (JsonNode s : api.get("/v1/segments", app.serverKey()).json().path("data")) {
            if (s.path("name").asString().equals("iOS")) id = s.path("segment_id").asString();
        }
        assertThat(id).isNotNull();
        assertThat(api.post("/v1/segments/estimate", app.serverKey(), "{\"segment_id\":\"" + id + "\"}").json()
                .path("estimated_recipients").asLong()).isEqualTo(2);

        // edit (description removed, filter changed), then delete
        HttpResponse<String> edit = admin.submit(base + "/" + id, base + "/" + id, form("name", "Everyone", "description", "",
                "filter", q("{'field':'enabled','operator':'eq','value':true}")));
        assertThat(edit.statusCode()).isEqualTo(302);
        JsonNode edited = api.get("/v1/segments/" + id, app.serverKey()).json();
        assertThat(edited.path("version").asInt()).isEqualTo(2);
        assertThat(edited.path("name").asString()).isEqualTo("Everyone");
        assertThat(edited.path("description").isNull() || edited.path("description").isMissingNode()).isTrue();
        assertThat(edited.path("filter").path("field").asString()).isEqualTo("enabled");

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        assertThat(member.submit(base + "/" + id, base + "/" + id + "/delete", Map.of()).statusCode()).isEqualTo(403);
        assertThat(member.submit(base + "/" + id, base + "/" + id, form("name", "Mine", "filter", "{}")).statusCode()).isEqualTo(403);
        assertThat(api.get("/v1/segments/" + id, app.serverKey()).json().path("version").asInt()).isEqualTo(2);
        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/delete", Map.of()).statusCode()).isEqualTo(302);
        assertThat(api.get("/v1/segments/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("archived");

        DashboardClient outsider = signedIn(member(newApp().orgId(), MemberRole.ADMIN));
        assertThat(outsider.get(base + "/" + fromApi).statusCode()).isEqualTo(404);
        String outsiderToken = DashboardClient.csrf(outsider.get("/dashboard").body());
        assertThat(outsider.post(base + "/estimate", form("_csrf", outsiderToken, "filter", "{}")).statusCode()).isEqualTo(404);
    }

    /** push → wait → goal → exit, on the custom event {@code event}. */
    private static String definition(String event) {
        return q("""
                {'trigger':{'type':'custom_event','event_name':'%s'},'start':'hello',
                 'nodes':{'hello':{'type':'push','content':{'title':'Hi','body':'Welcome'},'next':'pause'},
                          'pause':{'type':'wait','seconds':3600,'next':'won'},
                          'won':{'type':'goal','name':'came back','next':'done'},
                          'done':{'type':'exit'}}}""".formatted(event));
    }

    @Test
    void journeysShowStateStatsAndDefinitionAndAdminsChangeTheirState() {
        TestApp app = newApp();
        String base = "/dashboard/apps/" + app.appId() + "/journeys";
        String id = created(api.post("/v1/journeys", app.serverKey(),
                "{\"name\":\"Welcome series\",\"status\":\"active\",\"reentry_limit\":2,\"definition\":" + definition("signed_up") + "}"))
                .path("journey_id").asString();
        // two executions enter through the API's event ingestion
        String device = api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"ios\",\"push_token\":\""
                + TestTokens.apns() + "\",\"external_user_id\":\"ada\"}").json().path("device_id").asString();
        for (int i = 0; i < 2; i++) {
            TestApi.Response e = api.post("/v1/events", app.publicKey(), q("{'device_id':'" + device + "','event_type':'custom','event_name':'signed_up'}"));
            assertThat(e.status()).as(e.toString()).isIn(200, 201, 202);
        }
        await().atMost(WAIT).until(() -> count("select count(*) from journey_executions where app_id = :app", app.appId()) == 2);
        long executions = count("select count(*) from journey_executions where app_id = :app", app.appId());

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> list = member.get(base);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains("data-id=\"" + id + "\"", "Welcome series", "custom_event")
                .containsPattern("data-id=\"" + id + "\">(?s).*?<td class=\"num entered\">" + executions + "</td>");
        HttpResponse<String> page = member.get(base + "/" + id);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("id=\"state\">active<", "came back", "&quot;signed_up&quot;", "data-status=\"completed\"")
                .doesNotContain("Pause</button>");
        assertThat(member.submit(base + "/" + id, base + "/" + id + "/status", form("status", "paused")).statusCode()).isEqualTo(403);
        assertThat(api.get("/v1/journeys/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("active");

        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        assertThat(admin.get(base + "/" + id).body()).contains("Pause</button>", "Archive");
        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/status", form("status", "paused")).statusCode()).isEqualTo(302);
        assertThat(api.get("/v1/journeys/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("paused");
        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/status", form("status", "active")).statusCode()).isEqualTo(302);
        assertThat(api.get("/v1/journeys/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("active");
        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/status", form("status", "archived")).statusCode())
                .as("archive has its own action").isEqualTo(422);

        // edit from JSON with the API's validation: a bad definition is a 422 naming the path, nothing changes
        HttpResponse<String> bad = admin.submit(base + "/" + id, base + "/" + id, form("name", "Welcome series",
                "reentry_limit", "1", "definition", definition("x").replace("\"next\":\"pause\"", "\"next\":\"nowhere\"")));
        assertThat(bad.statusCode()).isEqualTo(422);
        assertThat(bad.body()).contains("definition.nodes.hello.next");
        assertThat(api.get("/v1/journeys/" + id, app.serverKey()).json().path("version").asInt()).isEqualTo(3);
        HttpResponse<String> edit = admin.submit(base + "/" + id, base + "/" + id, form("name", "Welcome, again",
                "reentry_limit", "3", "definition", definition("bought")));
        assertThat(edit.statusCode()).isEqualTo(302);
        JsonNode edited = api.get("/v1/journeys/" + id, app.serverKey()).json();
        assertThat(edited.path("name").asString()).isEqualTo("Welcome, again");
        assertThat(edited.path("reentry_limit").asInt()).isEqualTo(3);
        assertThat(edited.path("definition").path("trigger").path("event_name").asString()).isEqualTo("bought");

        // create from JSON
        HttpResponse<String> create = admin.submit(base + "/new", base, form("name", "Second", "status", "draft",
                "reentry_limit", "1", "definition", definition("other")));
        assertThat(create.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(create)).startsWith(base + "/");
        assertThat(count("select count(*) from journeys where app_id = :app", app.appId())).isEqualTo(2);

        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/archive", Map.of()).statusCode()).isEqualTo(302);
        assertThat(api.get("/v1/journeys/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("archived");
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and actor = 'member' and action like 'journey.%'")
                .param("app", app.appId()).query(Integer.class).single()).isEqualTo(5);

        DashboardClient outsider = signedIn(member(newApp().orgId(), MemberRole.OWNER));
        assertThat(outsider.get(base + "/" + id).statusCode()).isEqualTo(404);
        assertThat(outsider.submit("/dashboard", base + "/" + id + "/archive", Map.of()).statusCode()).isEqualTo(404);
    }

    @Test
    void webhooksShowTheSecretOnceAndTheirDeliveriesWithAttempts() {
        TestApp app = newApp();
        String base = "/dashboard/apps/" + app.appId() + "/webhooks";
        JsonNode fromApi = created(api.post("/v1/webhooks", app.serverKey(), q("{'url':'http://127.0.0.1:9/api','events':['*']}")));
        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        HttpResponse<String> list = admin.get(base);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains("data-id=\"" + fromApi.path("webhook_id").asString() + "\"", "http://127.0.0.1:9/api")
                .doesNotContain(fromApi.path("secret").asString());
        assertThat(api.delete("/v1/webhooks/" + fromApi.path("webhook_id").asString(), app.serverKey()).status()).isEqualTo(200);

        HttpResponse<String> invalid = admin.submit(base + "/new", base, form("url", "ftp://example.com/x", "events", "nope.kind", "enabled", "true"));
        assertThat(invalid.statusCode()).isEqualTo(422);
        assertThat(invalid.body()).contains("events[0]");
        HttpResponse<String> badUrl = admin.submit(base + "/new", base, form("url", "ftp://example.com/x", "events", "*", "enabled", "true"));
        assertThat(badUrl.statusCode()).isEqualTo(422);
        assertThat(badUrl.body()).contains("url:");
        assertThat(count("select count(*) from webhooks where app_id = :app", app.appId())).isZero();

        // nothing listens on port 9 of the loopback: each attempt fails and is retried later
        HttpResponse<String> create = admin.submit(base + "/new", base, form("url", "http://127.0.0.1:9/hook",
                "description", "Billing", "events", "notification.completed, device.registered", "enabled", "true"));
        assertThat(create.statusCode()).isEqualTo(200);
        Matcher secret = Pattern.compile("id=\"secret\">(whsec_[^<]+)<").matcher(create.body());
        assertThat(secret.find()).isTrue();
        String id = jdbc.sql("select id::text from webhooks where app_id = :app").param("app", app.appId()).query(String.class).single();
        JsonNode listed = api.get("/v1/webhooks", app.serverKey()).json().path("data").get(0);
        assertThat(listed.path("events").toString()).isEqualTo("[\"notification.completed\",\"device.registered\"]");
        assertThat(listed.path("description").asString()).isEqualTo("Billing");
        HttpResponse<String> page = admin.get(base + "/" + id);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("http://127.0.0.1:9/hook", "Billing").doesNotContain(secret.group(1)).doesNotContain("whsec_");

        // a test delivery, attempted and failed: the page shows it with its attempts and the next retry
        assertThat(api.post("/v1/webhooks/" + id + "/test", app.serverKey(), "{}").status()).isEqualTo(202);
        await().atMost(WAIT).until(() -> count("select count(*) from webhook_deliveries where app_id = :app and last_attempt_at is not null",
                app.appId()) >= 1);
        String deliveries = admin.get(base + "/" + id).body();
        String delivery = jdbc.sql("select id::text from webhook_deliveries where app_id = :app").param("app", app.appId()).query(String.class).single();
        assertThat(deliveries).containsPattern("data-id=\"" + delivery + "\">(?s)\\s*<td>[^<]+</td>\\s*<td>webhook.test</td>\\s*"
                + "<td><span class=\"status\">(pending|failed)</span></td>\\s*<td class=\"num\">[1-9]");
        String lastError = jdbc.sql("select last_error from webhook_deliveries where id = cast(:id as uuid)").param("id", delivery).query(String.class).single();
        assertThat(lastError).isNotBlank();
        assertThat(deliveries).contains(org.springframework.web.util.HtmlUtils.htmlEscape(lastError));

        // the member reads, but neither edits, rotates nor deletes
        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        assertThat(member.get(base).body()).contains("data-id=\"" + id + "\"").doesNotContain("New webhook");
        assertThat(member.get(base + "/" + id).body()).contains("webhook.test").doesNotContain("Rotate the secret");
        assertThat(member.submit(base + "/" + id, base + "/" + id, form("url", "http://127.0.0.1:9/other", "events", "*")).statusCode()).isEqualTo(403);
        assertThat(member.submit(base + "/" + id, base + "/" + id + "/rotate", Map.of()).statusCode()).isEqualTo(403);
        assertThat(member.submit(base + "/" + id, base + "/" + id + "/delete", Map.of()).statusCode()).isEqualTo(403);
        assertThat(api.get("/v1/webhooks", app.serverKey()).json().path("data").get(0).path("url").asString()).isEqualTo("http://127.0.0.1:9/hook");

        // edit: disabled, all events, no description; an invalid edit changes nothing
        assertThat(admin.submit(base + "/" + id, base + "/" + id, form("url", "not a url", "events", "*")).statusCode()).isEqualTo(422);
        HttpResponse<String> edit = admin.submit(base + "/" + id, base + "/" + id, form("url", "http://127.0.0.1:9/v2", "description", "", "events", "*"));
        assertThat(edit.statusCode()).isEqualTo(302);
        JsonNode edited = api.get("/v1/webhooks", app.serverKey()).json().path("data").get(0);
        assertThat(edited.path("url").asString()).isEqualTo("http://127.0.0.1:9/v2");
        assertThat(edited.path("enabled").asBoolean()).isFalse();
        assertThat(edited.path("events").toString()).isEqualTo("[\"*\"]");

        HttpResponse<String> rotated = admin.submit(base + "/" + id, base + "/" + id + "/rotate", Map.of());
        assertThat(rotated.statusCode()).isEqualTo(200);
        Matcher second = Pattern.compile("id=\"secret\">(whsec_[^<]+)<").matcher(rotated.body());
        assertThat(second.find()).isTrue();
        assertThat(second.group(1)).isNotEqualTo(secret.group(1));

        DashboardClient outsider = signedIn(member(newApp().orgId(), MemberRole.OWNER));
        assertThat(outsider.get(base + "/" + id).statusCode()).isEqualTo(404);
        assertThat(outsider.submit("/dashboard", base + "/" + id + "/delete", Map.of()).statusCode()).isEqualTo(404);

        assertThat(admin.submit(base + "/" + id, base + "/" + id + "/delete", Map.of()).statusCode()).isEqualTo(302);
        assertThat(count("select count(*) from webhooks where app_id = :app", app.appId())).isZero();
        assertThat(jdbc.sql("select action || ' ' || array_to_string(changed_fields, ',') from audit_log where app_id = :app and actor = 'member' order by id")
                .param("app", app.appId()).query(String.class).list())
                .containsExactly("webhook.create description,enabled,events,url",
                        "webhook.update description,enabled,events,url", "webhook.update secret", "webhook.delete ");
    }

    @Test
    void exportsAreCreatedAndTheirFilesDownloadedThroughTheDashboard() {
        TestApp app = newApp();
        String base = "/dashboard/apps/" + app.appId() + "/exports";
        String d1 = register(app, "ios");
        String d2 = register(app, "android");
        String exportId = created(api.post("/v1/exports", app.serverKey(), "{\"type\":\"audience\"}")).path("export_id").asString();
        await().atMost(WAIT).until(() -> "completed".equals(jdbc.sql("select status from exports where id = cast(:id as uuid)")
                .param("id", exportId).query(String.class).single()));

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> list = member.get(base);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains("data-id=\"" + exportId + "\"", "data-status=\"completed\"",
                base + "/" + exportId + "/download").doesNotContain("New export");
        HttpResponse<String> file = member.get(base + "/" + exportId + "/download");
        assertThat(file.statusCode()).isEqualTo(200);
        assertThat(file.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/csv");
        assertThat(file.headers().firstValue("Content-Disposition").orElseThrow())
                .isEqualTo("attachment; filename=\"export-audience-" + exportId + ".csv\"");
        assertThat(file.body()).startsWith("device_id,platform,").contains(d1, d2);
        assertThat(file.body()).isEqualTo(api.send(api.request("/v1/exports/" + exportId + "/download", app.serverKey())).body());

        // a member does not start exports; an admin does, with the API's rules
        assertThat(member.submit(base, base, form("type", "audience")).statusCode()).isEqualTo(403);
        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        HttpResponse<String> invalid = admin.submit(base, base, form("type", "audience", "from", "yesterday", "notification_id", "x"));
        assertThat(invalid.statusCode()).isEqualTo(422);
        assertThat(invalid.body()).contains("from:", "notification_id:");
        HttpResponse<String> wrongType = admin.submit(base, base, form("type", "audience", "notification_id", UUID.randomUUID().toString()));
        assertThat(wrongType.statusCode()).isEqualTo(422);
        assertThat(wrongType.body()).contains("only applies to the recipient export");
        assertThat(count("select count(*) from exports where app_id = :app", app.appId())).isEqualTo(1);
        HttpResponse<String> create = admin.submit(base, base, form("type", "audit", "from", "2020-01-01T00:00:00Z"));
        assertThat(create.statusCode()).isEqualTo(302);
        assertThat(count("select count(*) from exports where app_id = :app and type = 'audit'", app.appId())).isEqualTo(1);
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and actor = 'member' and action = 'export.create'")
                .param("app", app.appId()).query(Integer.class).single()).isEqualTo(1);

        // a file not ready yet is a 409 page; another organisation gets 404 for the list and the file
        String pending = jdbc.sql("select id::text from exports where app_id = :app and type = 'audit'").param("app", app.appId()).query(String.class).single();
        jdbc.sql("update exports set status = 'failed', failure_reason = 'test' where id = cast(:id as uuid) and status <> 'completed'")
                .param("id", pending).update();
        HttpResponse<String> notReady = admin.get(base + "/" + pending + "/download");
        if (notReady.statusCode() != 200) {
            assertThat(notReady.statusCode()).isEqualTo(409);
            assertThat(notReady.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/html");
        }
        DashboardClient outsider = signedIn(member(newApp().orgId(), MemberRole.OWNER));
        assertThat(outsider.get(base).statusCode()).isEqualTo(404);
        assertThat(outsider.get(base + "/" + exportId + "/download").statusCode()).isEqualTo(404);
        TestApp sameOrg = newApp();
        assertThat(admin.get("/dashboard/apps/" + sameOrg.appId() + "/exports/" + exportId + "/download").statusCode()).isEqualTo(404);
    }

    @Test
    void theAuditLogIsNewestFirstPagedAndFilteredByAction() {
        TestApp app = newApp();
        String template = created(api.post("/v1/templates", app.serverKey(), q("{'name':'t0','content':{'title':'T','body':'B'}}")))
                .path("template_id").asString();
        for (int i = 1; i <= 55; i++) {
            assertThat(api.patch("/v1/templates/" + template, app.serverKey(), q("{'name':'t" + i + "'}")).status()).isEqualTo(200);
        }
        created(api.post("/v1/segments", app.serverKey(), q("{'name':'s','filter':{'field':'platform','operator':'eq','value':'ios'}}")));
        String base = "/dashboard/apps/" + app.appId() + "/audit";

        DashboardClient member = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> first = member.get(base);
        assertThat(first.statusCode()).isEqualTo(200);
        List<String> actions = actions(first.body());
        assertThat(actions).hasSize(AuditPages.PAGE);
        assertThat(actions.getFirst()).isEqualTo("segment.create");
        assertThat(actions.subList(1, AuditPages.PAGE)).allMatch("template.update"::equals);
        assertThat(first.body()).contains("server key ");
        Matcher next = Pattern.compile("rel=\"next\" href=\"([^\"]+)\"").matcher(first.body());
        assertThat(next.find()).isTrue();
        HttpResponse<String> second = member.get(next.group(1).replace("&amp;", "&"));
        assertThat(second.statusCode()).isEqualTo(200);
        List<String> older = actions(second.body());
        // 55 updates, the template's and the segment's creation, and the two keys newApp() made
        assertThat(older).hasSize(59 - AuditPages.PAGE);
        assertThat(older.subList(older.size() - 3, older.size())).containsExactly("template.create", "key.create", "key.create");
        assertThat(second.body()).doesNotContain("rel=\"next\"");

        HttpResponse<String> filtered = member.get(base + "?action=segment.create");
        assertThat(actions(filtered.body())).containsExactly("segment.create");
        assertThat(actions(member.get(base + "?action=template.create").body())).containsExactly("template.create");
        assertThat(member.get(base + "?before=garbage").statusCode()).isEqualTo(422);
        assertThat(member.get(base + "?action=%3Cscript%3E").statusCode()).isEqualTo(422);

        // a dashboard change shows the member's address as who
        String adminEmail = member(app.orgId(), MemberRole.ADMIN);
        DashboardClient admin = signedIn(adminEmail);
        admin.submit("/dashboard/apps/" + app.appId() + "/templates/" + template, "/dashboard/apps/" + app.appId() + "/templates/" + template + "/delete", Map.of());
        HttpResponse<String> newest = admin.get(base + "?action=template.archive");
        assertThat(newest.body()).contains("data-actor=\"member\"", adminEmail);

        assertThat(signedIn(member(newApp().orgId(), MemberRole.OWNER)).get(base).statusCode()).isEqualTo(404);
    }

    private static List<String> actions(String html) {
        Matcher m = Pattern.compile("data-action=\"([^\"]+)\"").matcher(html);
        List<String> found = new java.util.ArrayList<>();
        while (m.find()) found.add(m.group(1));
        return found;
    }
}
