package dev.pushservice.segments;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Every grammar rule of the spec's "Segment" section: a 422 naming the place in the filter, and nothing stored. */
class SegmentFilterGrammarTests extends ApiTest {

    private static final String LEAF = "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}";

    record Case(String filter, String field) {
    }

    static String nested(int groups) {
        String f = LEAF;
        for (int i = 0; i < groups; i++) f = "{\"all\":[" + f + "]}";
        return f;
    }

    static String leaves(int n) {
        return "{\"any\":[" + IntStream.range(0, n).mapToObj(i -> LEAF).collect(Collectors.joining(",")) + "]}";
    }

    static String cond(String field, String operator, String value) {
        return "{\"field\":\"" + field + "\",\"operator\":\"" + operator + "\"" + (value == null ? "" : ",\"value\":" + value) + "}";
    }

    static String values(int n) {
        return "[" + IntStream.range(0, n).mapToObj(i -> "\"v" + i + "\"").collect(Collectors.joining(",")) + "]";
    }

    @Test
    void everyViolationIsA422NamingItsPlaceAndNothingIsStored() {
        TestApp app = newApp();
        List<Case> cases = List.of(
                new Case(nested(6), "filter" + ".all[0]".repeat(5)),
                new Case("{\"any\":[" + LEAF + "," + nested(5) + "]}", "filter.any[1]" + ".all[0]".repeat(4)),
                new Case(leaves(51), "filter"),
                new Case("{\"all\":[" + leaves(26) + "," + leaves(25) + "]}", "filter"),
                new Case("{\"all\":[]}", "filter.all"),
                new Case("{\"any\":[]}", "filter.any"),
                new Case("{\"all\":[" + LEAF + ",{\"any\":[]}]}", "filter.all[1].any"),
                new Case("{\"all\":{}}", "filter.all"),
                new Case("{\"all\":[" + LEAF + "],\"any\":[" + LEAF + "]}", "filter"),
                new Case("{\"all\":[" + LEAF + "],\"field\":\"platform\"}", "filter"),
                new Case("{}", "filter"),
                new Case("[]", "filter"),
                new Case("\"platform\"", "filter"),
                new Case("{\"all\":[" + LEAF + ",5]}", "filter.all[1]"),
                new Case(cond("country", "eq", "\"DE\""), "filter.field"),
                new Case("{\"all\":[" + LEAF + "," + LEAF + ",{\"any\":[" + cond("nope", "eq", "\"x\"") + "]}]}", "filter.all[2].any[0].field"),
                new Case("{\"all\":[" + LEAF + "," + LEAF + ",{\"any\":[" + cond("platform", "within_days", "3") + "]}]}", "filter.all[2].any[0].operator"),
                new Case(cond("platform", "like", "\"ios\""), "filter.operator"),
                new Case(cond("platform", "contains", "\"\""), "filter.value"),
                new Case(cond("platform", "gt", "5"), "filter.value"),
                new Case(cond("enabled", "in", "[\"true\"]"), "filter.value[0]"),
                new Case(cond("enabled", "contains", "true"), "filter.value"),
                new Case(cond("created_at", "in", "[\"yesterday\"]"), "filter.value[0]"),
                new Case(cond("app_version", "gt", "3"), "filter.value"),
                new Case(cond("tag.level", "gt", "{\"a\":1}"), "filter.value"),
                new Case("{\"field\":\"platform\",\"value\":\"ios\"}", "filter.operator"),
                new Case("{\"operator\":\"eq\",\"value\":\"ios\"}", "filter.field"),
                new Case("{\"field\":5,\"operator\":\"eq\",\"value\":\"ios\"}", "filter.field"),
                new Case(cond("platform", "eq", "\"windows\""), "filter.value"),
                new Case(cond("enabled", "eq", "\"true\""), "filter.value"),
                new Case(cond("created_at", "gt", "\"yesterday\""), "filter.value"),
                new Case(cond("created_at", "gt", "\"2026-01-01T00:00:00\""), "filter.value"),
                // parses in java.time, but no timestamptz holds it: was a 500 at the statement comparing it
                new Case(cond("created_at", "gt", "\"+999999999-12-31T23:59:59Z\""), "filter.value"),
                new Case(cond("last_seen_at", "in", "[\"2026-01-01T00:00:00Z\",\"-999999999-01-01T00:00:00Z\"]"), "filter.value[1]"),
                new Case(cond("last_seen_at", "lt", "1767225600"), "filter.value"),
                new Case(cond("event.opened", "eq", "\"x\""), "filter.operator"),
                new Case(cond("event.opened", "gt", "3"), "filter.operator"),
                new Case(cond("custom_event.buy", "contains", "\"x\""), "filter.operator"),
                new Case(cond("event.opened", "within_days", "7.5"), "filter.value"),
                new Case(cond("event.opened", "within_days", "\"7\""), "filter.value"),
                new Case(cond("event.opened", "within_days", "3651"), "filter.value"),
                new Case(cond("event.opened", "not_within_days", "-1"), "filter.value"),
                new Case(cond("event.opened", "within_days", "7.0"), "filter.value"),
                new Case(cond("event.opened", "within_days", null), "filter.value"),
                new Case(cond("event.opened", "exists", "true"), "filter.value"),
                new Case(cond("event.custom", "exists", null), "filter.field"),
                new Case(cond("event.bought", "exists", null), "filter.field"),
                new Case(cond("custom_event.", "exists", null), "filter.field"),
                new Case(cond("custom_event." + "x".repeat(101), "exists", null), "filter.field"),
                new Case(cond("custom_event.Purchase Completed!", "exists", null), "filter.field"),
                new Case(cond("custom_event.bad\\u0001name", "exists", null), "filter.field"),
                new Case(cond("tag.plan", "in", "[]"), "filter.value"),
                new Case(cond("tag.plan", "in", values(101)), "filter.value"),
                new Case(cond("tag.plan", "not_in", "\"gold\""), "filter.value"),
                new Case(cond("tag.plan", "in", "[\"gold\",{\"a\":1}]"), "filter.value[1]"),
                new Case(cond("tag.plan", "in", "[[\"gold\"]]"), "filter.value[0]"),
                new Case(cond("tag.plan", "in", "[null]"), "filter.value[0]"),
                new Case(cond("tag.plan", "eq", "{\"a\":1}"), "filter.value"),
                new Case(cond("tag.plan", "eq", "[\"gold\"]"), "filter.value"),
                new Case(cond("tag.plan", "eq", null), "filter.value"),
                new Case(cond("tag.plan", "contains", "\"\""), "filter.value"),
                new Case(cond("tag.plan", "eq", "\"" + "x".repeat(1025) + "\""), "filter.value"),
                new Case(cond("tag.", "eq", "\"x\""), "filter.field"),
                new Case(cond("tag.bad key", "eq", "\"x\""), "filter.field"),
                new Case(cond("tag." + "k".repeat(129), "eq", "\"x\""), "filter.field"),
                new Case(cond("tag", "eq", "\"x\""), "filter.field"),
                new Case(cond("locale", "eq", "5"), "filter.value"));
        for (Case c : cases) {
            TestApi.Response r = api.post("/v1/segments", app.serverKey(), "{\"name\":\"bad\",\"filter\":" + c.filter() + "}");
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(c.filter() + " -> " + r.body())
                    .containsExactly(c.field());
            TestApi.Response estimate = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + c.filter() + "}");
            assertError(estimate, 422, "validation_failed");
            assertThat(estimate.json().path("error").path("details").findValuesAsString("field")).containsExactly(c.field());
        }
        assertThat(api.get("/v1/segments", app.serverKey()).json().path("data")).isEmpty();
    }

    @Test
    void theLimitsThemselvesAreAllowed() {
        TestApp app = newApp();
        for (String filter : List.of(nested(5), leaves(50), "{\"all\":[" + leaves(25) + "," + leaves(25) + "]}",
                cond("tag.plan", "in", values(100)), cond("tag.plan", "not_in", values(1)),
                cond("event.opened", "within_days", "0"), cond("event.opened", "not_within_days", "3650"),
                cond("tag." + "k".repeat(128), "exists", null), cond("custom_event." + "x".repeat(100), "not_exists", null),
                cond("custom_event.Purchase.completed_v2-A", "exists", null),
                cond("tag.level", "gte", "7.5"), cond("tag.vip", "eq", "true"), cond("tag.n", "in", "[1,\"2\",false]"),
                cond("created_at", "gte", "\"2026-01-01T10:00:00+02:00\""), cond("app_version", "lt", "\"10.2.3\""),
                cond("event.opened", "exists", "null"), LEAF,
                // every general operator on every general field (spec "Segment"; meanings in docs/api-decisions.md)
                cond("platform", "exists", null), cond("platform", "contains", "\"o\""), cond("platform", "gte", "\"ios\""),
                cond("last_seen_at", "exists", null), cond("last_seen_at", "in", "[\"2026-01-01T00:00:00Z\"]"),
                cond("created_at", "contains", "\"2026-01\""), cond("enabled", "lt", "true"), cond("enabled", "not_exists", null),
                cond("locale", "gt", "\"en\""), cond("app_version", "gt", "\"latest\""), cond("tag.level", "gt", "\"5\""),
                cond("tag.plan", "lte", "\"gold\""))) {
            TestApi.Response r = api.post("/v1/segments", app.serverKey(), "{\"name\":\"ok\",\"filter\":" + filter + "}");
            assertThat(r.status()).as(filter + " -> " + r.body()).isEqualTo(201);
        }
    }

    @Test
    void allProblemsAreReportedAtOnce() {
        TestApp app = newApp();
        String filter = "{\"all\":[" + cond("nope", "eq", "\"x\"") + "," + cond("platform", "within_days", "1") + ",{\"any\":["
                + cond("event.opened", "within_days", "7.5") + "]}]}";
        TestApi.Response r = api.post("/v1/segments", app.serverKey(), "{\"name\":\"bad\",\"filter\":" + filter + "}");
        assertError(r, 422, "validation_failed");
        assertThat(r.json().path("error").path("details").findValuesAsString("field"))
                .containsExactly("filter.all[0].field", "filter.all[1].operator", "filter.all[2].any[0].value");
    }

    @Test
    void aHugeFilterIsRefusedWithoutWalkingItAll() {
        TestApp app = newApp();
        // 200 levels deep and 5,000 leaves wide: one error each, quickly
        TestApi.Response deep = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + nested(200) + "}");
        assertError(deep, 422, "validation_failed");
        TestApi.Response wide = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + leaves(5000) + "}");
        assertError(wide, 422, "validation_failed");
        assertThat(wide.json().path("error").path("details").findValuesAsString("field")).containsExactly("filter");
        assertThat(wide.json().path("error").path("details").get(0).path("message").asString()).contains("5000");
    }
}
