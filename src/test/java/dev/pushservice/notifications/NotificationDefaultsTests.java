package dev.pushservice.notifications;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * The delivery-control settings of {@code /v1/app/settings} ({@code notification_defaults},
 * {@code frequency_cap}): what a PATCH changes, what it refuses (422s that change nothing), how it is
 * audited, and the defaults as new notifications get them (request &gt; template &gt; app default &gt;
 * built-in), visible in the stored notification. {@link DeliveryTests} covers caps in delivery.
 */
class NotificationDefaultsTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;

    private JsonNode settings(TestApp app) {
        TestApi.Response r = api.get("/v1/app/settings", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    private JsonNode patch(TestApp app, String body) {
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    private TestApi.Response create(TestApp app, String body) {
        HttpRequest.Builder b = api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body));
        TestApi.Response r = api.send(b);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r;
    }

    private JsonNode stored(TestApp app, TestApi.Response created) {
        TestApi.Response r = api.get("/v1/notifications/" + created.json().path("notification_id").asString(), app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    private List<String> audited(TestApp app) {
        return jdbc.sql("""
                        select array_to_string(changed_fields, ';') from audit_log
                        where app_id = :app and action = 'settings.update' order by id""")
                .param("app", app.appId()).query(String.class).list();
    }

    private static final String PLAIN = "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}";

    @Test
    void aNewAppHasNoDefaultsAndNoCap() {
        JsonNode s = settings(newApp());
        JsonNode d = s.path("notification_defaults");
        for (String key : List.of("ttl", "sound", "interruption_level", "priority")) {
            assertThat(d.has(key)).as(key).isTrue();
            assertThat(d.path(key).isNull()).as(key).isTrue();
        }
        assertThat(s.path("frequency_cap").isNull()).isTrue();
    }

    @Test
    void defaultsFillWhatNeitherRequestNorTemplateSetsAndAreStoredWithTheNotification() {
        TestApp app = newApp();
        JsonNode set = patch(app, """
                {"notification_defaults":{"ttl":3600,"sound":"chime.caf","interruption_level":"time_sensitive","priority":"bulk"}}""");
        assertThat(set.path("notification_defaults").toString())
                .isEqualTo("{\"ttl\":3600,\"sound\":\"chime.caf\",\"interruption_level\":\"time_sensitive\",\"priority\":\"bulk\"}");

        TestApi.Response bare = create(app, PLAIN);
        assertThat(bare.json().path("interruption_level").asString()).isEqualTo("time_sensitive");
        JsonNode n = stored(app, bare);
        assertThat(n.path("ttl").asInt()).isEqualTo(3600);
        assertThat(n.path("content").path("sound").asString()).isEqualTo("chime.caf");
        assertThat(n.path("interruption_level").asString()).isEqualTo("time_sensitive");
        assertThat(n.path("priority").asString()).isEqualTo("bulk");

        // the template's interruption level wins over the app's
        TestApi.Response t = api.post("/v1/templates", app.serverKey(),
                "{\"name\":\"t\",\"content\":{\"title\":\"T\",\"body\":\"B\",\"interruption_level\":\"passive\"}}");
        assertThat(t.status()).as(t.toString()).isEqualTo(201);
        JsonNode fromTemplate = stored(app, create(app, "{\"template_id\":\"" + t.json().path("template_id").asString()
                + "\",\"target\":{\"type\":\"all\"}}"));
        assertThat(fromTemplate.path("interruption_level").asString()).isEqualTo("passive");
        assertThat(fromTemplate.path("ttl").asInt()).isEqualTo(3600);

        // and the request wins over both
        JsonNode explicit = stored(app, create(app, """
                {"title":"t","body":"b","target":{"type":"all"},"ttl":0,"sound":"ping.caf","interruption_level":"critical",
                 "priority":"high"}"""));
        assertThat(explicit.path("ttl").asInt()).isZero();
        assertThat(explicit.path("content").path("sound").asString()).isEqualTo("ping.caf");
        assertThat(explicit.path("interruption_level").asString()).isEqualTo("critical");
        assertThat(explicit.path("priority").asString()).isEqualTo("high");

        // clearing one default leaves the others; a notification keeps what it got at creation
        JsonNode cleared = patch(app, "{\"notification_defaults\":{\"sound\":null}}");
        assertThat(cleared.path("notification_defaults").path("sound").isNull()).isTrue();
        assertThat(cleared.path("notification_defaults").path("ttl").asInt()).isEqualTo(3600);
        assertThat(stored(app, create(app, PLAIN)).path("content").has("sound")).isFalse();
        assertThat(stored(app, bare).path("content").path("sound").asString()).isEqualTo("chime.caf");

        // null clears them all: the built-in values again
        patch(app, "{\"notification_defaults\":null}");
        JsonNode builtIn = stored(app, create(app, PLAIN));
        assertThat(builtIn.path("ttl").isNull()).isTrue();
        assertThat(builtIn.path("interruption_level").asString()).isEqualTo("active");
        assertThat(builtIn.path("priority").asString()).isEqualTo("normal");

        assertThat(audited(app)).containsExactly(
                "notification_defaults.interruption_level;notification_defaults.priority;notification_defaults.sound;notification_defaults.ttl",
                "notification_defaults.sound", "notification_defaults");
    }

    @Test
    void aFrequencyCapChangesOnlyWhatIsSuppliedAndNullSwitchesItOff() {
        TestApp app = newApp();
        JsonNode on = patch(app, "{\"frequency_cap\":{\"limit\":3,\"window_seconds\":86400}}");
        assertThat(on.path("frequency_cap").toString())
                .isEqualTo("{\"limit\":3,\"window_seconds\":86400,\"include_transactional\":false}");
        JsonNode raised = patch(app, "{\"frequency_cap\":{\"limit\":5,\"include_transactional\":true}}");
        assertThat(raised.path("frequency_cap").toString())
                .isEqualTo("{\"limit\":5,\"window_seconds\":86400,\"include_transactional\":true}");
        assertThat(patch(app, "{\"name\":\"renamed\"}").path("frequency_cap").path("limit").asInt()).as("untouched").isEqualTo(5);
        assertThat(patch(app, "{\"frequency_cap\":null}").path("frequency_cap").isNull()).isTrue();
        assertThat(audited(app)).containsExactly("frequency_cap.limit;frequency_cap.window_seconds",
                "frequency_cap.include_transactional;frequency_cap.limit", "name", "frequency_cap");
    }

    @Test
    void badDeliveryControlsAre422sNamingEachFieldThatChangeNothing() {
        TestApp app = newApp();
        patch(app, "{\"notification_defaults\":{\"ttl\":60,\"sound\":\"a.caf\"},\"frequency_cap\":{\"limit\":2,\"window_seconds\":600}}");
        JsonNode before = settings(app);
        List<String> auditBefore = audited(app);

        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), """
                {"name":"changed","notification_defaults":{"ttl":2419201,"sound":"","interruption_level":"loud","priority":"urgent","tll":5},
                 "frequency_cap":{"limit":0,"window_seconds":59,"include_transactional":"yes","size":1}}""");
        assertError(r, 422, "validation_failed");
        assertThat(r.json().path("error").path("details").findValuesAsString("field")).containsExactlyInAnyOrder(
                "notification_defaults.tll", "notification_defaults.ttl", "notification_defaults.sound",
                "notification_defaults.interruption_level", "notification_defaults.priority", "frequency_cap.size",
                "frequency_cap.limit", "frequency_cap.window_seconds", "frequency_cap.include_transactional");

        for (String body : List.of(
                "{\"notification_defaults\":{\"ttl\":\"60\"}}", "{\"notification_defaults\":{\"ttl\":-1}}",
                "{\"notification_defaults\":{\"ttl\":60.5}}", "{\"notification_defaults\":{\"sound\":12}}",
                "{\"notification_defaults\":{\"sound\":\"" + "s".repeat(101) + "\"}}",
                "{\"notification_defaults\":[]}", "{\"notification_defaults\":\"none\"}",
                "{\"frequency_cap\":5}", "{\"frequency_cap\":{\"limit\":null}}", "{\"frequency_cap\":{\"limit\":10001}}",
                "{\"frequency_cap\":{\"window_seconds\":2419201}}", "{\"frequency_cap\":{\"limit\":\"2\"}}",
                "{\"name\":\"ok\",\"frequency_cap\":{\"include_transactional\":null}}")) {
            TestApi.Response bad = api.patch("/v1/app/settings", app.serverKey(), body);
            assertError(bad, 422, "validation_failed");
            assertThat(bad.json().path("error").path("details").get(0).path("field").asString()).as(body)
                    .startsWith(body.contains("notification_defaults") ? "notification_defaults" : "frequency_cap");
        }
        assertThat(settings(app)).isEqualTo(before);
        assertThat(audited(app)).isEqualTo(auditBefore);

        // a cap needs both values to start with
        TestApp fresh = newApp();
        TestApi.Response half = api.patch("/v1/app/settings", fresh.serverKey(), "{\"frequency_cap\":{\"limit\":3}}");
        assertError(half, 422, "validation_failed");
        assertThat(half.json().path("error").path("details").findValuesAsString("field")).containsExactly("frequency_cap.window_seconds");
        assertThat(settings(fresh).path("frequency_cap").isNull()).isTrue();
    }
}
