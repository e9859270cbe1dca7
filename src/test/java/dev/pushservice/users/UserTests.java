package dev.pushservice.users;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

class UserTests extends ApiTest {

    static String path(String externalUserId) {
        return "/v1/users/" + URLEncoder.encode(externalUserId, StandardCharsets.UTF_8).replace("+", "%20");
    }

    TestApi.Response register(TestApp app, String token, String user) {
        return api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + token + "\",\"external_user_id\":\"" + user + "\"}");
    }

    @Test
    void userReadShowsProfileAliasesAndDevicesWithoutInternalIds() {
        TestApp app = newApp();
        String token = TestTokens.apns();
        String deviceId = register(app, token, "reader").json().path("device_id").asString();
        api.post(path("reader") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"r@example.com\"}");
        api.patch(path("reader"), app.serverKey(), "{\"locale\":\"de\",\"timezone\":\"Europe/Berlin\",\"properties\":{\"first_name\":\"Rea\"}}");
        TestApi.Response r = api.get(path("reader"), app.serverKey());
        assertThat(r.status()).isEqualTo(200);
        JsonNode user = r.json();
        assertThat(user.path("external_user_id").asString()).isEqualTo("reader");
        assertThat(user.path("locale").asString()).isEqualTo("de");
        assertThat(user.path("properties").path("first_name").asString()).isEqualTo("Rea");
        assertThat(user.path("aliases").get(0).path("label").asString()).isEqualTo("email");
        assertThat(user.path("devices")).hasSize(1);
        assertThat(user.path("devices").get(0).path("device_id").asString()).isEqualTo(deviceId);
        assertThat(r.body()).doesNotContain(app.appId().toString()).doesNotContain(token).doesNotContain("\"id\"");
        assertError(api.get(path("nobody"), app.serverKey()), 404, "not_found");
    }

    @Test
    void patchReplacesSuppliedObjectsWhole() {
        TestApp app = newApp();
        api.patch(path("p"), app.serverKey(), "{\"tags\":{\"a\":\"1\",\"b\":\"2\"},\"properties\":{\"x\":{\"deep\":true},\"y\":1}}");
        TestApi.Response r = api.patch(path("p"), app.serverKey(), "{\"tags\":{\"c\":3},\"properties\":{\"x\":{\"other\":1}}}");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("tags").propertyNames()).containsExactly("c");
        assertThat(r.json().path("tags").path("c").asString()).isEqualTo("3");
        assertThat(r.json().path("properties").path("x").propertyNames()).containsExactly("other");
        assertThat(r.json().path("properties").has("y")).isFalse();
        TestApi.Response untouched = api.patch(path("p"), app.serverKey(), "{\"locale\":\"fr\"}");
        assertThat(untouched.json().path("tags").path("c").asString()).isEqualTo("3");
        assertThat(untouched.json().path("properties").path("x").path("other").asInt()).isEqualTo(1);
    }

    @Test
    void badPatchIsRejectedAndChangesNothing() {
        TestApp app = newApp();
        api.patch(path("strict"), app.serverKey(), "{\"tags\":{\"keep\":\"yes\"}}");
        record Case(String body, String field) {
        }
        for (Case c : List.of(new Case("{\"locale\":5}", "locale"), new Case("{\"timezone\":\"Nowhere/City\"}", "timezone"),
                new Case("{\"tags\":{\"k\":{\"nested\":1}}}", "tags.k"), new Case("{\"tags\":null}", "tags"),
                new Case("{\"properties\":[1]}", "properties"), new Case("{\"tags\":{\"ok\":\"1\"},\"timezone\":\"bad\"}", "timezone"))) {
            TestApi.Response r = api.patch(path("strict"), app.serverKey(), c.body());
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).contains(c.field());
        }
        assertThat(api.get(path("strict"), app.serverKey()).json().path("tags").propertyNames()).containsExactly("keep");
        assertError(api.patch(path("x".repeat(191)), app.serverKey(), "{}"), 422, "validation_failed");
        assertThat(api.get(path("x".repeat(191)), app.serverKey()).json().path("error").path("details").get(0)
                .path("field").asString()).isEqualTo("external_user_id");
    }

    @Test
    void deletingAUserDisablesItsDevicesAndTheTokenCanComeBack() {
        TestApp app = newApp();
        String token = TestTokens.apns();
        String other = TestTokens.apns();
        String deviceId = register(app, token, "leaver").json().path("device_id").asString();
        register(app, other, "leaver");
        api.post(path("leaver") + "/aliases", app.serverKey(), "{\"label\":\"crm\",\"value\":\"42\"}");
        TestApi.Response deleted = api.delete(path("leaver"), app.serverKey());
        assertThat(deleted.status()).isEqualTo(200);
        assertThat(deleted.json().path("deleted").asBoolean()).isTrue();
        assertThat(deleted.json().path("devices_disabled").asInt()).isEqualTo(2);
        assertError(api.get(path("leaver"), app.serverKey()), 404, "not_found");
        JsonNode device = api.get("/v1/devices/" + deviceId, app.serverKey()).json();
        assertThat(device.path("enabled").asBoolean()).isFalse();
        assertThat(device.path("external_user_id").isNull()).isTrue();
        assertError(api.delete(path("leaver"), app.serverKey()), 404, "not_found");

        TestApi.Response again = register(app, token, "returner");
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("device_id").asString()).isEqualTo(deviceId);
        assertThat(again.json().path("enabled").asBoolean()).isTrue();
        assertThat(again.json().path("external_user_id").asString()).isEqualTo("returner");
        assertThat(api.get(path("returner"), app.serverKey()).json().path("aliases")).isEmpty();
    }

    @Test
    void encodedUserIdsReachTheServiceDecodedOnce() {
        TestApp app = newApp();
        for (String id : List.of("a/b", "50%off", "with space", "名前-ユーザー", "a%2Fb", "plus+sign", "Ünïcödé/%/ ")) {
            TestApi.Response patched = api.patch(path(id), app.serverKey(), "{\"tags\":{\"k\":\"v\"}}");
            assertThat(patched.status()).as(id + " " + patched).isEqualTo(200);
            assertThat(patched.json().path("external_user_id").asString()).isEqualTo(id);
            TestApi.Response read = api.get(path(id), app.serverKey());
            assertThat(read.status()).as(id).isEqualTo(200);
            assertThat(read.json().path("external_user_id").asString()).isEqualTo(id);
        }
        assertThat(api.get(path("a/b"), app.serverKey()).json().path("external_user_id").asString()).isEqualTo("a/b");
        assertThat(api.get(path("a%2Fb"), app.serverKey()).json().path("external_user_id").asString()).isEqualTo("a%2Fb");
    }

    @Test
    void aliasesAreCreatedMovedAndDeletedExactly() {
        TestApp app = newApp();
        TestApi.Response created = api.post(path("first") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"a@x.io\"}");
        assertThat(created.status()).isEqualTo(201);
        assertThat(created.json().path("moved").asBoolean()).isFalse();
        api.post(path("first") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"b@x.io\"}");
        TestApi.Response moved = api.post(path("second") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"a@x.io\"}");
        assertThat(moved.status()).isEqualTo(201);
        assertThat(moved.json().path("moved").asBoolean()).isTrue();
        assertThat(api.get(path("first"), app.serverKey()).json().path("aliases").findValuesAsString("value")).containsExactly("b@x.io");
        assertThat(api.get(path("second"), app.serverKey()).json().path("aliases").findValuesAsString("value")).containsExactly("a@x.io");

        TestApi.Response notHeld = api.delete(path("first") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"a@x.io\"}");
        assertThat(notHeld.status()).isEqualTo(200);
        assertThat(notHeld.json().path("deleted").asBoolean()).isFalse();
        TestApi.Response removed = api.delete(path("second") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"a@x.io\"}");
        assertThat(removed.status()).isEqualTo(200);
        assertThat(removed.json().path("deleted").asBoolean()).isTrue();
        assertThat(api.get(path("second"), app.serverKey()).json().path("aliases")).isEmpty();
        assertThat(api.get(path("first"), app.serverKey()).json().path("aliases")).hasSize(1);

        TestApp other = newApp();
        assertError(api.delete(path("first") + "/aliases", other.serverKey(), "{\"label\":\"email\",\"value\":\"b@x.io\"}"), 404, "not_found");
        assertError(api.delete(path("never-existed") + "/aliases", app.serverKey(), "{\"label\":\"email\",\"value\":\"b@x.io\"}"), 404, "not_found");
        assertThat(api.get(path("first"), app.serverKey()).json().path("aliases")).hasSize(1);
    }

    @Test
    void badAliasesAreRejected() {
        TestApp app = newApp();
        record Case(String body, String field) {
        }
        for (Case c : List.of(new Case("{\"label\":\"bad label\",\"value\":\"v\"}", "label"),
                new Case("{\"label\":\"" + "l".repeat(81) + "\",\"value\":\"v\"}", "label"),
                new Case("{\"label\":\"ok\",\"value\":\"" + "v".repeat(191) + "\"}", "value"),
                new Case("{\"label\":\"ok\"}", "value"), new Case("{\"label\":7,\"value\":\"v\"}", "label"),
                new Case("{\"label\":\"ok\",\"value\":\"\"}", "value"))) {
            TestApi.Response r = api.post(path("al") + "/aliases", app.serverKey(), c.body());
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).contains(c.field());
        }
        assertError(api.get(path("al"), app.serverKey()), 404, "not_found");
        TestApi.Response noType = api.send(api.request(path("al") + "/aliases", app.serverKey())
                .method("DELETE", java.net.http.HttpRequest.BodyPublishers.ofString("{\"label\":\"a\",\"value\":\"b\"}")));
        assertError(noType, 415, "unsupported_media_type");
    }

    @Test
    void usersOfAnotherAppAreNotFound() {
        TestApp app = newApp();
        TestApp other = newApp();
        register(app, TestTokens.apns(), TestTokens.unique("private-"));
        api.patch(path("shared-name"), app.serverKey(), "{\"tags\":{\"owner\":\"app\"}}");
        assertError(api.get(path("shared-name"), other.serverKey()), 404, "not_found");
        assertError(api.delete(path("shared-name"), other.serverKey()), 404, "not_found");
        assertThat(api.get(path("shared-name"), app.serverKey()).json().path("tags").path("owner").asString()).isEqualTo("app");
    }
}
