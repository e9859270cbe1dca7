package dev.pushservice.templates;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class TemplateTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String SIMPLE = "{\"name\":\"welcome\",\"content\":{\"title\":\"Hi\",\"body\":\"Hello there\"}}";

    @Autowired
    TemplateService service;

    @Autowired
    JdbcClient jdbc;

    TestApi.Response create(TestApp app, String body) {
        return api.post("/v1/templates", app.serverKey(), body);
    }

    String createId(TestApp app, String body) {
        TestApi.Response r = create(app, body);
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("template_id").asString();
    }

    static void assertFieldError(TestApi.Response r, String field) {
        assertError(r, 422, "validation_failed");
        assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(r.toString()).contains(field);
    }

    JsonNode list(TestApp app) {
        TestApi.Response r = api.get("/v1/templates", app.serverKey());
        assertThat(r.status()).isEqualTo(200);
        return r.json().path("data");
    }

    List<Map<String, Object>> storedVersions(String templateId) {
        return jdbc.sql("select version, name, status, content::text as content from template_versions "
                        + "where template_id = :id order by version")
                .param("id", UUID.fromString(templateId)).query().listOfRows();
    }

    @Test
    void createdTemplateIsReadBackAndListedAsMetadata() {
        TestApp app = newApp();
        TestApi.Response created = create(app, """
                {"name":"Order shipped","status":"published","content":{"title":"Hi {{ tags.first_name }}",
                 "body":"Order {{ template.order_id }} is on its way to {{ properties.address.city }}",
                 "click_url":"myapp://orders/{{ template.order_id }}?u={{external_user_id}}",
                 "data":{"screen":"order","ids":["{{ template.order_id }}",7],"nested":{"x":null}},
                 "interruption_level":"time_sensitive"}}""");
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        JsonNode t = created.json();
        assertThat(t.path("name").asString()).isEqualTo("Order shipped");
        assertThat(t.path("status").asString()).isEqualTo("published");
        assertThat(t.path("version").asInt()).isEqualTo(1);
        assertThat(t.path("content").path("title").asString()).isEqualTo("Hi {{ tags.first_name }}");
        assertThat(t.path("content").path("click_url").asString()).isEqualTo("myapp://orders/{{ template.order_id }}?u={{external_user_id}}");
        assertThat(t.path("content").path("data")).isEqualTo(JSON.readTree(
                "{\"screen\":\"order\",\"ids\":[\"{{ template.order_id }}\",7],\"nested\":{\"x\":null}}"));
        assertThat(t.path("content").path("interruption_level").asString()).isEqualTo("time_sensitive");
        assertThat(created.body()).doesNotContain(app.appId().toString());

        String id = t.path("template_id").asString();
        TestApi.Response detail = api.get("/v1/templates/" + id, app.serverKey());
        assertThat(detail.status()).isEqualTo(200);
        assertThat(detail.json()).isEqualTo(t);

        String second = createId(app, SIMPLE);
        JsonNode data = list(app);
        assertThat(data.findValuesAsString("template_id")).as("newest first").containsExactly(second, id);
        assertThat(data.get(0).path("status").asString()).as("draft by default").isEqualTo("draft");
        assertThat(data.get(1).has("content")).as("the list is metadata only").isFalse();
        TestApi.Response firstPage = api.get("/v1/templates?limit=1", app.serverKey());
        assertThat(firstPage.json().path("data")).hasSize(1);
        assertThat(firstPage.json().path("pagination").path("has_more").asBoolean()).isTrue();
        TestApi.Response secondPage = api.get("/v1/templates?limit=1&page=2", app.serverKey());
        assertThat(secondPage.json().path("data").get(0).path("template_id").asString()).isEqualTo(id);
        assertThat(secondPage.json().path("pagination").path("has_more").asBoolean()).isFalse();
        assertFieldError(api.get("/v1/templates?limit=0", app.serverKey()), "limit");
    }

    @Test
    void unsetOptionalContentFieldsReadAsNull() {
        TestApp app = newApp();
        JsonNode content = create(app, SIMPLE).json().path("content");
        assertThat(content.path("click_url").isNull()).isTrue();
        assertThat(content.path("data").isNull()).isTrue();
        assertThat(content.path("interruption_level").isNull()).isTrue();
    }

    @Test
    void everyPatchCreatesANewVersionAndKeepsTheOldOnes() {
        TestApp app = newApp();
        String id = createId(app, SIMPLE);
        String path = "/v1/templates/" + id;

        TestApi.Response renamed = api.patch(path, app.serverKey(), "{\"name\":\"renamed\"}");
        assertThat(renamed.status()).as(renamed.toString()).isEqualTo(200);
        assertThat(renamed.json().path("version").asInt()).isEqualTo(2);
        assertThat(renamed.json().path("name").asString()).isEqualTo("renamed");
        assertThat(renamed.json().path("content").path("title").asString()).isEqualTo("Hi");

        TestApi.Response published = api.patch(path, app.serverKey(), "{\"status\":\"published\"}");
        assertThat(published.json().path("version").asInt()).isEqualTo(3);
        assertThat(published.json().path("status").asString()).isEqualTo("published");
        assertThat(published.json().path("name").asString()).isEqualTo("renamed");

        TestApi.Response same = api.patch(path, app.serverKey(), "{\"status\":\"published\"}");
        assertThat(same.json().path("version").asInt()).as("an update changing nothing still versions").isEqualTo(4);

        TestApi.Response rewritten = api.patch(path, app.serverKey(), "{\"content\":{\"title\":\"New\",\"body\":\"New body\"}}");
        assertThat(rewritten.json().path("version").asInt()).isEqualTo(5);
        assertThat(rewritten.json().path("content").path("title").asString()).isEqualTo("New");
        assertThat(Instant.parse(rewritten.json().path("updated_at").asString()))
                .isAfter(Instant.parse(renamed.json().path("updated_at").asString()));
        assertThat(rewritten.json().path("created_at").asString()).isEqualTo(renamed.json().path("created_at").asString());

        assertThat(api.get(path, app.serverKey()).json()).isEqualTo(rewritten.json());
        assertThat(list(app).get(0).path("version").asInt()).isEqualTo(5);

        List<Map<String, Object>> versions = storedVersions(id);
        assertThat(versions).extracting(v -> v.get("version")).containsExactly(1, 2, 3, 4, 5);
        assertThat(versions).extracting(v -> v.get("name")).containsExactly("welcome", "renamed", "renamed", "renamed", "renamed");
        assertThat(versions).extracting(v -> v.get("status")).containsExactly("draft", "draft", "published", "published", "published");
        assertThat(JSON.readTree((String) versions.get(0).get("content")))
                .isEqualTo(JSON.readTree("{\"title\":\"Hi\",\"body\":\"Hello there\"}"));
        assertThat(JSON.readTree((String) versions.get(4).get("content")))
                .isEqualTo(JSON.readTree("{\"title\":\"New\",\"body\":\"New body\"}"));
    }

    @Test
    void suppliedContentReplacesThePreviousContentWhole() {
        TestApp app = newApp();
        String id = createId(app, """
                {"name":"full","content":{"title":"T","body":"B","click_url":"https://example.com/a",
                 "data":{"k":"v"},"interruption_level":"critical"}}""");
        TestApi.Response r = api.patch("/v1/templates/" + id, app.serverKey(), "{\"content\":{\"title\":\"T2\",\"body\":\"B2\"}}");
        assertThat(r.status()).isEqualTo(200);
        JsonNode content = r.json().path("content");
        assertThat(content.path("title").asString()).isEqualTo("T2");
        assertThat(content.path("click_url").isNull()).as("a removed click_url is gone").isTrue();
        assertThat(content.path("data").isNull()).isTrue();
        assertThat(content.path("interruption_level").isNull()).isTrue();
        assertThat(service.forNotification(app.appId(), UUID.fromString(id)).content())
                .isEqualTo(new TemplateContent("T2", "B2", null, null, null));
    }

    @Test
    void deleteArchivesAndArchivedTemplatesCannotCreateNotifications() {
        TestApp app = newApp();
        String id = createId(app, SIMPLE);
        UUID uuid = UUID.fromString(id);
        assertThat(service.forNotification(app.appId(), uuid).version()).isEqualTo(1);

        TestApi.Response deleted = api.delete("/v1/templates/" + id, app.serverKey());
        assertThat(deleted.status()).as(deleted.toString()).isEqualTo(200);
        assertThat(deleted.json().path("deleted").asBoolean()).isTrue();
        assertThat(deleted.json().path("status").asString()).isEqualTo("archived");
        assertThat(deleted.json().path("version").asInt()).isEqualTo(2);
        TestApi.Response read = api.get("/v1/templates/" + id, app.serverKey());
        assertThat(read.json().path("status").asString()).as("archived, not removed").isEqualTo("archived");
        assertThat(read.json().path("content").path("body").asString()).isEqualTo("Hello there");
        assertThat(list(app).get(0).path("status").asString()).isEqualTo("archived");
        assertArchivedFor(app, uuid);

        TestApi.Response again = api.delete("/v1/templates/" + id, app.serverKey());
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("version").asInt()).as("archiving an archived template adds no version").isEqualTo(2);

        TestApi.Response restored = api.patch("/v1/templates/" + id, app.serverKey(), "{\"status\":\"draft\"}");
        assertThat(restored.json().path("status").asString()).isEqualTo("draft");
        assertThat(restored.json().path("version").asInt()).isEqualTo(3);
        TemplateSnapshot snapshot = service.forNotification(app.appId(), uuid);
        assertThat(snapshot.version()).isEqualTo(3);
        assertThat(Renderer.render(snapshot.compiled(), Renderer.Values.NONE).body()).isEqualTo("Hello there");

        TestApi.Response archived = api.patch("/v1/templates/" + id, app.serverKey(), "{\"status\":\"archived\"}");
        assertThat(archived.json().path("status").asString()).isEqualTo("archived");
        assertThat(archived.json().path("version").asInt()).isEqualTo(4);
        assertArchivedFor(app, uuid);
    }

    private void assertArchivedFor(TestApp app, UUID templateId) {
        assertThatThrownBy(() -> service.forNotification(app.appId(), templateId))
                .isInstanceOfSatisfying(InvalidInput.class, e -> {
                    assertThat(e.violations()).singleElement().satisfies(d -> {
                        assertThat(d.field()).isEqualTo("template_id");
                        assertThat(d.message()).contains("archived");
                    });
                });
    }

    @Test
    void forNotificationRendersTheCurrentSnapshotAndRefusesUnknownTemplates() {
        TestApp app = newApp();
        TestApp other = newApp();
        String id = createId(app, """
                {"name":"n","status":"published","content":{"title":"Hi {{ tags.name }}","body":"{{ template.code }}",
                 "data":{"u":"{{ external_user_id }}"},"interruption_level":"passive"}}""");
        TemplateSnapshot snapshot = service.forNotification(app.appId(), UUID.fromString(id));
        RenderedContent out = Renderer.render(snapshot.compiled(), new Renderer.Values("u1", Map.of("name", "Ann"), null,
                JSON.readTree("{\"code\":\"C-1\"}")));
        assertThat(out).isEqualTo(new RenderedContent("Hi Ann", "C-1", null, JSON.readTree("{\"u\":\"u1\"}"), "passive"));

        for (UUID unknown : List.of(UUID.randomUUID(), UUID.fromString(createId(other, SIMPLE)))) {
            assertThatThrownBy(() -> service.forNotification(app.appId(), unknown))
                    .isInstanceOfSatisfying(InvalidInput.class, e -> {
                        assertThat(e.violations()).extracting(d -> d.field()).containsExactly("template_id");
                    });
        }
    }

    @Test
    void everyPlaceholderSourceIsAccepted() {
        TestApp app = newApp();
        TestApi.Response r = create(app, """
                {"name":"p","content":{"title":"{{external_user_id}} {{ tags.a.b-c_d }}","body":"{{\\tproperties.x.y\\t}} {{ template.z }}",
                 "click_url":"https://e.com/{{ template.path }}","data":{"a":["{{ tags.t }}"]}}}""");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
    }

    @Test
    void brokenPlaceholdersAreRefusedNamingTheFieldAndNothingIsStored() {
        TestApp app = newApp();
        record Case(String content, String field, String says) {
        }
        for (Case c : List.of(
                new Case("{\"title\":\"{{\",\"body\":\"b\"}", "content.title", "not closed"),
                new Case("{\"title\":\"t\",\"body\":\"Hi {{ tags. }}\"}", "content.body", "has no key"),
                new Case("{\"title\":\"{{ nope.x }}\",\"body\":\"b\"}", "content.title", "unknown placeholder source 'nope'"),
                new Case("{\"title\":\"t\",\"body\":\"{{ }}\"}", "content.body", "empty placeholder"),
                new Case("{\"title\":\"t\",\"body\":\"{{}}\"}", "content.body", "empty placeholder"),
                new Case("{\"title\":\"t\",\"body\":\"{{ name\"}", "content.body", "not closed"),
                new Case("{\"title\":\"t\",\"body\":\"b }}\"}", "content.body", "no opening"),
                new Case("{\"title\":\"t\",\"body\":\"b\",\"click_url\":\"https://x/{{ tags }}\"}", "content.click_url", "has no key"),
                new Case("{\"title\":\"t\",\"body\":\"b\",\"data\":{\"l\":[\"ok\",{\"d\":\"{{ nope.y }}\"}]}}",
                        "content.data.l[1].d", "unknown placeholder source"))) {
            TestApi.Response r = create(app, "{\"name\":\"bad\",\"content\":" + c.content() + "}");
            assertFieldError(r, c.field());
            JsonNode detail = r.json().path("error").path("details").get(0);
            assertThat(detail.path("message").asString()).as(c.content()).contains(c.says()).contains("character");
        }
        assertThat(list(app)).as("nothing stored").isEmpty();

        TestApi.Response all = create(app, "{\"name\":\"bad\",\"content\":{\"title\":\"{{\",\"body\":\"}}\",\"data\":{\"a\":\"{{ x.y }}\"}}}");
        assertThat(all.json().path("error").path("details").findValuesAsString("field"))
                .as("every problem in one answer").containsExactly("content.title", "content.body", "content.data.a");

        String id = createId(app, SIMPLE);
        assertFieldError(api.patch("/v1/templates/" + id, app.serverKey(),
                "{\"name\":\"changed\",\"content\":{\"title\":\"{{ tags. }}\",\"body\":\"b\"}}"), "content.title");
        JsonNode unchanged = api.get("/v1/templates/" + id, app.serverKey()).json();
        assertThat(unchanged.path("version").asInt()).isEqualTo(1);
        assertThat(unchanged.path("name").asString()).isEqualTo("welcome");
        assertThat(storedVersions(id)).hasSize(1);
    }

    @Test
    void interruptionLevelIsValidated() {
        TestApp app = newApp();
        for (String level : List.of("passive", "active", "time_sensitive", "critical")) {
            TestApi.Response r = create(app, "{\"name\":\"l\",\"content\":{\"title\":\"t\",\"body\":\"b\",\"interruption_level\":\"" + level + "\"}}");
            assertThat(r.json().path("content").path("interruption_level").asString()).isEqualTo(level);
        }
        for (String level : List.of("\"loud\"", "\"Critical\"", "\"\"", "3", "true")) {
            assertFieldError(create(app, "{\"name\":\"l\",\"content\":{\"title\":\"t\",\"body\":\"b\",\"interruption_level\":" + level + "}}"),
                    "content.interruption_level");
        }
        assertThat(list(app)).hasSize(4);
    }

    @Test
    void wrongTypesAndOutOfRangeValuesAreRefusedAndNothingIsStored() {
        TestApp app = newApp();
        String ok = "\"title\":\"t\",\"body\":\"b\"";
        record Case(String body, String field) {
        }
        for (Case c : List.of(
                new Case("{\"content\":{" + ok + "}}", "name"),
                new Case("{\"name\":5,\"content\":{" + ok + "}}", "name"),
                new Case("{\"name\":\"  \",\"content\":{" + ok + "}}", "name"),
                new Case("{\"name\":\"" + "n".repeat(191) + "\",\"content\":{" + ok + "}}", "name"),
                new Case("{\"name\":\"tab\\there\",\"content\":{" + ok + "}}", "name"),
                new Case("{\"name\":\"n\",\"status\":5,\"content\":{" + ok + "}}", "status"),
                new Case("{\"name\":\"n\",\"status\":\"archived\",\"content\":{" + ok + "}}", "status"),
                new Case("{\"name\":\"n\",\"status\":\"live\",\"content\":{" + ok + "}}", "status"),
                new Case("{\"name\":\"n\"}", "content"),
                new Case("{\"name\":\"n\",\"content\":null}", "content"),
                new Case("{\"name\":\"n\",\"content\":\"t\"}", "content"),
                new Case("{\"name\":\"n\",\"content\":[]}", "content"),
                new Case("{\"name\":\"n\",\"content\":{\"body\":\"b\"}}", "content.title"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":5,\"body\":\"b\"}}", "content.title"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"\",\"body\":\"b\"}}", "content.title"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"" + "t".repeat(251) + "\",\"body\":\"b\"}}", "content.title"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"t\"}}", "content.body"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"t\",\"body\":null}}", "content.body"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"t\",\"body\":{\"a\":1}}}", "content.body"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"t\",\"body\":\"" + "b".repeat(4097) + "\"}}", "content.body"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":5}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"https://x/\\nEvil\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"https://x/" + "u".repeat(2040) + "\"}}", "content.click_url"),
                // the notification URL rule (docs/api-decisions.md, "Notification URLs") and its text rule
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"javascript:alert(1)\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"data:text/html,x\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"http://x/y\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"x/y\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"click_url\":\"{{ template.url }}\"}}", "content.click_url"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"a\\u0007b\",\"body\":\"b\"}}", "content.title"),
                new Case("{\"name\":\"n\",\"content\":{\"title\":\"t\",\"body\":\"\\u001b[1mb\"}}", "content.body"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"data\":\"x\"}}", "content.data"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"data\":[1]}}", "content.data"),
                new Case("{\"name\":\"n\",\"content\":{" + ok + ",\"data\":{\"big\":\"" + "d".repeat(16 * 1024) + "\"}}}", "content.data"))) {
            assertFieldError(create(app, c.body()), c.field());
        }
        assertError(api.post("/v1/templates", app.serverKey(), "[1]"), 400, "malformed_request");
        assertError(api.post("/v1/templates", app.serverKey(), "{\"name\":"), 400, "malformed_request");
        assertThat(list(app)).as("nothing stored").isEmpty();
        assertThat(create(app, "{\"name\":\"" + "n".repeat(190) + "\",\"content\":{\"title\":\"" + "t".repeat(250)
                + "\",\"body\":\"" + "b".repeat(4096) + "\",\"click_url\":\"https://x/" + "u".repeat(2038) + "\"}}").status())
                .as("the limits themselves are allowed").isEqualTo(201);
        assertThat(create(app, "{\"name\":\"lines\",\"content\":{\"title\":\"t\\tt\",\"body\":\"a\\nb\\r\\nc\","
                + "\"click_url\":\"myapp:inbox\"}}").status()).as("line breaks and tabs, a deep link").isEqualTo(201);
    }

    @Test
    void badPatchesAreRefusedAndChangeNothing() {
        TestApp app = newApp();
        String id = createId(app, SIMPLE);
        String path = "/v1/templates/" + id;
        record Case(String body, String field) {
        }
        for (Case c : List.of(
                new Case("{\"name\":null}", "name"),
                new Case("{\"name\":\"\"}", "name"),
                new Case("{\"name\":7}", "name"),
                new Case("{\"name\":\"bell\\u0007\"}", "name"),
                new Case("{\"status\":null}", "status"),
                new Case("{\"status\":\"deleted\"}", "status"),
                new Case("{\"status\":[\"draft\"]}", "status"),
                new Case("{\"content\":null}", "content"),
                new Case("{\"content\":{\"title\":\"only title\"}}", "content.body"),
                new Case("{\"name\":\"fine\",\"content\":{\"title\":\"t\",\"body\":\"b\",\"interruption_level\":\"x\"}}",
                        "content.interruption_level"))) {
            assertFieldError(api.patch(path, app.serverKey(), c.body()), c.field());
        }
        assertError(api.patch(path, app.serverKey(), "{}"), 422, "validation_failed");
        assertError(api.patch(path, app.serverKey(), "\"x\""), 400, "malformed_request");
        assertThat(storedVersions(id)).as("no version added").hasSize(1);
        assertThat(api.get(path, app.serverKey()).json().path("name").asString()).isEqualTo("welcome");

        assertError(api.patch("/v1/templates/" + UUID.randomUUID(), app.serverKey(), "{\"name\":\"x\"}"), 404, "not_found");
        assertFieldError(api.patch("/v1/templates/not-a-uuid", app.serverKey(), "{\"name\":\"x\"}"), "template_id");
        assertFieldError(api.get("/v1/templates/not-a-uuid", app.serverKey()), "template_id");
        assertError(api.delete("/v1/templates/" + UUID.randomUUID(), app.serverKey()), 404, "not_found");
    }

    @Test
    void anotherAppsTemplateIsNotFound() {
        TestApp owner = newApp();
        TestApp stranger = newApp();
        String id = createId(owner, SIMPLE);
        String path = "/v1/templates/" + id;
        assertError(api.get(path, stranger.serverKey()), 404, "not_found");
        assertError(api.patch(path, stranger.serverKey(), "{\"name\":\"mine\"}"), 404, "not_found");
        assertError(api.delete(path, stranger.serverKey()), 404, "not_found");
        assertThat(list(stranger)).isEmpty();
        JsonNode intact = api.get(path, owner.serverKey()).json();
        assertThat(intact.path("version").asInt()).isEqualTo(1);
        assertThat(intact.path("status").asString()).isEqualTo("draft");
    }

    @Test
    void scopesAreEnforcedAndPublicKeysRefused() {
        TestApp app = newApp();
        String id = createId(app, SIMPLE);
        String path = "/v1/templates/" + id;
        assertError(api.get("/v1/templates", app.publicKey()), 403, "forbidden");
        assertError(api.get(path, app.publicKey()), 403, "forbidden");
        assertError(api.post("/v1/templates", app.publicKey(), SIMPLE), 403, "forbidden");
        assertError(api.patch(path, app.publicKey(), "{\"name\":\"x\"}"), 403, "forbidden");
        assertError(api.delete(path, app.publicKey()), 403, "forbidden");

        String reader = serverKey(app, Scope.NOTIFICATIONS_READ);
        assertThat(api.get("/v1/templates", reader).status()).isEqualTo(200);
        assertThat(api.get(path, reader).status()).isEqualTo(200);
        assertError(api.post("/v1/templates", reader, SIMPLE), 403, "forbidden");
        assertError(api.patch(path, reader, "{\"name\":\"x\"}"), 403, "forbidden");
        assertError(api.delete(path, reader), 403, "forbidden");

        String writer = serverKey(app, Scope.NOTIFICATIONS_WRITE);
        assertError(api.get(path, writer), 403, "forbidden");
        assertThat(api.patch(path, writer, "{\"name\":\"x\"}").status()).isEqualTo(200);
        assertError(api.get("/v1/templates", null), 401, "unauthorized");
        assertThat(storedVersions(id)).hasSize(2);
    }

    @Test
    void concurrentPatchesGetDistinctGapFreeVersions() throws Exception {
        TestApp app = newApp();
        String id = createId(app, SIMPLE);
        int n = 12;
        List<java.util.concurrent.Future<TestApi.Response>> answers;
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(n)) {
            answers = pool.invokeAll(java.util.stream.IntStream.range(0, n)
                    .<java.util.concurrent.Callable<TestApi.Response>>mapToObj(i -> () ->
                            api.patch("/v1/templates/" + id, app.serverKey(), "{\"name\":\"n" + i + "\"}"))
                    .toList());
        }
        List<Integer> versions = new java.util.ArrayList<>();
        for (var answer : answers) {
            TestApi.Response r = answer.get();
            assertThat(r.status()).as(r.toString()).isEqualTo(200);
            versions.add(r.json().path("version").asInt());
        }
        assertThat(versions).containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.rangeClosed(2, n + 1).boxed().toList());
        assertThat(storedVersions(id)).hasSize(n + 1);
    }
}
