package dev.pushservice.devices;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.notifications.PeerApiTest;
import dev.pushservice.support.TestApi;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Issue 28 part 4 through real HTTP: {@code POST /v1/app/webpush/imports} with a previous provider's
 * VAPID pair, the sends delivered to the local Web Push receiver, which decrypts each push and
 * verifies its VAPID JWT against the {@code k=} of the {@code Authorization} header (so
 * {@code vapidPublicKey()} is the key that really signed).
 */
class WebPushImportTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    private static ObjectNode row(LocalWebPushReceiver.Subscriber s) {
        JsonNode sub = JSON.readTree(s.json());
        ObjectNode row = JSON.createObjectNode();
        row.put("endpoint", sub.path("endpoint").asString());
        row.put("p256dh", sub.path("keys").path("p256dh").asString());
        row.put("auth", sub.path("keys").path("auth").asString());
        return row;
    }

    private static String body(VapidKeys pair, String privateKey, ObjectNode... rows) {
        ObjectNode body = JSON.createObjectNode();
        body.put("vapid_public_key", pair.publicKeyBase64Url());
        body.put("vapid_private_key", privateKey);
        ArrayNode list = body.putArray("subscriptions");
        for (ObjectNode r : rows) list.add(r);
        return body.toString();
    }

    private TestApi.Response importRows(TestApp app, VapidKeys pair, ObjectNode... rows) {
        return api.post("/v1/app/webpush/imports", app.serverKey(), body(pair, pair.privateKeyBase64Url(), rows));
    }

    private String appKey(TestApp app) {
        TestApi.Response r = api.get("/v1/app/webpush", app.publicKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json().path("vapid_public_key").asString();
    }

    private long webDevices(TestApp app) {
        return jdbc.sql("select count(*) from devices where app_id = :app and platform = 'web'")
                .param("app", app.appId()).query(Long.class).single();
    }

    /** Sends to every device of the app and waits for the result. */
    private void sendToAll(TestApp app) {
        String id = send(app, "{\"title\":\"Still here\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertThat(finished(app, id).path("status").asString()).isEqualTo("completed");
    }

    @Test
    void anImportedSubscriptionIsSignedWithTheImportedKeyAndARegisteredOneWithTheAppsKey() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        LocalWebPushReceiver.Subscriber imported = WEB.subscribe();
        LocalWebPushReceiver.Subscriber registered = WEB.subscribe();
        UUID registeredDevice = register(app, "web", registered.json(), "");
        String ownKey = appKey(app);
        assertThat(previous.publicKeyBase64Url()).isNotEqualTo(ownKey);

        ObjectNode r = row(imported).put("external_user_id", "ann");
        r.putObject("tags").put("plan", "pro");
        TestApi.Response response = importRows(app, previous, r);

        assertThat(response.status()).as(response.toString()).isEqualTo(200);
        assertThat(response.json().path("created").asInt()).isEqualTo(1);
        assertThat(response.json().path("updated").asInt()).isZero();
        assertThat(response.json().path("skipped").size()).isZero();
        assertThat(response.json().path("vapid_public_key").asString()).isEqualTo(previous.publicKeyBase64Url());
        assertThat(response.body()).doesNotContain(previous.privateKeyBase64Url());
        assertThat(webDevices(app)).isEqualTo(2);
        JsonNode ann = jdbc.sql("select u.tags::text as tags, u.external_user_id from devices d join users u on u.id = d.user_id"
                        + " where d.app_id = :app and d.id <> :registered")
                .param("app", app.appId()).param("registered", registeredDevice)
                .query((rs, n) -> JSON.createObjectNode().put("tags", rs.getString("tags")).put("user", rs.getString("external_user_id")))
                .single();
        assertThat(ann.path("user").asString()).isEqualTo("ann");
        assertThat(ann.path("tags").asString()).contains("\"plan\"").contains("\"pro\"");

        sendToAll(app);

        List<LocalWebPushReceiver.Received> toImported = WEB.received(imported.id());
        List<LocalWebPushReceiver.Received> toRegistered = WEB.received(registered.id());
        assertThat(toImported).hasSize(1);
        assertThat(toRegistered).hasSize(1);
        assertThat(toImported.getFirst().vapidPublicKey()).as("signed with the key it subscribed with")
                .isEqualTo(previous.publicKeyBase64Url());
        assertThat(JSON.readTree(toImported.getFirst().plaintextString()).path("title").asString()).isEqualTo("Still here");
        assertThat(toRegistered.getFirst().vapidPublicKey()).as("a registered browser: the app's key").isEqualTo(ownKey);

        // audited, without the private key; sealed at rest
        List<Map<String, Object>> audit = jdbc.sql("select target_type, target_id, changed_fields::text as fields, actor from audit_log"
                        + " where app_id = :app and action = 'webpush.import'").param("app", app.appId()).query().listOfRows();
        assertThat(audit).hasSize(1);
        assertThat(audit.getFirst().get("target_type")).isEqualTo("vapid_key");
        assertThat(audit.getFirst().get("target_id")).isEqualTo(previous.publicKeyBase64Url());
        assertThat(audit.getFirst().toString()).doesNotContain(previous.privateKeyBase64Url());
        byte[] secret = jdbc.sql("select secret from webpush_imported_keys where app_id = :app").param("app", app.appId())
                .query(byte[].class).single();
        assertThat(new String(secret, StandardCharsets.ISO_8859_1)).doesNotContain(previous.privateKeyBase64Url());
        assertThat(containsBytes(secret, Base64.getUrlDecoder().decode(previous.privateKeyBase64Url()))).isFalse();
        // and the device API never shows tokens or keys
        TestApi.Response devices = api.get("/v1/devices?platform=web", app.serverKey());
        assertThat(devices.body()).doesNotContain(previous.privateKeyBase64Url()).doesNotContain(imported.endpoint());
    }

    @Test
    void anEndpointAlreadyRegisteredIsUpdatedNotDuplicatedAndARepeatedRowIsSkipped() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        register(app, "web", browser.json(), "");

        TestApi.Response response = importRows(app, previous, row(browser), row(browser));

        assertThat(response.status()).as(response.toString()).isEqualTo(200);
        assertThat(response.json().path("received").asInt()).isEqualTo(2);
        assertThat(response.json().path("created").asInt()).isZero();
        assertThat(response.json().path("updated").asInt()).isEqualTo(1);
        assertThat(response.json().path("skipped").size()).isEqualTo(1);
        assertThat(response.json().path("skipped").get(0).path("index").asInt()).isEqualTo(1);
        assertThat(response.json().path("skipped").get(0).path("reason").asString()).contains("repeats");
        assertThat(webDevices(app)).as("one device per endpoint").isEqualTo(1);

        sendToAll(app);
        assertThat(WEB.received(browser.id())).hasSize(1);
        assertThat(WEB.received(browser.id()).getFirst().vapidPublicKey()).isEqualTo(previous.publicKeyBase64Url());

        // importing the same pair again keeps one stored pair and one device
        TestApi.Response again = importRows(app, previous, row(browser));
        assertThat(again.status()).as(again.toString()).isEqualTo(200);
        assertThat(again.json().path("updated").asInt()).isEqualTo(1);
        assertThat(webDevices(app)).isEqualTo(1);
        assertThat(jdbc.sql("select count(*) from webpush_imported_keys where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isEqualTo(1);
    }

    @Test
    void badRowsRefuseTheWholeImportWithA422AndChangeNothing() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        LocalWebPushReceiver.Subscriber good = WEB.subscribe();
        ObjectNode badKey = row(WEB.subscribe()).put("p256dh", "AAAA");
        ObjectNode badEndpoint = row(WEB.subscribe()).put("endpoint", "ftp://push.example/x");
        ObjectNode noAuth = row(WEB.subscribe());
        noAuth.remove("auth");
        ObjectNode badTags = row(WEB.subscribe());
        badTags.putObject("tags").putArray("nested");

        TestApi.Response r = importRows(app, previous, row(good), badKey, badEndpoint, noAuth, badTags);

        assertThat(r.status()).as(r.toString()).isEqualTo(422);
        assertThat(r.errorCode()).isEqualTo("validation_failed");
        assertThat(r.json().path("error").path("details").findValuesAsString("field")).contains(
                "subscriptions[1].p256dh", "subscriptions[2].endpoint", "subscriptions[3].auth", "subscriptions[4].tags.nested");
        assertThat(r.body()).doesNotContain(previous.privateKeyBase64Url());
        assertNothingChanged(app);

        // a private key that is not the public key's: refused, nothing stored, the key never echoed
        VapidKeys other = VapidKeys.generate();
        TestApi.Response mismatch = api.post("/v1/app/webpush/imports", app.serverKey(),
                body(previous, other.privateKeyBase64Url(), row(good)));
        assertThat(mismatch.status()).as(mismatch.toString()).isEqualTo(422);
        assertThat(mismatch.json().path("error").path("details").findValuesAsString("field")).contains("vapid_private_key");
        assertThat(mismatch.body()).doesNotContain(other.privateKeyBase64Url());
        assertNothingChanged(app);

        // public client keys cannot import (the body carries a private key and skips identity tokens)
        TestApi.Response withPublicKey = api.post("/v1/app/webpush/imports", app.publicKey(),
                body(previous, previous.privateKeyBase64Url(), row(good)));
        assertThat(withPublicKey.status()).as(withPublicKey.toString()).isEqualTo(403);
        assertNothingChanged(app);
    }

    private void assertNothingChanged(TestApp app) {
        assertThat(webDevices(app)).isZero();
        assertThat(jdbc.sql("select count(*) from webpush_imported_keys where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isZero();
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app and action = 'webpush.import'")
                .param("app", app.appId()).query(Long.class).single()).isZero();
    }

    @Test
    void anotherAppsImportedKeyIsNeverUsedAndARegistrationMayNameOnlyTheAppsKeys() {
        TestApp a = newApp();
        TestApp b = newApp();
        VapidKeys previous = VapidKeys.generate();
        assertThat(importRows(a, previous, row(WEB.subscribe())).status()).isEqualTo(200);

        // a browser of app B whose subscription names A's imported key: refused at registration (B holds no such pair)
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        ObjectNode token = (ObjectNode) JSON.readTree(browser.json());
        token.put("application_server_key", previous.publicKeyBase64Url());
        TestApi.Response refused = api.post("/v1/devices/register", b.publicKey(),
                "{\"platform\":\"web\",\"push_token\":" + JSON.writeValueAsString(token.toString()) + "}");
        assertThat(refused.status()).as(refused.toString()).isEqualTo(422);
        assertThat(refused.json().path("error").path("details").findValuesAsString("field")).containsExactly("push_token");
        assertThat(webDevices(b)).isZero();
        // naming B's own key, or A's imported key in A, is accepted and signs with that key
        ObjectNode own = (ObjectNode) JSON.readTree(browser.json());
        own.put("application_server_key", appKey(b));
        register(b, "web", own.toString(), "");
        LocalWebPushReceiver.Subscriber inA = WEB.subscribe();
        ObjectNode namedInA = (ObjectNode) JSON.readTree(inA.json());
        namedInA.put("application_server_key", previous.publicKeyBase64Url());
        register(a, "web", namedInA.toString(), "");
        sendToAll(b);
        sendToAll(a);
        assertThat(WEB.received(browser.id())).hasSize(1);
        assertThat(WEB.received(browser.id()).getFirst().vapidPublicKey()).isEqualTo(appKey(b));
        assertThat(WEB.received(inA.id())).hasSize(1);
        assertThat(WEB.received(inA.id()).getFirst().vapidPublicKey()).isEqualTo(previous.publicKeyBase64Url());

        // and B cannot import A's public key without its private key
        TestApi.Response r = api.post("/v1/app/webpush/imports", b.serverKey(),
                body(previous, VapidKeys.generate().privateKeyBase64Url(), row(WEB.subscribe())));
        assertThat(r.status()).as(r.toString()).isEqualTo(422);
        assertThat(jdbc.sql("select count(*) from webpush_imported_keys where app_id = :app").param("app", b.appId())
                .query(Long.class).single()).isZero();
    }

    @Test
    void anImportedSubscriptionRegisteredAgainWithoutAKeyKeepsTheImportedKey() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        assertThat(importRows(app, previous, row(browser)).status()).isEqualTo(200);

        // page code that registers subscription.toJSON() (no key) refreshes the device, keeping its key
        TestApi.Response again = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"web\",\"push_token\":" + JSON.writeValueAsString(browser.json()) + "}");
        assertThat(again.status()).as(again.toString()).isEqualTo(200);
        assertThat(webDevices(app)).isEqualTo(1);

        sendToAll(app);
        assertThat(WEB.received(browser.id())).hasSize(1);
        assertThat(WEB.received(browser.id()).getFirst().vapidPublicKey()).isEqualTo(previous.publicKeyBase64Url());
    }

    @Test
    void aRegisteredWebDeviceRecordsTheKeyItSubscribedWith() {
        TestApp app = newApp();
        UUID device = register(app, "web", WEB.subscribe().json(), "");
        String token = jdbc.sql("select token from devices where id = :id").param("id", device).query(String.class).single();
        assertThat(JSON.readTree(token).path("application_server_key").asString()).isEqualTo(appKey(app));
    }

    private static boolean containsBytes(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) if (haystack[i + j] != needle[j]) continue outer;
            return true;
        }
        return false;
    }
}
