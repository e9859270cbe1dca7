package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What a recipient is sent, end to end through the API, the fan-out, delivery and the three local
 * protocol peers: localizations chosen per recipient, platform overrides as each provider receives
 * them, and the preview, which must show exactly what the peers then receive while storing nothing.
 */
class ContentControlsTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    // ---- helpers ---------------------------------------------------------------------------------

    private void userLocale(TestApp app, String user, String locale) {
        TestApi.Response r = api.patch("/v1/users/" + user, app.serverKey(), "{\"locale\":\"" + locale + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    private TestApi.Response preview(TestApp app, String query, String key, String body) {
        HttpRequest.Builder b = api.request("/v1/notifications/preview" + query, app.serverKey())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) b.header("Idempotency-Key", key);
        return api.send(b);
    }

    private static JsonNode webPayload(LocalWebPushReceiver.Subscriber browser) {
        await().atMost(WAIT).until(() -> !WEB.received(browser.id()).isEmpty());
        return JSON.readTree(WEB.received(browser.id()).getLast().plaintextString());
    }

    private static Set<String> fields(TestApi.Response r) {
        Set<String> fields = new HashSet<>();
        r.json().path("error").path("details").forEach(d -> fields.add(d.path("field").asString()));
        return fields;
    }

    private long rows(String table, UUID app) {
        return jdbc.sql("select count(*) from " + table + " where app_id = :app").param("app", app).query(Long.class).single();
    }

    // ---- localizations ---------------------------------------------------------------------------

    @Test
    void eachRecipientGetsItsDeviceLocaleThenUserLocaleThenLanguageThenTheDefault() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String deviceExact = TestTokens.fcm();
        String userExact = TestTokens.fcm();
        String languageOnly = TestTokens.fcm();
        String userLanguage = TestTokens.fcm();
        String fallback = TestTokens.fcm();
        String ios = TestTokens.apns();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        register(app, "android", deviceExact, ",\"locale\":\"de_AT\",\"external_user_id\":\"anna\",\"tags\":{\"plan\":\"pro\"}");
        userLocale(app, "anna", "pt");
        register(app, "android", userExact, ",\"locale\":\"es-MX\",\"external_user_id\":\"bea\"");
        userLocale(app, "bea", "fr_CA");
        register(app, "android", languageOnly, ",\"locale\":\"pt-BR\",\"external_user_id\":\"caio\"");
        register(app, "android", userLanguage, ",\"external_user_id\":\"dora\"");
        userLocale(app, "dora", "DE-ch");
        register(app, "android", fallback, ",\"locale\":\"ja-JP\",\"external_user_id\":\"emi\"");
        register(app, "ios", ios, ",\"locale\":\"de-DE\",\"external_user_id\":\"fritz\",\"tags\":{\"plan\":\"team\"}");
        register(app, "web", browser.json(), ",\"locale\":\"fr-CA\",\"external_user_id\":\"gil\"");

        String id = send(app, """
                {"title":"Hello {{ external_user_id }}","body":"Plan {{ tags.plan }}","click_url":"https://example.com/en",
                 "image_url":"https://img.example/en.png","target":{"type":"all"},
                 "localizations":{
                   "de":{"title":"Hallo {{ external_user_id }}","body":"Tarif {{ tags.plan }}","image_url":"https://img.example/de.png"},
                   "de-AT":{"title":"Servus {{ external_user_id }}"},
                   "fr-CA":{"title":"Bonjour {{ external_user_id }}","body":"Forfait","click_url":"https://example.com/fr?u={{ external_user_id }}"},
                   "pt":{"title":"Olá {{ external_user_id }}","body":"Plano"}}}""");
        assertThat(finished(app, id).path("status").asString()).isEqualTo("completed");

        // device locale exactly (de_AT matches de-AT); its missing body comes from "de", then the default's fields
        JsonNode m = FCM.receivedFor(deviceExact).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Servus anna");
        assertThat(m.path("notification").path("body").asString()).isEqualTo("Tarif pro");
        assertThat(m.path("notification").path("image").asString()).isEqualTo("https://img.example/de.png");
        assertThat(m.path("data").path("click_url").asString()).isEqualTo("https://example.com/en");
        // no variant for the device's es-MX: the user's fr_CA exactly, before any language-only match
        m = FCM.receivedFor(userExact).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Bonjour bea");
        assertThat(m.path("data").path("click_url").asString()).isEqualTo("https://example.com/fr?u=bea");
        assertThat(m.path("notification").path("image").asString()).isEqualTo("https://img.example/en.png");
        // language only: pt-BR → pt
        m = FCM.receivedFor(languageOnly).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Olá caio");
        assertThat(m.path("notification").path("body").asString()).isEqualTo("Plano");
        // no device locale; the user's DE-ch by its language, case-insensitively
        m = FCM.receivedFor(userLanguage).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Hallo dora");
        // nothing matches: the default content
        m = FCM.receivedFor(fallback).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Hello emi");
        assertThat(m.path("notification").path("body").asString()).isEqualTo("Plan ");

        JsonNode apns = APNS_RECEIVED.get(ios).getFirst();
        assertThat(apns.path("aps").path("alert").path("title").asString()).isEqualTo("Hallo fritz");
        assertThat(apns.path("aps").path("alert").path("body").asString()).isEqualTo("Tarif team");
        assertThat(apns.path("image_url").asString()).isEqualTo("https://img.example/de.png");

        JsonNode web = webPayload(browser);
        assertThat(web.path("title").asString()).isEqualTo("Bonjour gil");
        assertThat(web.path("body").asString()).isEqualTo("Forfait");
        assertThat(web.path("url").asString()).isEqualTo("https://example.com/fr?u=gil");
    }

    @Test
    void localizationsOverTemplateContentFallBackToTheTemplateFields() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String token = TestTokens.fcm();
        register(app, "android", token, ",\"locale\":\"it\",\"external_user_id\":\"ugo\"");
        TestApi.Response t = api.post("/v1/templates", app.serverKey(), """
                {"name":"order","status":"published","content":{"title":"Order {{ template.order }}","body":"Shipped"}}""");
        assertThat(t.status()).as(t.toString()).isEqualTo(201);

        String id = send(app, "{\"template_id\":\"" + t.json().path("template_id").asString() + "\",\"template_data\":{\"order\":\"A-7\"},"
                + "\"target\":{\"type\":\"all\"},\"localizations\":{\"it\":{\"title\":\"Ordine {{ template.order }}\"}}}");
        finished(app, id);

        JsonNode m = FCM.receivedFor(token).getFirst().message();
        assertThat(m.path("notification").path("title").asString()).isEqualTo("Ordine A-7");
        assertThat(m.path("notification").path("body").asString()).isEqualTo("Shipped");
    }

    // ---- platform overrides ----------------------------------------------------------------------

    @Test
    void eachPlatformReceivesItsOverridesMergedOverTheCommonFields() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String ios = TestTokens.apns();
        String android = TestTokens.fcm();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        register(app, "ios", ios, "");
        register(app, "android", android, "");
        register(app, "web", browser.json(), "");

        String id = send(app, """
                {"title":"T","body":"B","target":{"type":"all"},"sound":"common.caf","badge":1,"category":"ORDER",
                 "collapse_id":"c-1","image_url":"https://img.example/i.png",
                 "platform_overrides":{
                   "ios":{"sound":"ios.caf","badge":7,"subtitle":"Sub","thread_id":"orders","category":"IOS_ORDER",
                          "target_content_id":"o-1","relevance_score":0.25,"mutable_content":false},
                   "android":{"channel_id":"orders","color":"#112233","sound":"android_sound","icon":"ic_order",
                              "tag":"t-1","priority":"high","collapse_key":"ck","click_action":"OPEN_ORDER"},
                   "web":{"icon":"https://img.example/icon.png","badge":"https://img.example/badge.png",
                          "require_interaction":true,"renotify":true,"tag":"web-tag"}}}""");
        assertThat(finished(app, id).path("status").asString()).isEqualTo("completed");

        JsonNode aps = APNS_RECEIVED.get(ios).getFirst().path("aps");
        assertThat(aps.path("sound").asString()).isEqualTo("ios.caf");
        assertThat(aps.path("badge").asInt()).isEqualTo(7);
        assertThat(aps.path("alert").path("subtitle").asString()).isEqualTo("Sub");
        assertThat(aps.path("thread-id").asString()).isEqualTo("orders");
        assertThat(aps.path("category").asString()).isEqualTo("IOS_ORDER");
        assertThat(aps.path("target-content-id").asString()).isEqualTo("o-1");
        assertThat(aps.path("relevance-score").asDouble()).isEqualTo(0.25);
        assertThat(aps.has("mutable-content")).as("mutable_content false wins over the image's default").isFalse();

        JsonNode m = FCM.receivedFor(android).getFirst().message();
        JsonNode n = m.path("android").path("notification");
        assertThat(n.path("channel_id").asString()).isEqualTo("orders");
        assertThat(n.path("color").asString()).isEqualTo("#112233");
        assertThat(n.path("sound").asString()).isEqualTo("android_sound");
        assertThat(n.path("icon").asString()).isEqualTo("ic_order");
        assertThat(n.path("tag").asString()).isEqualTo("t-1");
        assertThat(n.path("click_action").asString()).isEqualTo("OPEN_ORDER");
        assertThat(m.path("android").path("priority").asString()).isEqualTo("HIGH");
        assertThat(m.path("android").path("collapse_key").asString()).isEqualTo("ck");

        JsonNode web = webPayload(browser);
        assertThat(web.path("icon").asString()).isEqualTo("https://img.example/icon.png");
        assertThat(web.path("badge").asString()).isEqualTo("https://img.example/badge.png");
        assertThat(web.path("require_interaction").asBoolean()).isTrue();
        assertThat(web.path("renotify").asBoolean()).isTrue();
        assertThat(web.path("tag").asString()).isEqualTo("web-tag");
    }

    // ---- preview ---------------------------------------------------------------------------------

    @Test
    void previewShowsExactlyWhatEachProviderThenReceives() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String ios = TestTokens.apns();
        String android = TestTokens.fcm();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        UUID iosDevice = register(app, "ios", ios, ",\"locale\":\"de-DE\",\"external_user_id\":\"ada\",\"tags\":{\"plan\":\"pro\"}");
        UUID androidDevice = register(app, "android", android, ",\"locale\":\"pt_BR\",\"external_user_id\":\"bob\",\"tags\":{\"plan\":\"team\"}");
        UUID webDevice = register(app, "web", browser.json(), ",\"external_user_id\":\"eve\"");
        register(app, "android", TestTokens.fcm(), ",\"tags\":{\"plan\":\"free\"}"); // not in the audience
        String body = """
                {"title":"Hi {{ external_user_id }}","body":"Plan {{ tags.plan }}","target":{"type":"tag","key":"plan","value":"pro"},
                 "included_segment_ids":[],"priority":"high","interruption_level":"time_sensitive","collapse_id":"order-7",
                 "data":{"order":"A-{{ tags.plan }}"},"actions":[{"id":"view","text":"View"}],
                 "localizations":{"de":{"title":"Hallo {{ external_user_id }}"},"pt":{"body":"Plano {{ tags.plan }}"}},
                 "platform_overrides":{"ios":{"thread_id":"orders","sound":"ding.caf"},
                                       "android":{"channel_id":"orders","color":"#00FF00"},
                                       "web":{"require_interaction":true,"icon":"https://img.example/i.png"}}}""";
        // the tag target reaches one device; every platform is previewed through the user target below
        String all = body.replace("\"target\":{\"type\":\"tag\",\"key\":\"plan\",\"value\":\"pro\"}",
                "\"target\":{\"type\":\"all\"},\"excluded_segment_ids\":[]");

        TestApi.Response tagged = preview(app, "", null, body);
        assertThat(tagged.status()).as(tagged.toString()).isEqualTo(200);
        assertThat(tagged.json().path("audience").path("total").asLong()).isEqualTo(1);
        assertThat(tagged.json().path("samples")).hasSize(1);
        assertThat(tagged.json().path("samples").get(0).path("device_id").asString()).isEqualTo(iosDevice.toString());

        TestApi.Response p = preview(app, "", null, all);
        assertThat(p.status()).as(p.toString()).isEqualTo(200);
        JsonNode audience = p.json().path("audience");
        assertThat(audience.path("total").asLong()).isEqualTo(4);
        assertThat(audience.path("platforms").path("ios").asLong()).isEqualTo(1);
        assertThat(audience.path("platforms").path("android").asLong()).isEqualTo(2);
        assertThat(audience.path("platforms").path("web").asLong()).isEqualTo(1);
        assertThat(p.json().path("interruption_level").asString()).isEqualTo("time_sensitive");
        assertThat(p.body()).doesNotContain(ios, android, browser.endpoint());
        Map<String, JsonNode> samples = new LinkedHashMap<>();
        p.json().path("samples").forEach(s -> samples.put(s.path("platform").asString(), s));
        assertThat(samples.keySet()).containsExactlyInAnyOrder("ios", "android", "web");
        // the sample of a platform is its newest device in the audience: the unlocalized android one
        assertThat(samples.get("android").path("localization").isNull()).isTrue();

        // the Android sample with a locale, asked for by device_id
        TestApi.Response one = preview(app, "?device_id=" + androidDevice, null, all);
        assertThat(one.status()).as(one.toString()).isEqualTo(200);
        JsonNode androidSample = one.json().path("samples").get(0);
        assertThat(androidSample.path("in_audience").asBoolean()).isTrue();
        assertThat(androidSample.path("localization").asString()).isEqualTo("pt");

        String id = send(app, all);
        assertThat(finished(app, id).path("status").asString()).isEqualTo("completed");

        JsonNode iosSample = samples.get("ios");
        assertThat(iosSample.path("localization").asString()).isEqualTo("de");
        JsonNode apns = APNS_RECEIVED.get(ios).getFirst();
        Map<String, String> apnsHeaders = APNS_HEADERS.get(ios).getFirst();
        assertThat(iosSample.path("request").path("body")).isEqualTo(apns);
        assertThat(apns.path("aps").path("alert").path("title").asString()).isEqualTo("Hallo ada");
        JsonNode headers = iosSample.path("request").path("headers");
        for (String name : List.of("apns-push-type", "apns-priority", "apns-collapse-id", "apns-topic")) {
            assertThat(headers.path(name).asString()).as(name).isEqualTo(apnsHeaders.get(name));
        }
        assertThat(Math.abs(headers.path("apns-expiration").asLong() - Long.parseLong(apnsHeaders.get("apns-expiration"))))
                .as("both now plus the default TTL").isLessThan(60);

        JsonNode fcm = FCM.receivedFor(android).getFirst().message().deepCopy();
        ((ObjectNode) fcm).remove("token");
        assertThat(androidSample.path("request").path("body").path("message")).isEqualTo(fcm);
        assertThat(fcm.path("notification").path("body").asString()).isEqualTo("Plano team");

        JsonNode webSample = samples.get("web");
        LocalWebPushReceiver.Received web = WEB.received(browser.id()).getFirst();
        ObjectNode received = (ObjectNode) JSON.readTree(web.plaintextString());
        assertThat(received.remove("notification_id").asString()).isEqualTo(id);
        assertThat(received.path("device_id").asString()).as("the web SDK's worker reports events for it").isEqualTo(webDevice.toString());
        assertThat(received.path("v").asInt()).as("the payload format's version").isEqualTo(1);
        assertThat(webSample.path("request").path("body")).isEqualTo(received);
        for (String name : List.of("ttl", "urgency", "topic", "content-encoding")) {
            assertThat(webSample.path("request").path("headers").path(name).asString()).as(name).isEqualTo(web.header(name));
        }
    }

    @Test
    void previewStoresNothingSendsNothingAndLeavesTheIdempotencyKeyUnused() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String token = TestTokens.fcm();
        register(app, "android", token, "");
        String body = "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"all\"}}";
        String key = "preview-" + UUID.randomUUID();
        long tasks = jdbc.sql("select count(*) from scheduled_tasks").query(Long.class).single();
        long facts = rows("lifecycle_events", app.appId());
        long audits = rows("audit_log", app.appId());

        TestApi.Response p = preview(app, "", key, body);
        assertThat(p.status()).as(p.toString()).isEqualTo(200);
        assertThat(p.json().path("samples").get(0).path("request").path("body").path("message").path("notification")
                .path("title").asString()).isEqualTo("T");
        assertThat(preview(app, "", null, body).status()).as("no Idempotency-Key needed").isEqualTo(200);

        assertThat(rows("notifications", app.appId())).isZero();
        assertThat(rows("notification_recipients", app.appId())).isZero();
        assertThat(rows("lifecycle_events", app.appId())).isEqualTo(facts);
        assertThat(rows("audit_log", app.appId())).isEqualTo(audits);
        assertThat(jdbc.sql("select count(*) from scheduled_tasks").query(Long.class).single()).isLessThanOrEqualTo(tasks);
        assertThat(FCM.receivedFor(token)).isEmpty();

        TestApi.Response created = create(app, key, body);
        assertThat(created.status()).as(created.toString()).isEqualTo(202);
        assertThat(created.json().path("idempotent_replay").asBoolean()).isFalse();
    }

    @Test
    void previewRefusesWhatCreationRefusesWithTheSameDetailsAndCreatesNothing() {
        TestApp app = newApp();
        TestApp other = newApp();
        UUID foreign = register(other, "android", TestTokens.fcm(), "");
        String[] bodies = {
                "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"all\"},\"platform_overrides\":{\"android\":{\"color\":\"green\"}}}",
                "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"all\"},\"platform_overrides\":{\"ios\":{\"thread_id\":7},\"web\":{\"vibrate\":[1]}}}",
                "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"all\"},\"localizations\":{\"de\":{\"title\":\"{{ nope }}\"},\"x y\":{}}}",
                "{\"body\":\"B\",\"target\":{\"type\":\"device\",\"device_id\":\"" + foreign + "\"}}",
        };
        for (String body : bodies) {
            TestApi.Response created = create(app, UUID.randomUUID().toString(), body);
            TestApi.Response previewed = preview(app, "", null, body);
            assertThat(created.status()).as(created.toString()).isEqualTo(422);
            assertThat(previewed.status()).as(previewed.toString()).isEqualTo(422);
            assertThat(previewed.json().path("error").path("details")).as(body).isEqualTo(created.json().path("error").path("details"));
        }
        assertThat(fields(preview(app, "", null, bodies[1])))
                .containsExactlyInAnyOrder("platform_overrides.ios.thread_id", "platform_overrides.web.vibrate");
        assertThat(fields(preview(app, "", null, bodies[2]))).containsExactlyInAnyOrder("localizations.de.title", "localizations");
        assertThat(rows("notifications", app.appId())).isZero();

        String ok = "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"all\"}}";
        assertThat(fields(preview(app, "?device_id=" + foreign, null, ok))).containsExactly("device_id");
        assertThat(fields(preview(app, "?device_id=nope", null, ok))).containsExactly("device_id");
        TestApi.Response forbidden = api.send(api.request("/v1/notifications/preview",
                        serverKey(app, dev.pushservice.platform.auth.Scope.NOTIFICATIONS_READ))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(ok)));
        assertThat(forbidden.status()).isEqualTo(403);
    }

    @Test
    void previewOfADeviceOutsideTheAudienceOrOverTheProviderLimitSaysSo() {
        TestApp app = newApp();
        UUID ios = register(app, "ios", TestTokens.apns(), ",\"tags\":{\"plan\":\"free\"}");
        String big = "x".repeat(5000);
        TestApi.Response p = preview(app, "?device_id=" + ios, null,
                "{\"title\":\"T\",\"body\":\"B\",\"target\":{\"type\":\"tag\",\"key\":\"plan\",\"value\":\"pro\"},\"data\":{\"big\":\"" + big + "\"}}");
        assertThat(p.status()).as(p.toString()).isEqualTo(200);
        assertThat(p.json().path("audience").path("total").asLong()).isZero();
        JsonNode sample = p.json().path("samples").get(0);
        assertThat(sample.path("in_audience").asBoolean()).isFalse();
        assertThat(sample.path("request").isNull()).isTrue();
        assertThat(sample.path("rejected").path("reason").asString()).isEqualTo("payload_too_large");
    }
}
