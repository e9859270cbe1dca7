package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The migration page's Web Push import form (issue 28 part 4) over real HTTP: owners only, the same
 * service as {@code POST /v1/app/webpush/imports}, problems on the page with nothing changed, the
 * private key never in a page.
 */
class DashboardWebPushImportTests extends DashboardTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Autowired
    JdbcClient jdbc;

    private static String page(TestApp app) {
        return "/dashboard/apps/" + app.appId() + "/migration";
    }

    private static String action(TestApp app) {
        return page(app) + "/webpush";
    }

    private static ObjectNode row(String endpoint) {
        JsonNode s = JSON.readTree(TestTokens.webSubscription(endpoint));
        ObjectNode row = JSON.createObjectNode();
        row.put("endpoint", s.path("endpoint").asString());
        row.put("p256dh", s.path("keys").path("p256dh").asString());
        row.put("auth", s.path("keys").path("auth").asString());
        return row;
    }

    private static Map<String, String> form(VapidKeys pair, ObjectNode... rows) {
        ArrayNode list = JSON.createArrayNode();
        for (ObjectNode r : rows) list.add(r);
        return Map.of("vapid_public_key", pair.publicKeyBase64Url(), "vapid_private_key", pair.privateKeyBase64Url(),
                "subscriptions", list.toString());
    }

    private long count(String sql, TestApp app) {
        return jdbc.sql(sql).param("app", app.appId()).query(Long.class).single();
    }

    @Test
    void anOwnerImportsSubscriptionsWithThePreviousKeyPair() {
        TestApp app = newApp();
        DashboardClient owner = signedIn(app, MemberRole.OWNER);
        VapidKeys previous = VapidKeys.generate();
        assertThat(owner.get(page(app)).body()).contains("id=\"webpush-import\"", "type=\"password\"");

        HttpResponse<String> r = owner.submit(page(app), action(app), form(previous,
                row("https://push.example.com/a").put("external_user_id", "ann"), row("https://push.example.com/b")));

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body()).contains("id=\"webpush-imported\"", previous.publicKeyBase64Url())
                .doesNotContain(previous.privateKeyBase64Url());
        List<String> tokens = jdbc.sql("select token from devices where app_id = :app and platform = 'web'").param("app", app.appId())
                .query(String.class).list();
        assertThat(tokens).hasSize(2).allSatisfy(t ->
                assertThat(JSON.readTree(t).path("application_server_key").asString()).isEqualTo(previous.publicKeyBase64Url()));
        assertThat(count("select count(*) from audit_log where app_id = :app and action = 'webpush.import'"
                + " and actor = 'member' and member_id is not null", app)).isEqualTo(1);
        assertThat(count("select count(*) from audit_log t where app_id = :app and t::text like '%"
                + previous.privateKeyBase64Url() + "%'", app)).isZero();
    }

    /** (The dashboard tests allow insecure endpoints; WebPushImportGuardTests checks the SSRF guard with the defaults.) */
    @Test
    void aBadRowIsShownOnThePageAndNothingChanges() {
        TestApp app = newApp();
        DashboardClient owner = signedIn(app, MemberRole.OWNER);
        VapidKeys previous = VapidKeys.generate();

        HttpResponse<String> r = owner.submit(page(app), action(app), form(previous,
                row("https://push.example.com/a"), row("https://push.example.com/b").put("auth", "c2hvcnQ")));

        assertThat(r.statusCode()).isEqualTo(422);
        assertThat(r.body()).contains("id=\"webpush-refusal\"", "Nothing was imported", "subscriptions[1].auth")
                .doesNotContain(previous.privateKeyBase64Url());
        HttpResponse<String> notJson = owner.submit(page(app), action(app), Map.of("vapid_public_key", previous.publicKeyBase64Url(),
                "vapid_private_key", previous.privateKeyBase64Url(), "subscriptions", "[{"));
        assertThat(notJson.statusCode()).isEqualTo(422);
        assertThat(notJson.body()).contains("must be a JSON array").doesNotContain(previous.privateKeyBase64Url());
        assertThat(count("select count(*) from devices where app_id = :app", app)).isZero();
        assertThat(count("select count(*) from webpush_imported_keys where app_id = :app", app)).isZero();
        assertThat(count("select count(*) from audit_log where app_id = :app and action = 'webpush.import'", app)).isZero();
    }

    @Test
    void adminsAreRefusedAndOtherOrganisationsGetNotFound() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        DashboardClient admin = signedIn(app, MemberRole.ADMIN);
        assertThat(admin.get(page(app)).body()).doesNotContain("id=\"webpush-import\"");
        assertThat(admin.submit(page(app), action(app), form(previous, row("https://push.example.com/a"))).statusCode()).isEqualTo(403);

        TestApp other = newApp();
        DashboardClient outsider = signedIn(other, MemberRole.OWNER);
        assertThat(outsider.submit(page(other), action(app), form(previous, row("https://push.example.com/a"))).statusCode())
                .isEqualTo(404);
        assertThat(count("select count(*) from devices where app_id = :app", app)).isZero();
        assertThat(count("select count(*) from webpush_imported_keys where app_id = :app", app)).isZero();
    }
}
