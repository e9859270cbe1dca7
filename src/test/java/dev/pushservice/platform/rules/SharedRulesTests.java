package dev.pushservice.platform.rules;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import org.junit.jupiter.api.Test;

/**
 * Each shared rule gives the same answer on every route that applies it: an event name means the
 * same at ingest and in a filter, a locale, time zone, platform or name is judged and explained
 * alike wherever it is given.
 */
class SharedRulesTests extends ApiTest {

    private String device(TestApp app, String extra) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"" + extra + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("device_id").asString();
    }

    private static String customEvent(String name) {
        return "{\"field\":\"custom_event." + name + "\",\"operator\":\"exists\"}";
    }

    private static void assertDetail(TestApi.Response r, String field, String message) {
        assertError(r, 422, "validation_failed");
        assertThat(r.json().path("error").path("details")).extracting(d -> d.path("field").asString(), d -> d.path("message").asString())
                .as(r.body()).contains(tuple(field, message));
    }

    @Test
    void anEventNameIngestAcceptsCanBeFilteredOnAndOneItRefusesCannot() {
        TestApp app = newApp();
        String deviceId = device(app, "");
        String longest = "Checkout.done_" + "x".repeat(Limits.EVENT_NAME - 14);
        TestApi.Response accepted = api.post("/v1/events", app.publicKey(),
                "{\"event_type\":\"custom\",\"event_name\":\"" + longest + "\",\"device_id\":\"" + deviceId + "\"}");
        assertThat(accepted.status()).as(accepted.toString()).isEqualTo(202);
        TestApi.Response estimate = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + customEvent(longest) + "}");
        assertThat(estimate.status()).as(estimate.toString()).isEqualTo(200);
        assertThat(estimate.json().path("estimated_recipients").asLong()).isEqualTo(1);

        for (String refused : new String[] {longest + "x", "sign up", "caf\u00e9"}) {
            TestApi.Response ingest = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\"" + refused + "\"}");
            assertError(ingest, 422, "validation_failed");
            assertThat(ingest.json().path("error").path("details").findValuesAsString("field")).containsExactly("event_name");
            TestApi.Response filter = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + customEvent(refused) + "}");
            assertError(filter, 422, "validation_failed");
            assertThat(filter.json().path("error").path("details").findValuesAsString("field")).containsExactly("filter.field");
        }
    }

    @Test
    void localesAndTimeZonesAreJudgedAlikeOnDevicesUsersAndSettings() {
        TestApp app = newApp();
        String bad = ",\"locale\":\"english!\",\"timezone\":\"+02:00\"";
        TestApi.Response registration = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"" + bad + "}");
        assertDetail(registration, "locale", Locales.RULE);
        assertDetail(registration, "timezone", TimeZones.RULE);
        TestApi.Response user = api.patch("/v1/users/u-1", app.serverKey(), "{" + bad.substring(1) + "}");
        assertDetail(user, "locale", Locales.RULE);
        assertDetail(user, "timezone", TimeZones.RULE);
        assertDetail(api.patch("/v1/app/settings", app.serverKey(), "{\"timezone\":\"+02:00\"}"), "timezone", TimeZones.RULE);

        String good = ",\"locale\":\"pt_BR\",\"timezone\":\"America/Sao_Paulo\"";
        device(app, good);
        assertThat(api.patch("/v1/users/u-1", app.serverKey(), "{" + good.substring(1) + "}").status()).isEqualTo(200);
    }

    @Test
    void platformNamesAreTheSameListEverywhere() {
        TestApp app = newApp();
        assertDetail(api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"windows\",\"push_token\":\"t\"}"),
                "platform", Platform.RULE);
        assertDetail(api.get("/v1/devices?platform=windows", app.serverKey()), "platform", Platform.RULE);
        assertDetail(api.post("/v1/segments/estimate", app.serverKey(),
                "{\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"windows\"}}"), "filter.value", Platform.RULE);
        for (Platform p : Platform.values()) {
            assertThat(api.get("/v1/devices?platform=" + p.value(), app.serverKey()).status()).isEqualTo(200);
        }
    }

    @Test
    void namesAndUserIdsRefuseControlCharactersOnEveryRoute() {
        TestApp app = newApp();
        String content = ",\"content\":{\"title\":\"t\",\"body\":\"b\"}";
        String filter = ",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}";
        assertDetail(api.patch("/v1/app/settings", app.serverKey(), "{\"name\":\"a\\u0007b\"}"), "name", TextRules.NO_CONTROL);
        assertDetail(api.post("/v1/templates", app.serverKey(), "{\"name\":\"a\\u0007b\"" + content + "}"), "name", TextRules.NO_CONTROL);
        assertDetail(api.post("/v1/segments", app.serverKey(), "{\"name\":\"a\\u0007b\"" + filter + "}"), "name", TextRules.NO_CONTROL);
        assertDetail(api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"t\",\"external_user_id\":\"a\\u0007b\"}"), "external_user_id", TextRules.NO_CONTROL);
        assertDetail(api.get("/v1/users/a%07b", app.serverKey()), "external_user_id", TextRules.NO_CONTROL);
        assertDetail(api.post("/v1/users/u-1/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"a\\u0007b\"}"),
                "value", TextRules.NO_CONTROL);

        String tooLong = "n".repeat(Limits.NAME + 1);
        String atMost = "must be at most " + Limits.NAME + " characters";
        assertDetail(api.patch("/v1/app/settings", app.serverKey(), "{\"name\":\"" + tooLong + "\"}"), "name", atMost);
        assertDetail(api.post("/v1/templates", app.serverKey(), "{\"name\":\"" + tooLong + "\"" + content + "}"), "name", atMost);
        assertDetail(api.post("/v1/segments", app.serverKey(), "{\"name\":\"" + tooLong + "\"" + filter + "}"), "name", atMost);
        assertDetail(api.get("/v1/users/" + "u".repeat(Limits.EXTERNAL_USER_ID + 1), app.serverKey()), "external_user_id",
                "must be at most " + Limits.EXTERNAL_USER_ID + " characters");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("name").asString()).isNotEqualTo(tooLong);
    }
}
