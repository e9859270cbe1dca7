package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * The notification pages as a browser uses them, over real HTTP: the list, compose (its 422s, its
 * idempotency, the htmx estimate and preview fragments), the report with counts of a real send (Web
 * Push accepted by a local push service, iOS failed for want of credentials), cancel, another
 * organisation's 404s, and one recipient's timeline with its events.
 */
class DashboardNotificationTests extends DashboardTest {

    private static final LocalWebPushReceiver WEB = LocalWebPushReceiver.start();
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Autowired
    JdbcClient jdbc;

    @AfterAll
    static void stopPushService() throws Exception {
        WEB.close();
    }

    private String register(TestApp app, String platform, String token, String extra) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"" + platform
                + "\",\"push_token\":" + tools.jackson.databind.json.JsonMapper.builder().build().writeValueAsString(token) + extra + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("device_id").asString();
    }

    private String send(TestApp app, String body) {
        TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    private JsonNode finished(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() ->
                List.of("completed", "failed", "cancelled").contains(api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()));
        return api.get("/v1/notifications/" + id, app.serverKey()).json();
    }

    private long notifications(TestApp app) {
        return jdbc.sql("select count(*) from notifications where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    private static String cell(String html, String id) {
        Matcher m = Pattern.compile("id=\"" + id + "\">([^<]*)<").matcher(html);
        assertThat(m.find()).as("#" + id + " in the page").isTrue();
        return m.group(1).strip();
    }

    /** The form as the compose page posts it, with the page's CSRF token and idempotency key. */
    private Map<String, String> composeForm(DashboardClient browser, TestApp app, Map<String, String> fields) {
        String page = browser.get("/dashboard/apps/" + app.appId() + "/notifications/new").body();
        Matcher key = Pattern.compile("name=\"idempotency_key\" value=\"([^\"]+)\"").matcher(page);
        assertThat(key.find()).isTrue();
        Map<String, String> form = new LinkedHashMap<>();
        form.put("_csrf", DashboardClient.csrf(page));
        form.put("idempotency_key", key.group(1));
        form.put("target_type", "all");
        form.put("send", "now");
        form.putAll(fields);
        return form;
    }

    @Test
    void theListShowsSentNotificationsNewestFirstWithTheirCountsAndLinksToTheirReports() {
        TestApp app = newApp();
        register(app, "android", TestTokens.fcm(), "");
        String first = send(app, "{\"name\":\"first campaign\",\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}");
        String second = send(app, "{\"name\":\"second campaign\",\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}");
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);

        HttpResponse<String> page = browser.get("/dashboard/apps/" + app.appId() + "/notifications");
        assertThat(page.statusCode()).isEqualTo(200);
        String html = page.body();
        assertThat(html).contains("first campaign", "second campaign",
                "href=\"/dashboard/apps/" + app.appId() + "/notifications/" + first + "\"",
                "href=\"/dashboard/apps/" + app.appId() + "/notifications/new\"");
        assertThat(html.indexOf(second)).as("newest first").isLessThan(html.indexOf(first));
        JsonNode api1 = api.get("/v1/notifications/" + first, app.serverKey()).json();
        assertThat(html).containsPattern("data-id=\"" + first + "\">(?s).*?status-" + api1.path("status").asString());
        assertThat(html).doesNotContainPattern("<script(?![^>]*src=)").doesNotContain("style=");

        TestApp other = newApp();
        assertThat(browser.get("/dashboard/apps/" + other.appId() + "/notifications").statusCode()).isEqualTo(404);
    }

    @Test
    void composeWithABadFieldReShowsTheFormWithTheApisMessagesAs422AndCreatesNothing() {
        TestApp app = newApp();
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String path = "/dashboard/apps/" + app.appId() + "/notifications";

        HttpResponse<String> refused = browser.post(path, composeForm(browser, app, Map.of("title", "Sale", "body", "",
                "click_url", "not a url", "data", "{broken", "name", "kept name")));
        assertThat(refused.statusCode()).isEqualTo(422);
        assertThat(refused.body()).contains("The notification was not created", "<code>data</code>", "<code>click_url</code>",
                "value=\"kept name\"", "value=\"Sale\"");
        // the messages are the API's own for the same body
        TestApi.Response apiAnswer = api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"Sale\",\"click_url\":\"not a url\",\"target\":{\"type\":\"all\"}}")));
        assertThat(apiAnswer.status()).isEqualTo(422);
        for (JsonNode d : apiAnswer.json().path("error").path("details")) {
            assertThat(refused.body()).contains(d.path("message").asString().replace("'", "&#39;").replace("\"", "&quot;"));
        }

        HttpResponse<String> noBody = browser.post(path, composeForm(browser, app, Map.of("title", "Sale")));
        assertThat(noBody.statusCode()).isEqualTo(422);
        assertThat(noBody.body()).contains("<code>body</code>", "is required (in the request or from the template)");

        HttpResponse<String> unknownSegment = browser.post(path, composeForm(browser, app, Map.of("title", "t", "body", "b",
                "target_type", "segment", "target_segment_id", UUID.randomUUID().toString())));
        assertThat(unknownSegment.statusCode()).isEqualTo(422);
        assertThat(unknownSegment.body()).contains("target.segment_id");

        HttpResponse<String> noTime = browser.post(path, composeForm(browser, app, Map.of("title", "t", "body", "b", "send", "at")));
        assertThat(noTime.statusCode()).isEqualTo(422);
        assertThat(noTime.body()).contains("scheduled_at");
        assertThat(notifications(app)).as("nothing created").isZero();
    }

    @Test
    void composeCreatesTheNotificationAsTheApiDoesOnceForOneForm() {
        TestApp app = newApp();
        String device = register(app, "android", TestTokens.fcm(), ",\"external_user_id\":\"ada\"");
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        Map<String, String> form = composeForm(browser, app, Map.of("name", "welcome", "title", "Hello", "body", "Welcome aboard",
                "target_type", "user", "target_external_user_id", "ada", "priority", "high", "data", "{\"order\":\"A-1\"}",
                "click_url", "https://example.com/welcome"));

        HttpResponse<String> created = browser.post("/dashboard/apps/" + app.appId() + "/notifications", form);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(302);
        String location = DashboardClient.location(created);
        assertThat(location).startsWith("/dashboard/apps/" + app.appId() + "/notifications/").endsWith("?created");
        String id = location.substring(location.lastIndexOf('/') + 1, location.indexOf('?'));

        JsonNode seen = api.get("/v1/notifications/" + id, app.serverKey()).json();
        assertThat(seen.path("name").asString()).isEqualTo("welcome");
        assertThat(seen.path("priority").asString()).isEqualTo("high");
        assertThat(seen.path("target").path("external_user_id").asString()).isEqualTo("ada");
        assertThat(seen.path("content").path("data").path("order").asString()).isEqualTo("A-1");
        assertThat(seen.path("content").path("click_url").asString()).isEqualTo("https://example.com/welcome");

        // the same form sent again (a double click, a reload): the same notification, not a second
        HttpResponse<String> again = browser.post("/dashboard/apps/" + app.appId() + "/notifications", form);
        assertThat(DashboardClient.location(again)).isEqualTo("/dashboard/apps/" + app.appId() + "/notifications/" + id);
        assertThat(notifications(app)).isEqualTo(1);

        // the same form edited after going back: refused once with a new key, then created anew
        Map<String, String> edited = new LinkedHashMap<>(form);
        edited.put("title", "Hello again");
        HttpResponse<String> reused = browser.post("/dashboard/apps/" + app.appId() + "/notifications", edited);
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.body()).contains("this form was sent before with other content").doesNotContain(form.get("idempotency_key"));
        assertThat(notifications(app)).isEqualTo(1);
        Matcher newKey = Pattern.compile("name=\"idempotency_key\" value=\"([^\"]+)\"").matcher(reused.body());
        assertThat(newKey.find()).isTrue();
        edited.put("idempotency_key", newKey.group(1));
        edited.put("_csrf", DashboardClient.csrf(reused.body()));
        assertThat(browser.post("/dashboard/apps/" + app.appId() + "/notifications", edited).statusCode()).isEqualTo(302);
        assertThat(notifications(app)).isEqualTo(2);

        HttpResponse<String> report = browser.get(location);
        assertThat(report.statusCode()).isEqualTo(200);
        assertThat(report.body()).contains("The notification was created", "welcome");
        assertThat(device).isNotBlank();
    }

    @Test
    void theEstimateFragmentCountsTheAudienceAndThePreviewFragmentShowsEachPlatformsText() {
        TestApp app = newApp();
        for (int i = 0; i < 3; i++) register(app, "ios", TestTokens.apns(), "");
        register(app, "android", TestTokens.fcm(), "");
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String base = "/dashboard/apps/" + app.appId() + "/notifications/new";

        HttpResponse<String> page = browser.get(base);
        assertThat(page.body()).contains("hx-post=\"" + base + "/preview\"", "hx-trigger=\"change, keyup delay:400ms\"",
                "hx-post=\"" + base + "/estimate\"");

        // no title yet: the estimate is still given
        HttpResponse<String> estimate = browser.post(base + "/estimate", composeForm(browser, app, Map.of()));
        assertThat(estimate.statusCode()).isEqualTo(200);
        assertThat(cell(estimate.body(), "estimate-total")).isEqualTo("4");
        assertThat(estimate.body()).contains("ios 3", "android 1", "web 0").doesNotContain("<html");

        HttpResponse<String> user = browser.post(base + "/estimate", composeForm(browser, app, Map.of("target_type", "user",
                "target_external_user_id", "nobody")));
        assertThat(user.body()).contains("target.external_user_id");

        HttpResponse<String> preview = browser.post(base + "/preview", composeForm(browser, app,
                Map.of("title", "Flash sale", "body", "Half price today")));
        assertThat(preview.statusCode()).isEqualTo(200);
        String html = preview.body();
        assertThat(html).contains("data-platform=\"ios\"", "data-platform=\"android\"").doesNotContain("data-platform=\"web\"");
        assertThat(html).containsPattern("data-platform=\"ios\">(?s).*?preview-title\">Flash sale<.*?preview-body\">Half price today<");
        assertThat(html).containsPattern("data-platform=\"android\">(?s).*?preview-title\">Flash sale<.*?preview-body\">Half price today<");
        assertThat(html).contains("&quot;aps&quot;").as("the provider request, never a token")
                .doesNotContain("push_token", "\"token\"", "&quot;token&quot;");

        HttpResponse<String> unfinished = browser.post(base + "/preview", composeForm(browser, app, Map.of("title", "only a title")));
        assertThat(unfinished.statusCode()).isEqualTo(200);
        assertThat(unfinished.body()).contains("Not ready to preview", "<code>body</code>");
        assertThat(notifications(app)).isZero();
    }

    @Test
    void theReportShowsAcceptedFailedAndEngagementCountsMatchingTheApiWithItsTimelines() {
        TestApp app = newApp(); // no APNs credentials: iOS recipients fail at once; Web Push keys are the app's own
        LocalWebPushReceiver.Subscriber browserA = WEB.subscribe();
        LocalWebPushReceiver.Subscriber browserB = WEB.subscribe();
        String webA = register(app, "web", browserA.json(), ",\"external_user_id\":\"eve\"");
        register(app, "web", browserB.json(), "");
        register(app, "ios", TestTokens.apns(), "");
        String id = send(app, "{\"name\":\"report me\",\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}");
        JsonNode summary = finished(app, id);
        assertThat(summary.path("accepted_count").asLong()).isEqualTo(2);
        assertThat(summary.path("failed_count").asLong()).isEqualTo(1);
        await().atMost(WAIT).until(() -> !WEB.received(browserA.id()).isEmpty());
        for (String type : List.of("received", "opened", "clicked")) {
            TestApi.Response r = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"" + type + "\",\"device_id\":\"" + webA
                    + "\",\"notification_id\":\"" + id + "\"}");
            assertThat(r.status()).as(r.toString()).isEqualTo(202);
        }

        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        HttpResponse<String> page = browser.get("/dashboard/apps/" + app.appId() + "/notifications/" + id);
        assertThat(page.statusCode()).isEqualTo(200);
        String html = page.body();
        assertThat(cell(html, "audience")).isEqualTo(summary.path("recipient_count").asString());
        assertThat(cell(html, "accepted")).isEqualTo(summary.path("accepted_count").asString());
        assertThat(cell(html, "failed")).isEqualTo(summary.path("failed_count").asString());
        assertThat(cell(html, "opened")).isEqualTo("1");
        assertThat(cell(html, "clicked")).isEqualTo("1");
        assertThat(cell(html, "ctr")).isEqualTo("50.0 %");
        assertThat(html).containsPattern("data-platform=\"web\">\\s*<td>web</td>\\s*<td class=\"num\">2</td><td class=\"num\">2</td>\\s*<td class=\"num\">0</td>");
        assertThat(html).containsPattern("data-platform=\"ios\">\\s*<td>ios</td>\\s*<td class=\"num\">1</td><td class=\"num\">0</td>\\s*<td class=\"num\">1</td>");
        assertThat(html).containsPattern("data-reason=\"credentials_missing\">(?s).*?<td class=\"num\">1</td>");
        assertThat(html).doesNotContain("id=\"cancel\"").as("completed: nothing to cancel");
        // the timelines' data for charts.js, in an attribute: no inline script
        assertThat(html).contains("data-chart-kind=\"accepted\"", "data-chart-kind=\"opens\"", "src=\"/dashboard/assets/charts.js\"",
                "&quot;opened&quot;:[1]", "&quot;clicked&quot;:[1]");
        Matcher accepted = Pattern.compile("&quot;accepted&quot;:\\{&quot;bucket&quot;:1,&quot;x&quot;:\\[[0-9,]+\\],&quot;y&quot;:\\[([0-9.,]+)\\]")
                .matcher(html);
        assertThat(accepted.find()).as("accepted per second").isTrue();
        assertThat(List.of(accepted.group(1).split(",")).stream().mapToDouble(Double::parseDouble).sum()).isEqualTo(2.0);
        assertThat(html).doesNotContainPattern("<script(?![^>]*src=)").doesNotContain("style=");
        assertThat(html).doesNotContain(browserA.endpoint());
        assertThat(browser.get("/dashboard/assets/charts.js").statusCode()).isEqualTo(200);

        assertThat(browser.get("/dashboard/apps/" + app.appId() + "/notifications/" + UUID.randomUUID()).statusCode()).isEqualTo(404);
        assertThat(browser.get("/dashboard/apps/" + app.appId() + "/notifications/not-an-id").statusCode()).isEqualTo(404);
        TestApp other = newApp();
        DashboardClient outsider = signedIn(other, MemberRole.OWNER);
        assertThat(outsider.get("/dashboard/apps/" + app.appId() + "/notifications/" + id).statusCode()).isEqualTo(404);
        assertThat(outsider.get("/dashboard/apps/" + other.appId() + "/notifications/" + id).statusCode())
                .as("another app's notification").isEqualTo(404);
    }

    /** The report page's figures and charts (everything between "Delivery" and "One recipient"). */
    private static String reportSection(String html) {
        int from = html.indexOf("<h2>Delivery</h2>");
        int to = html.indexOf("<h2>One recipient</h2>");
        assertThat(from).isPositive();
        assertThat(to).isGreaterThan(from);
        return html.substring(from, to);
    }

    @Test
    void aFinishedNotificationsReportIsReadFromTheFiguresStoredWhenItFinishedAndAnUnfinishedOneLive() {
        TestApp app = newApp(); // no APNs credentials: the iOS recipient fails at once
        LocalWebPushReceiver.Subscriber browserA = WEB.subscribe();
        LocalWebPushReceiver.Subscriber browserB = WEB.subscribe();
        String webA = register(app, "web", browserA.json(), "");
        register(app, "web", browserB.json(), "");
        register(app, "ios", TestTokens.apns(), "");
        String id = send(app, "{\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}");
        assertThat(finished(app, id).path("accepted_count").asLong()).isEqualTo(2);
        String stored = jdbc.sql("select report::text from notifications where id = :id").param("id", UUID.fromString(id))
                .query(String.class).single();
        assertThat(stored).as("stored when it finished").isNotNull().contains("\"bucket\"", "credentials_missing");
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String path = "/dashboard/apps/" + app.appId() + "/notifications/" + id;
        String fromStored = reportSection(browser.get(path).body());

        // the same figures as the live computation the page made before they were stored
        jdbc.sql("update notifications set report = null where id = :id").param("id", UUID.fromString(id)).update();
        String live = reportSection(browser.get(path).body());
        assertThat(fromStored).isEqualTo(live);
        assertThat(cell(live, "accepted")).isEqualTo("2");
        assertThat(cell(live, "failed")).isEqualTo("1");

        // with the stored figures back, changing the recipient rows in SQL does not change the page
        jdbc.sql("update notifications set report = cast(:r as jsonb) where id = :id").param("r", stored).param("id", UUID.fromString(id)).update();
        // (the two accepted at their first attempt are members of a batch, V58: they become failed rows too, their
        // counts moved as the rows' trigger would have for an update)
        int changed = jdbc.sql("update notification_recipients set status = 'failed', last_error = 'altered_in_sql' where notification_id = :id")
                .param("id", UUID.fromString(id)).update()
                + jdbc.sql("""
                        with gone as (delete from notification_recipient_batches where notification_id = :id returning *),
                        moved as (
                            insert into notification_recipients (notification_id, device_id, app_id, platform, status, attempts,
                                                                 last_error, next_attempt_at, due_at, updated_at)
                            select g.notification_id, m.device_id, g.app_id, g.platform, 'failed', 1, 'altered_in_sql',
                                   g.recorded_at, g.due_at, g.recorded_at
                            from gone g cross join lateral unnest(g.device_ids) as m(device_id)
                            returning device_id),
                        undone as (
                            insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                            select g.notification_id, g.app_id, g.platform, s.status, null, s.sign * cardinality(g.device_ids)
                            from gone g cross join (values ('accepted', -1), ('sending', 1)) as s(status, sign))
                        select count(*) from moved""")
                .param("id", UUID.fromString(id)).query(Integer.class).single();
        assertThat(changed).isEqualTo(3);
        String afterChange = reportSection(browser.get(path).body());
        assertThat(afterChange).isEqualTo(fromStored).doesNotContain("altered_in_sql");
        // engagement stays live
        assertThat(api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"device_id\":\"" + webA
                + "\",\"notification_id\":\"" + id + "\"}").status()).isEqualTo(202);
        assertThat(cell(browser.get(path).body(), "opened")).isEqualTo("1");

        // one not finished (no stored figures, no finished_at) is read live: the altered rows show
        jdbc.sql("update notifications set status = 'processing', finished_at = null, summary = null, report = null where id = :id")
                .param("id", UUID.fromString(id)).update();
        String processing = browser.get(path).body();
        assertThat(cell(processing, "accepted")).isEqualTo("0");
        assertThat(cell(processing, "failed")).isEqualTo("3");
        assertThat(processing).contains("altered_in_sql");
    }

    @Test
    void aScheduledNotificationIsCancelledFromItsReportAndAMemberOfAnotherOrganisationGets404() {
        TestApp app = newApp();
        register(app, "android", TestTokens.fcm(), "");
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String at = LocalDateTime.ofInstant(Instant.now().plus(2, ChronoUnit.DAYS), ZoneOffset.UTC).truncatedTo(ChronoUnit.MINUTES).toString();
        HttpResponse<String> created = browser.post("/dashboard/apps/" + app.appId() + "/notifications",
                composeForm(browser, app, Map.of("title", "Later", "body", "Tomorrow", "send", "at", "send_at", at)));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(302);
        String report = DashboardClient.location(created).replace("?created", "");
        String id = report.substring(report.lastIndexOf('/') + 1);
        JsonNode draft = api.get("/v1/notifications/" + id, app.serverKey()).json();
        assertThat(draft.path("status").asString()).isEqualTo("draft");
        assertThat(Instant.parse(draft.path("scheduled_at").asString())).isEqualTo(LocalDateTime.parse(at).toInstant(ZoneOffset.UTC));
        assertThat(browser.get(report).body()).contains("id=\"cancel\"", "scheduled for");

        // another organisation's member: the same 404 as for an unknown notification, and nothing changes
        DashboardClient outsider = signedIn(newApp(), MemberRole.OWNER);
        outsider.get("/dashboard");
        HttpResponse<String> foreign = outsider.submit("/dashboard", report + "/cancel", Map.of());
        assertThat(foreign.statusCode()).isEqualTo(404);
        assertThat(api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("draft");

        HttpResponse<String> cancelled = browser.submit(report, report + "/cancel", Map.of());
        assertThat(cancelled.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(cancelled)).isEqualTo(report + "?cancelled");
        assertThat(api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("cancelled");
        String after = browser.get(report + "?cancelled").body();
        assertThat(after).contains("The notification was cancelled", "status-cancelled").doesNotContain("id=\"cancel\"");

        // cancelling again follows the API's rule: a 422 page, not a 500
        HttpResponse<String> twice = browser.submit(report, report + "/cancel", Map.of());
        assertThat(twice.statusCode()).isEqualTo(422);
        assertThat(twice.body()).contains("only draft, queued or processing notifications can be cancelled");
        assertThat(browser.post(report + "/cancel", Map.of()).statusCode()).as("no CSRF token").isEqualTo(403);
    }

    @Test
    void theRecipientTimelineShowsTheStoredOutcomeThenTheDevicesEvents() {
        TestApp app = newApp();
        LocalWebPushReceiver.Subscriber subscriber = WEB.subscribe();
        String web = register(app, "web", subscriber.json(), ",\"external_user_id\":\"eve\"");
        String ios = register(app, "ios", TestTokens.apns(), ",\"external_user_id\":\"eve\"");
        String id = send(app, "{\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"user\",\"external_user_id\":\"eve\"}}");
        finished(app, id);
        assertThat(api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"device_id\":\"" + web
                + "\",\"notification_id\":\"" + id + "\"}").status()).isEqualTo(202);
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String base = "/dashboard/apps/" + app.appId() + "/notifications/" + id + "/recipients";

        String one = browser.get(base + "?device=" + web).body();
        assertThat(one).contains("data-device=\"" + web + "\"", "status-accepted", "data-event=\"opened\"", "notification created",
                        "fan-out started")
                .doesNotContain("data-device=\"" + ios + "\"").doesNotContain(subscriber.endpoint());

        String user = browser.get(base + "?user=" + URLEncoder.encode("eve", StandardCharsets.UTF_8)).body();
        assertThat(user).contains("data-device=\"" + web + "\"", "data-device=\"" + ios + "\"", "credentials_missing", "status-failed");
        assertThat(user).containsPattern("data-device=\"" + ios + "\">(?s).*?</section>").as("the event is the web device's only");
        String iosSection = user.substring(user.indexOf("data-device=\"" + ios + "\""));
        iosSection = iosSection.substring(0, iosSection.indexOf("</section>"));
        assertThat(iosSection).doesNotContain("data-event=");

        assertThat(browser.get(base + "?device=" + UUID.randomUUID()).body()).contains("id=\"none\"");
        assertThat(browser.get(base + "?device=nope").statusCode()).isEqualTo(422);
        assertThat(signedIn(newApp(), MemberRole.OWNER).get(base + "?device=" + web).statusCode()).isEqualTo(404);
    }

    @Test
    void theOverviewDrawsTheDailyEventsFromTheAnalyticsCounters() {
        TestApp app = newApp();
        String device = register(app, "android", TestTokens.fcm(), "");
        for (int i = 0; i < 3; i++) {
            assertThat(api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"device_id\":\"" + device + "\"}").status())
                    .isEqualTo(202);
        }
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String html = browser.get("/dashboard/apps/" + app.appId()).body();
        assertThat(html).contains("id=\"daily-events\"", "data-chart-kind=\"daily\"", "&quot;total&quot;:3");
        JsonNode analytics = api.get("/v1/analytics?days=30", app.serverKey()).json();
        assertThat(analytics.toString()).contains("\"opened\":3");
        Matcher opened = Pattern.compile("&quot;opened&quot;:\\[([0-9,]+)\\]").matcher(html);
        assertThat(opened.find()).isTrue();
        String[] days = opened.group(1).split(",");
        assertThat(days).hasSize(30);
        assertThat(days[29]).as("today, last").isEqualTo("3");
    }

    /**
     * The statements one page view runs on the request's thread, counted from {@code JdbcTemplate}'s own
     * debug lines (every query of the pages, and of Spring Session, goes through it).
     */
    private long statements(DashboardClient browser, String path) {
        ch.qos.logback.classic.Logger jdbcLog = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
                .getLogger("org.springframework.jdbc.core.JdbcTemplate");
        // the thread is read when the line is logged (a logging event names its thread only when first asked)
        List<String> seen = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        ch.qos.logback.core.AppenderBase<ch.qos.logback.classic.spi.ILoggingEvent> counter = new ch.qos.logback.core.AppenderBase<>() {
            @Override
            protected void append(ch.qos.logback.classic.spi.ILoggingEvent e) {
                seen.add(Thread.currentThread().getName() + " " + e.getFormattedMessage());
            }
        };
        counter.setContext(jdbcLog.getLoggerContext());
        counter.start();
        ch.qos.logback.classic.Level level = jdbcLog.getLevel();
        boolean additive = jdbcLog.isAdditive();
        jdbcLog.addAppender(counter);
        jdbcLog.setAdditive(false);
        jdbcLog.setLevel(ch.qos.logback.classic.Level.DEBUG);
        try {
            HttpResponse<String> page = browser.get(path);
            assertThat(page.statusCode()).as(path).isEqualTo(200);
        } finally {
            jdbcLog.setLevel(level);
            jdbcLog.setAdditive(additive);
            jdbcLog.detachAppender(counter);
        }
        return seen.stream().filter(e -> e.startsWith("tomcat-handler-") || e.startsWith("http-nio-"))
                .filter(e -> e.contains(" Executing prepared SQL statement") || e.contains(" Executing SQL")).count();
    }

    @Test
    void eachPageRunsAsManyStatementsForTwelveRecipientsAsForOne() {
        record Sent(TestApp app, String id, String device, DashboardClient browser) {
        }
        List<Sent> sends = new java.util.ArrayList<>();
        for (int size : List.of(1, 12)) {
            TestApp app = newApp(); // no credentials: every recipient fails at once, with its reason
            String device = null;
            for (int i = 0; i < size; i++) {
                device = register(app, i % 2 == 0 ? "ios" : "android", i % 2 == 0 ? TestTokens.apns() : TestTokens.fcm(),
                        ",\"external_user_id\":\"u" + (i % 3) + "\"");
                String event = "{\"event_type\":\"opened\",\"device_id\":\"" + device + "\"}";
                assertThat(api.post("/v1/events", app.publicKey(), event).status()).isEqualTo(202);
            }
            String id = send(app, "{\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}");
            finished(app, id);
            // every notification finished before the pages are counted: a list that shows a running one also
            // reads its live counts (one statement more), and which of them is still running is a race
            for (int i = 0; i < size; i++) {
                finished(app, send(app, "{\"title\":\"More\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}"));
            }
            sends.add(new Sent(app, id, device, signedIn(app, MemberRole.MEMBER)));
        }
        for (java.util.function.Function<Sent, String> page : List.<java.util.function.Function<Sent, String>>of(
                s -> "/dashboard/apps/" + s.app().appId(),
                s -> "/dashboard/apps/" + s.app().appId() + "/notifications",
                s -> "/dashboard/apps/" + s.app().appId() + "/notifications/new",
                s -> "/dashboard/apps/" + s.app().appId() + "/notifications/" + s.id(),
                s -> "/dashboard/apps/" + s.app().appId() + "/notifications/" + s.id() + "/recipients?user=u0",
                s -> "/dashboard/apps/" + s.app().appId() + "/notifications/" + s.id() + "/recipients?device=" + s.device())) {
            Sent small = sends.get(0);
            Sent large = sends.get(1);
            statements(small.browser(), page.apply(small)); // a first view may do once-per-session work
            statements(large.browser(), page.apply(large));
            long one = statements(small.browser(), page.apply(small));
            long twelve = statements(large.browser(), page.apply(large));
            assertThat(one).as(page.apply(small)).isPositive();
            assertThat(twelve).as(page.apply(large) + " runs as many statements as " + page.apply(small)).isEqualTo(one);
        }
    }
}
