package dev.pushservice.platform;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * U+0000 and unpaired surrogates, in every string and every key of every write route's body, are
 * one 422 naming the place, and nothing is stored (PostgreSQL cannot hold U+0000, and a lone
 * surrogate is not text). Each body below is valid as written; the test derives every variant
 * from it, so a field added to a body is covered without another line.
 */
class UnstorableTextTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** What is put into a string, as JSON escapes: U+0000, a lone high surrogate, a lone low surrogate. */
    private static final List<String> BAD = List.of("\\u0000", "\\ud800", "x\\udc00y");
    private static final String MARK = "@@BAD@@";

    @Autowired
    JdbcClient jdbc;

    record Route(String method, String path, boolean publicKey, String body) {
    }

    @Test
    void everyStringAndKeyOfEveryWriteRouteRefusesNulAndLoneSurrogatesAndStoresNothing() {
        TestApp app = newApp();
        String device = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"token-base\",\"external_user_id\":\"user-1\"}").json().path("device_id").asString();
        String segment = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"s\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}}").json().path("segment_id").asString();
        String template = api.post("/v1/templates", app.serverKey(),
                "{\"name\":\"t\",\"content\":{\"title\":\"Hi\",\"body\":\"B\"}}").json().path("template_id").asString();
        assertThat(List.of(device, segment, template)).doesNotContain("");
        List<Route> routes = List.of(
                new Route("POST", "/v1/devices/register", true, """
                        {"platform":"android","push_token":"token-2","external_user_id":"user-2","app_version":"1.0",
                         "device_model":"Pixel","os_version":"14","locale":"en","timezone":"Europe/Berlin","tags":{"plan":"pro","n":1}}"""),
                new Route("PATCH", "/v1/users/user-1", false, """
                        {"tags":{"plan":"team"},"properties":{"first_name":"Ada","nested":{"k":["v",{"deep":"w"}]}},
                         "locale":"de","timezone":"UTC"}"""),
                new Route("POST", "/v1/users/user-1/aliases", false, "{\"label\":\"email\",\"value\":\"ada@example.com\"}"),
                new Route("DELETE", "/v1/users/user-1/aliases", false, "{\"label\":\"email\",\"value\":\"ada@example.com\"}"),
                new Route("POST", "/v1/segments", false, """
                        {"name":"s","description":"d","filter":{"all":[{"field":"tag.plan","operator":"eq","value":"pro"},
                         {"field":"locale","operator":"in","value":["en","de"]}]}}"""),
                new Route("PATCH", "/v1/segments/" + segment, false, """
                        {"name":"s2","description":"d2","filter":{"field":"tag.plan","operator":"contains","value":"pr"}}"""),
                new Route("POST", "/v1/segments/estimate", false, "{\"filter\":{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"pro\"}}"),
                new Route("POST", "/v1/templates", false, """
                        {"name":"t","content":{"title":"Hi","body":"Body","click_url":"https://example.com/x",
                         "data":{"k":"v","list":["a"]}}}"""),
                new Route("PATCH", "/v1/templates/" + template, false, "{\"name\":\"t2\",\"content\":{\"title\":\"Hi2\",\"body\":\"B2\"}}"),
                new Route("POST", "/v1/events", true, "{\"event_type\":\"custom\",\"event_name\":\"checkout\",\"device_id\":\"" + device
                        + "\",\"metadata\":{\"k\":\"v\",\"list\":[\"a\"]}}"),
                new Route("PATCH", "/v1/app/settings", false, """
                        {"name":"app2","timezone":"UTC","identity_verification":{"required":false,"issuer":"https://issuer.example"}}"""));
        String before = snapshot(app);
        int variants = 0;
        for (Route route : routes) {
            JsonNode body = JSON.readTree(route.body());
            for (Variant variant : variants(body, "")) {
                for (String bad : BAD) {
                    String json = JSON.writeValueAsString(variant.body()).replace(MARK, bad);
                    TestApi.Response r = send(app, route, json);
                    if (variant.field().endsWith(MARK) && !bad.equals("\\u0000")) {
                        // a surrogate escape in a key is refused by the JSON parser itself: not JSON text it can read
                        assertError(r, 400, "malformed_request");
                        variants++;
                        continue;
                    }
                    assertThat(r.status()).as(route.method() + " " + route.path() + " " + json + " -> " + r.body()).isEqualTo(422);
                    assertError(r, 422, "validation_failed");
                    String expected = variant.field().replace(MARK, bad);
                    assertThat(r.json().path("error").path("details").findValuesAsString("field"))
                            .as(route.method() + " " + route.path() + " " + json + " -> " + r.body()).containsExactly(expected);
                    variants++;
                }
            }
        }
        assertThat(variants).isGreaterThan(150);
        assertThat(snapshot(app)).isEqualTo(before);
        // and the bodies themselves are fine: the refusals were about the bad text alone
        for (Route route : routes) {
            assertThat(send(app, route, route.body()).status()).as(route.toString()).isLessThan(300);
        }
    }

    @Test
    void queryParametersAndPathValuesRefuseNulAndLoneSurrogates() {
        TestApp app = newApp();
        TestApi.Response query = api.get("/v1/devices?platform=ios%00", app.serverKey());
        assertError(query, 422, "validation_failed");
        assertThat(query.json().path("error").path("details").findValuesAsString("field")).containsExactly("platform");
        TestApi.Response name = api.get("/v1/devices?x%00y=1", app.serverKey());
        assertError(name, 422, "validation_failed");
        assertThat(name.json().path("error").path("details").findValuesAsString("field")).containsExactly("x\\u0000y");
    }

    private TestApi.Response send(TestApp app, Route route, String json) {
        String key = route.publicKey() ? app.publicKey() : app.serverKey();
        return switch (route.method()) {
            case "POST" -> api.post(route.path(), key, json);
            case "PATCH" -> api.patch(route.path(), key, json);
            case "DELETE" -> api.delete(route.path(), key, json);
            default -> throw new IllegalArgumentException(route.method());
        };
    }

    record Variant(JsonNode body, String field) {
    }

    /** One copy of {@code node} per string value and per key, with {@link #MARK} appended to it, and the path it is at. */
    private static List<Variant> variants(JsonNode node, String path) {
        List<Variant> out = new ArrayList<>();
        if (node instanceof ObjectNode object) {
            for (Map.Entry<String, JsonNode> e : object.properties()) {
                String key = e.getKey();
                String at = path.isEmpty() ? key : path + "." + key;
                ObjectNode renamed = JSON.createObjectNode();
                object.properties().forEach(p -> renamed.set(p.getKey().equals(key) ? key + MARK : p.getKey(), p.getValue()));
                out.add(new Variant(renamed, at + MARK));
                for (Variant inner : variants(e.getValue(), at)) {
                    out.add(new Variant(object.deepCopy().set(key, inner.body()), inner.field()));
                }
            }
        } else if (node instanceof ArrayNode array) {
            for (int i = 0; i < array.size(); i++) {
                int index = i;
                for (Variant inner : variants(array.get(i), path + "[" + i + "]")) {
                    ArrayNode copy = array.deepCopy();
                    copy.set(index, inner.body());
                    out.add(new Variant(copy, inner.field()));
                }
            }
        } else if (node.isString()) {
            out.add(new Variant(JSON.getNodeFactory().stringNode(node.stringValue() + MARK), path));
        }
        return out;
    }

    /** Everything the app has stored, as text. */
    private String snapshot(TestApp app) {
        Function<String, String> rows = sql -> jdbc.sql("select coalesce(string_agg(r::text, '|' order by r::text), '') from (" + sql + ") r")
                .param("app", app.appId()).query(String.class).single();
        return String.join("\n",
                rows.apply("select * from apps where id = :app"),
                rows.apply("select * from devices where app_id = :app"),
                rows.apply("select * from users where app_id = :app"),
                rows.apply("select * from aliases where app_id = :app"),
                rows.apply("select * from events where app_id = :app"),
                rows.apply("select * from event_daily_counts where app_id = :app"),
                rows.apply("select * from device_event_last where app_id = :app"),
                rows.apply("select * from segments where app_id = :app"),
                rows.apply("select v.* from segment_versions v join segments s on s.id = v.segment_id where s.app_id = :app"),
                rows.apply("select * from templates where app_id = :app"),
                rows.apply("select * from template_versions where app_id = :app"));
    }
}
