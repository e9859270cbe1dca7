package dev.pushservice.segments;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class SegmentTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String IOS = "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}";
    private static final String GOLD = "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}";

    @Autowired
    SegmentService service;
    @Autowired
    JdbcClient jdbc;

    private TestApi.Response create(TestApp app, String name, String filter) {
        return api.post("/v1/segments", app.serverKey(), "{\"name\":\"" + name + "\",\"filter\":" + filter + "}");
    }

    @Test
    void createAnswersVersionOneWithTheFilter() {
        TestApp app = newApp();
        TestApi.Response r = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"iOS gold\",\"description\":\"paying iOS users\",\"filter\":{\"all\":[" + IOS + "," + GOLD + "]}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        JsonNode s = r.json();
        assertThat(s.path("version").asInt()).isEqualTo(1);
        assertThat(s.path("status").asString()).isEqualTo("active");
        assertThat(s.path("name").asString()).isEqualTo("iOS gold");
        assertThat(s.path("description").asString()).isEqualTo("paying iOS users");
        assertThat(s.path("filter")).isEqualTo(JSON.readTree("{\"all\":[" + IOS + "," + GOLD + "]}"));
        String id = s.path("segment_id").asString();
        TestApi.Response read = api.get("/v1/segments/" + id, app.serverKey());
        assertThat(read.status()).isEqualTo(200);
        assertThat(read.json()).isEqualTo(s);
    }

    @Test
    void patchAddsAnImmutableVersionAndGetShowsTheCurrentOne() {
        TestApp app = newApp();
        String id = create(app, "first", IOS).json().path("segment_id").asString();

        TestApi.Response v2 = api.patch("/v1/segments/" + id, app.serverKey(), "{\"filter\":" + GOLD + "}");
        assertThat(v2.status()).as(v2.toString()).isEqualTo(200);
        assertThat(v2.json().path("version").asInt()).isEqualTo(2);
        assertThat(v2.json().path("filter")).isEqualTo(JSON.readTree(GOLD));
        assertThat(v2.json().path("name").asString()).isEqualTo("first");

        TestApi.Response v3 = api.patch("/v1/segments/" + id, app.serverKey(), "{\"name\":\"renamed\",\"description\":\"d\"}");
        assertThat(v3.json().path("version").asInt()).isEqualTo(3);
        assertThat(v3.json().path("filter")).isEqualTo(JSON.readTree(GOLD));
        TestApi.Response v4 = api.patch("/v1/segments/" + id, app.serverKey(), "{\"description\":null}");
        assertThat(v4.json().path("version").asInt()).isEqualTo(4);
        assertThat(v4.json().path("description").isNull()).isTrue();
        assertThat(v4.json().path("name").asString()).isEqualTo("renamed");

        JsonNode current = api.get("/v1/segments/" + id, app.serverKey()).json();
        assertThat(current.path("version").asInt()).isEqualTo(4);
        assertThat(current.path("filter")).isEqualTo(JSON.readTree(GOLD));

        // every version stays as it was: what a notification snapshots
        UUID segmentId = UUID.fromString(id);
        assertThat(service.version(app.appId(), segmentId, 1).orElseThrow().filterJson()).isEqualTo(JSON.readTree(IOS));
        assertThat(service.version(app.appId(), segmentId, 2).orElseThrow().filterJson()).isEqualTo(JSON.readTree(GOLD));
        assertThat(service.version(app.appId(), segmentId, 5)).isEmpty();
        assertThat(jdbc.sql("select name from segment_versions where segment_id = :id order by version")
                .param("id", segmentId).query(String.class).list()).containsExactly("first", "first", "renamed", "renamed");
        SegmentVersion active = service.activeVersion(app.appId(), segmentId, "included_segment_ids[0]");
        assertThat(active.version()).isEqualTo(4);
        assertThat(active.filter()).isInstanceOf(Filter.Condition.class);
    }

    @Test
    void badPatchChangesNothing() {
        TestApp app = newApp();
        String id = create(app, "keep", IOS).json().path("segment_id").asString();
        for (String body : List.of("{\"name\":\"\"}", "{\"name\":null}", "{\"name\":5}", "{\"filter\":{\"all\":[]}}",
                "{\"description\":\"" + "x".repeat(1001) + "\"}", "{\"filter\":null}")) {
            assertError(api.patch("/v1/segments/" + id, app.serverKey(), body), 422, "validation_failed");
        }
        JsonNode s = api.get("/v1/segments/" + id, app.serverKey()).json();
        assertThat(s.path("version").asInt()).isEqualTo(1);
        assertThat(s.path("name").asString()).isEqualTo("keep");
        assertThat(jdbc.sql("select count(*) from segment_versions where segment_id = :id")
                .param("id", UUID.fromString(id)).query(Long.class).single()).isEqualTo(1);
    }

    @Test
    void nameAndDescriptionLimits() {
        TestApp app = newApp();
        assertThat(create(app, "n".repeat(190), IOS).status()).isEqualTo(201);
        assertError(create(app, "n".repeat(191), IOS), 422, "validation_failed");
        assertError(create(app, "   ", IOS), 422, "validation_failed");
        assertError(create(app, "tab\\there", IOS), 422, "validation_failed");
        assertError(api.post("/v1/segments", app.serverKey(), "{\"filter\":" + IOS + "}"), 422, "validation_failed");
        TestApi.Response multiline = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"m\",\"description\":\"line one\\nline two\",\"filter\":" + IOS + "}");
        assertThat(multiline.status()).isEqualTo(201);
        TestApi.Response both = api.post("/v1/segments", app.serverKey(), "{\"name\":\"\",\"filter\":{\"any\":[]}}");
        assertError(both, 422, "validation_failed");
        assertThat(both.json().path("error").path("details").findValuesAsString("field")).containsExactly("name", "filter.any");
    }

    @Test
    void archivedSegmentCannotBeChangedOrUsedForNewSendsButCanBeRead() {
        TestApp app = newApp();
        String id = create(app, "old", IOS).json().path("segment_id").asString();
        TestApi.Response archived = api.delete("/v1/segments/" + id, app.serverKey());
        assertThat(archived.status()).isEqualTo(200);
        assertThat(archived.json().path("status").asString()).isEqualTo("archived");
        assertThat(archived.json().path("version").asInt()).isEqualTo(1);
        assertThat(api.get("/v1/segments/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("archived");
        TestApi.Response again = api.delete("/v1/segments/" + id, app.serverKey());
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("status").asString()).isEqualTo("archived");

        TestApi.Response patch = api.patch("/v1/segments/" + id, app.serverKey(), "{\"name\":\"new\"}");
        assertError(patch, 422, "validation_failed");
        assertThat(patch.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("segment_id");

        assertThatThrownBy(() -> service.activeVersion(app.appId(), UUID.fromString(id), "included_segment_ids[1]"))
                .isInstanceOfSatisfying(InvalidInput.class, e -> {
                    assertThat(e.violations().getFirst().field()).isEqualTo("included_segment_ids[1]");
                    assertThat(e.violations().getFirst().message()).contains("archived");
                });
        // a snapshot taken before the archive still resolves
        assertThat(service.version(app.appId(), UUID.fromString(id), 1)).isPresent();
        TestApi.Response estimate = api.post("/v1/segments/estimate", app.serverKey(), "{\"segment_id\":\"" + id + "\"}");
        assertThat(estimate.status()).isEqualTo(200);
    }

    @Test
    void anotherAppsSegmentIsNotFound() {
        TestApp mine = newApp();
        TestApp theirs = newApp();
        String id = create(theirs, "theirs", IOS).json().path("segment_id").asString();
        assertError(api.get("/v1/segments/" + id, mine.serverKey()), 404, "not_found");
        assertError(api.patch("/v1/segments/" + id, mine.serverKey(), "{\"name\":\"x\"}"), 404, "not_found");
        assertError(api.delete("/v1/segments/" + id, mine.serverKey()), 404, "not_found");
        assertError(api.get("/v1/segments/" + UUID.randomUUID(), mine.serverKey()), 404, "not_found");
        TestApi.Response estimate = api.post("/v1/segments/estimate", mine.serverKey(), "{\"segment_id\":\"" + id + "\"}");
        assertError(estimate, 422, "validation_failed");
        assertThat(estimate.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("segment_id");
        assertThat(api.get("/v1/segments", mine.serverKey()).json().path("data")).isEmpty();
        assertThatThrownBy(() -> service.activeVersion(mine.appId(), UUID.fromString(id), "target.segment_id"))
                .isInstanceOfSatisfying(InvalidInput.class, e -> assertThat(e.violations()).extracting(v -> v.field())
                        .containsExactly("target.segment_id"));
        assertThat(service.version(mine.appId(), UUID.fromString(id), 1)).isEmpty();
        // still there for its owner
        assertThat(api.get("/v1/segments/" + id, theirs.serverKey()).json().path("status").asString()).isEqualTo("active");
        TestApi.Response malformed = api.get("/v1/segments/not-a-uuid", mine.serverKey());
        assertError(malformed, 422, "validation_failed");
        assertThat(malformed.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("segment_id");
    }

    @Test
    void listIsPaginatedNewestFirst() {
        TestApp app = newApp();
        create(app, "a", IOS);
        create(app, "b", IOS);
        String c = create(app, "c", IOS).json().path("segment_id").asString();
        api.delete("/v1/segments/" + c, app.serverKey());
        TestApi.Response first = api.get("/v1/segments?limit=2", app.serverKey());
        assertThat(first.status()).isEqualTo(200);
        assertThat(first.json().path("data").findValuesAsString("name")).containsExactly("c", "b");
        assertThat(first.json().path("data").get(0).path("status").asString()).isEqualTo("archived");
        assertThat(first.json().path("pagination").path("has_more").asBoolean()).isTrue();
        TestApi.Response second = api.get("/v1/segments?limit=2&page=2", app.serverKey());
        assertThat(second.json().path("data").findValuesAsString("name")).containsExactly("a");
        assertThat(second.json().path("pagination").path("has_more").asBoolean()).isFalse();
        assertError(api.get("/v1/segments?limit=0", app.serverKey()), 422, "validation_failed");
    }

    @Test
    void readsNeedNotificationsReadAndWritesNotificationsWrite() {
        TestApp app = newApp();
        String id = create(app, "scoped", IOS).json().path("segment_id").asString();
        String reader = serverKey(app, Scope.NOTIFICATIONS_READ);
        String writer = serverKey(app, Scope.NOTIFICATIONS_WRITE);
        assertThat(api.get("/v1/segments", reader).status()).isEqualTo(200);
        assertThat(api.get("/v1/segments/" + id, reader).status()).isEqualTo(200);
        assertError(api.post("/v1/segments", reader, "{\"name\":\"x\",\"filter\":" + IOS + "}"), 403, "forbidden");
        assertError(api.patch("/v1/segments/" + id, reader, "{\"name\":\"x\"}"), 403, "forbidden");
        assertError(api.delete("/v1/segments/" + id, reader), 403, "forbidden");
        assertError(api.post("/v1/segments/estimate", reader, "{\"filter\":" + IOS + "}"), 403, "forbidden");
        assertError(api.get("/v1/segments", writer), 403, "forbidden");
        assertThat(api.post("/v1/segments/estimate", writer, "{\"filter\":" + IOS + "}").status()).isEqualTo(200);
        assertError(api.get("/v1/segments", app.publicKey()), 403, "forbidden");
        assertError(api.post("/v1/segments", app.publicKey(), "{\"name\":\"x\",\"filter\":" + IOS + "}"), 403, "forbidden");
    }

    @Test
    void estimateTakesExactlyOneOfSegmentIdAndFilter() {
        TestApp app = newApp();
        String id = create(app, "e", IOS).json().path("segment_id").asString();
        for (String body : List.of("{}", "{\"segment_id\":\"" + id + "\",\"filter\":" + IOS + "}", "{\"segment_id\":5}",
                "{\"segment_id\":\"nope\"}", "{\"segment_id\":\"" + UUID.randomUUID() + "\"}", "{\"filter\":[]}")) {
            assertError(api.post("/v1/segments/estimate", app.serverKey(), body), 422, "validation_failed");
        }
        TestApi.Response byId = api.post("/v1/segments/estimate", app.serverKey(), "{\"segment_id\":\"" + id + "\"}");
        assertThat(byId.status()).isEqualTo(200);
        assertThat(byId.json().path("estimated_recipients").asLong()).isZero();
        assertError(api.post("/v1/segments/estimate", app.serverKey(), "not json"), 400, "malformed_request");
    }
}
