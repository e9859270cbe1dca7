package dev.pushservice.segments;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Estimates on a small fixture, one expectation per field and operator. Devices are registered
 * through the API; events, an invalidation and an old creation time are written directly, as the
 * events feature and delivery would.
 *
 * <pre>
 * d1 ios     alice  locale en-US  tz Europe/Berlin        2.10.1      plan=gold  level=7   created 2025-01-01  opened 2 days ago, custom purchase yesterday
 * d2 android bob    (user de)     (user America/New_York) 2.9         plan=silver level=12                     opened 30 days ago
 * d3 ios     carol  locale fr     -                       3.0.0-beta  plan=gold  vip=true                      clicked now
 * d4 android anon   locale en-GB  -                       -           -
 * d5 ios     dave   disabled (DELETE)                                 plan=gold                                opened now
 * d6 android erin   invalidated by the provider                       plan=gold
 * </pre>
 */
class SegmentAudienceTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;
    @Autowired
    FilterCompiler compiler;
    @Autowired
    SegmentRepository segments;

    record Fixture(TestApp app, Map<String, UUID> devices) {
    }

    private UUID register(TestApp app, String body) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("device_id").asString());
    }

    private void event(TestApp app, UUID device, String key, Instant at) {
        jdbc.sql("insert into device_event_last (app_id, device_id, event_key, last_at) values (:app, :device, :key, :at)")
                .param("app", app.appId()).param("device", device).param("key", key)
                .param("at", OffsetDateTime.ofInstant(at, ZoneOffset.UTC)).update();
    }

    private Fixture fixture() {
        TestApp app = newApp();
        Map<String, UUID> d = new LinkedHashMap<>();
        d.put("d1", register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"alice\","
                + "\"locale\":\"en-US\",\"timezone\":\"Europe/Berlin\",\"app_version\":\"2.10.1\",\"tags\":{\"plan\":\"gold\",\"level\":7}}"));
        d.put("d2", register(app, "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\",\"external_user_id\":\"bob\","
                + "\"app_version\":\"2.9\",\"tags\":{\"plan\":\"silver\",\"level\":\"12\"}}"));
        assertThat(api.patch("/v1/users/bob", app.serverKey(), "{\"locale\":\"de\",\"timezone\":\"America/New_York\"}").status())
                .isEqualTo(200);
        d.put("d3", register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"carol\","
                + "\"locale\":\"fr\",\"app_version\":\"3.0.0-beta\",\"tags\":{\"plan\":\"gold\",\"vip\":true}}"));
        d.put("d4", register(app, "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\",\"locale\":\"en-GB\"}"));
        d.put("d5", register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\",\"external_user_id\":\"dave\","
                + "\"tags\":{\"plan\":\"gold\"}}"));
        assertThat(api.delete("/v1/devices/" + d.get("d5"), app.serverKey()).status()).isEqualTo(200);
        d.put("d6", register(app, "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\",\"external_user_id\":\"erin\","
                + "\"tags\":{\"plan\":\"gold\"}}"));
        jdbc.sql("update devices set invalidated_at = now(), invalidation_reason = 'unregistered' where id = :id")
                .param("id", d.get("d6")).update();
        jdbc.sql("update devices set created_at = '2025-01-01T00:00:00Z' where id = :id").param("id", d.get("d1")).update();
        Instant now = Instant.now();
        event(app, d.get("d1"), "opened", now.minus(Duration.ofDays(2)));
        event(app, d.get("d1"), "custom:purchase", now.minus(Duration.ofDays(1)));
        event(app, d.get("d2"), "opened", now.minus(Duration.ofDays(30)));
        event(app, d.get("d3"), "clicked", now);
        event(app, d.get("d5"), "opened", now);
        event(app, d.get("d6"), "opened", now);
        return new Fixture(app, d);
    }

    private long estimate(TestApp app, String filter) {
        TestApi.Response r = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + filter + "}");
        assertThat(r.status()).as(filter + " -> " + r).isEqualTo(200);
        return r.json().path("estimated_recipients").asLong();
    }

    private static String cond(String field, String operator, String value) {
        return SegmentFilterGrammarTests.cond(field, operator, value);
    }

    @Test
    void everyFieldAndOperatorCountsTheRightDevices() {
        TestApp app = fixture().app();
        Map<String, Long> expected = new LinkedHashMap<>();
        // d5 (disabled) and d6 (invalidated) never count
        expected.put(cond("platform", "eq", "\"ios\""), 2L);
        expected.put(cond("platform", "neq", "\"ios\""), 2L);
        expected.put(cond("platform", "in", "[\"ios\",\"android\"]"), 4L);
        expected.put(cond("platform", "not_in", "[\"android\"]"), 2L);
        expected.put(cond("platform", "eq", "\"web\""), 0L);
        // locale and timezone fall back to the user's
        expected.put(cond("locale", "eq", "\"de\""), 1L);
        expected.put(cond("locale", "eq", "\"en-US\""), 1L);
        expected.put(cond("locale", "contains", "\"en\""), 2L);
        expected.put(cond("locale", "contains", "\"EN\""), 0L);
        expected.put(cond("locale", "in", "[\"fr\",\"de\"]"), 2L);
        expected.put(cond("locale", "not_exists", null), 0L);
        expected.put(cond("timezone", "eq", "\"America/New_York\""), 1L);
        expected.put(cond("timezone", "exists", null), 2L);
        expected.put(cond("timezone", "not_exists", null), 2L);
        expected.put(cond("timezone", "neq", "\"Europe/Berlin\""), 3L);
        expected.put(cond("timezone", "not_in", "[\"Europe/Berlin\",\"America/New_York\"]"), 2L);
        // versions compare numerically, part by part: 2.10.1 > 2.9
        expected.put(cond("app_version", "gt", "\"2.9\""), 2L);
        expected.put(cond("app_version", "gte", "\"2.9\""), 3L);
        expected.put(cond("app_version", "lt", "\"2.10\""), 1L);
        expected.put(cond("app_version", "lte", "\"3\""), 3L);
        expected.put(cond("app_version", "gte", "\"3.0\""), 1L);
        expected.put(cond("app_version", "eq", "\"2.9\""), 1L);
        expected.put(cond("app_version", "contains", "\"beta\""), 1L);
        expected.put(cond("app_version", "not_exists", null), 1L);
        expected.put(cond("enabled", "eq", "true"), 4L);
        expected.put(cond("enabled", "eq", "false"), 0L);
        expected.put(cond("enabled", "neq", "false"), 4L);
        expected.put(cond("created_at", "lt", "\"2025-06-01T00:00:00Z\""), 1L);
        expected.put(cond("created_at", "gte", "\"2025-06-01T02:00:00+02:00\""), 3L);
        expected.put(cond("last_seen_at", "gt", "\"" + Instant.now().minus(Duration.ofHours(1)) + "\""), 4L);
        expected.put(cond("last_seen_at", "lte", "\"2000-01-01T00:00:00Z\""), 0L);
        // tags are the user's
        expected.put(cond("tag.plan", "eq", "\"gold\""), 2L);
        expected.put(cond("tag.plan", "neq", "\"gold\""), 2L);
        expected.put(cond("tag.plan", "in", "[\"gold\",\"silver\"]"), 3L);
        expected.put(cond("tag.plan", "not_in", "[\"gold\"]"), 2L);
        expected.put(cond("tag.plan", "contains", "\"ol\""), 2L);
        expected.put(cond("tag.plan", "exists", null), 3L);
        expected.put(cond("tag.plan", "not_exists", null), 1L);
        expected.put(cond("tag.level", "eq", "7"), 1L);
        expected.put(cond("tag.level", "eq", "\"12\""), 1L);
        // numerically, not as text ("7" > "12" as text)
        expected.put(cond("tag.level", "gt", "10"), 1L);
        expected.put(cond("tag.level", "gte", "7"), 2L);
        expected.put(cond("tag.level", "lt", "7.5"), 1L);
        expected.put(cond("tag.level", "lte", "6"), 0L);
        // a tag that is not a number compares as text: "gold" and "silver" sort after "0"
        expected.put(cond("tag.plan", "gt", "0"), 3L);
        expected.put(cond("tag.vip", "eq", "true"), 1L);
        expected.put(cond("tag.vip", "eq", "\"true\""), 1L);
        // events: latest occurrence per device
        expected.put(cond("event.opened", "exists", null), 2L);
        expected.put(cond("event.opened", "not_exists", null), 2L);
        expected.put(cond("event.opened", "within_days", "7"), 1L);
        expected.put(cond("event.opened", "within_days", "31"), 2L);
        expected.put(cond("event.opened", "not_within_days", "7"), 3L);
        expected.put(cond("event.opened", "not_within_days", "3650"), 2L);
        expected.put(cond("event.clicked", "within_days", "0"), 1L);
        expected.put(cond("event.dismissed", "exists", null), 0L);
        expected.put(cond("custom_event.purchase", "exists", null), 1L);
        expected.put(cond("custom_event.purchase", "within_days", "1"), 1L);
        expected.put(cond("custom_event.purchase", "not_exists", null), 3L);
        expected.put(cond("custom_event.x", "not_exists", null), 4L);
        expected.put(cond("custom_event.opened", "exists", null), 0L);
        // groups
        expected.put("{\"any\":[{\"all\":[" + cond("platform", "eq", "\"ios\"") + "," + cond("tag.plan", "eq", "\"gold\"") + "]},"
                + "{\"all\":[" + cond("platform", "eq", "\"android\"") + "," + cond("locale", "eq", "\"de\"") + "]}]}", 3L);
        expected.put("{\"all\":[" + cond("event.opened", "exists", null) + "," + cond("event.opened", "not_within_days", "7") + "]}", 1L);
        expected.put("{\"all\":[" + cond("platform", "eq", "\"ios\"") + ",{\"any\":[" + cond("tag.vip", "exists", null) + ","
                + "{\"all\":[" + cond("locale", "eq", "\"en-US\"") + "," + cond("custom_event.purchase", "exists", null) + "]}]}]}", 2L);
        expected.put("{\"any\":[" + cond("tag.level", "gt", "100") + "," + cond("custom_event.none", "exists", null) + "]}", 0L);

        Map<String, Long> actual = new LinkedHashMap<>();
        expected.keySet().forEach(f -> actual.put(f, estimate(app, f)));
        assertThat(actual).containsExactlyEntriesOf(expected);
        // the same with the user sets joined, the form used when there are too many users to hash
        Map<String, Long> joined = new LinkedHashMap<>();
        expected.keySet().forEach(f -> joined.put(f, segments.countAudience(app.appId(), compiler.compile(app.appId(),
                FilterParser.parse(tools.jackson.databind.json.JsonMapper.builder().build().readTree(f), "filter"), "sf",
                FilterCompiler.UserSets.JOINED))));
        assertThat(joined).containsExactlyEntriesOf(expected);
    }

    @Test
    void estimateBySavedSegmentUsesItsCurrentVersionAndCountsOnlyThisApp() {
        TestApp app = fixture().app();
        TestApp other = fixture().app();
        String id = api.post("/v1/segments", app.serverKey(), "{\"name\":\"gold\",\"filter\":" + cond("tag.plan", "eq", "\"gold\"") + "}")
                .json().path("segment_id").asString();
        TestApi.Response r = api.post("/v1/segments/estimate", app.serverKey(), "{\"segment_id\":\"" + id + "\"}");
        assertThat(r.json().path("estimated_recipients").asLong()).isEqualTo(2);
        api.patch("/v1/segments/" + id, app.serverKey(), "{\"filter\":" + cond("platform", "in", "[\"ios\",\"android\"]") + "}");
        r = api.post("/v1/segments/estimate", app.serverKey(), "{\"segment_id\":\"" + id + "\"}");
        assertThat(r.json().path("estimated_recipients").asLong()).isEqualTo(4);
        assertThat(estimate(other, cond("platform", "in", "[\"ios\",\"android\"]"))).isEqualTo(4);
    }

    @Test
    void injectionAttemptsAreDataNeverSql() {
        TestApp app = fixture().app();
        TestApi.Response badKey = api.post("/v1/segments/estimate", app.serverKey(),
                "{\"filter\":" + cond("tag.x'; drop table devices;--", "eq", "\"1\"") + "}");
        assertError(badKey, 422, "validation_failed");
        assertThat(badKey.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("filter.field");
        TestApi.Response badField = api.post("/v1/segments/estimate", app.serverKey(),
                "{\"filter\":" + cond("platform = platform or 1=1 --", "eq", "\"1\"") + "}");
        assertError(badField, 422, "validation_failed");

        assertThat(estimate(app, cond("tag.plan", "eq", "\"gold' or '1'='1\""))).isZero();
        assertThat(estimate(app, cond("tag.plan", "neq", "\"x'); delete from users; --\""))).isEqualTo(4);
        assertThat(estimate(app, cond("tag.plan", "in", "[\"gold\\\" or 1=1 --\",\"'\"]"))).isZero();
        assertThat(estimate(app, cond("locale", "contains", "\"%\""))).isZero();
        assertThat(estimate(app, cond("locale", "contains", "\"_\""))).isZero();
        // an event name ingest would refuse is refused in a filter too (the compiler's binding of such
        // a name is checked in compiledSqlCarriesNoInputOnlyPlaceholders)
        TestApi.Response badEvent = api.post("/v1/segments/estimate", app.serverKey(),
                "{\"filter\":" + cond("custom_event.x'; drop table devices;--", "not_exists", null) + "}");
        assertError(badEvent, 422, "validation_failed");
        assertThat(badEvent.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("filter.field");
        assertThat(estimate(app, cond("app_version", "eq", "\"2.9' or ''='\""))).isZero();
        // the tables are intact and the counts unchanged
        assertThat(estimate(app, cond("tag.plan", "eq", "\"gold\""))).isEqualTo(2);
        assertThat(jdbc.sql("select count(*) from devices where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isEqualTo(6);
    }

    @Test
    void compiledSqlCarriesNoInputOnlyPlaceholders() {
        TestApp app = newApp();
        String sneaky = "x'; drop table devices;--";
        Filter parsed = FilterParser.parse(tools.jackson.databind.json.JsonMapper.builder().build().readTree(
                "{\"all\":[" + cond("tag.plan", "eq", "\"" + sneaky + "\"") + "," + cond("locale", "in", "[\"" + sneaky + "\"]")
                        + "," + cond("tag.a-b.c_d", "gt", "1") + "]}"), "filter");
        // the parser refuses such an event name; the compiler must bind it all the same
        Filter sneakyEvent = new Filter.Condition(new Filter.Field(Filter.Kind.CUSTOM_EVENT, sneaky), Filter.Operator.WITHIN_DAYS, 3, null);
        Filter filter = new Filter.Group(true, java.util.stream.Stream.concat(((Filter.Group) parsed).children().stream(),
                java.util.stream.Stream.of(sneakyEvent)).toList());
        for (FilterCompiler.UserSets form : FilterCompiler.UserSets.values()) {
            FilterCompiler.Compiled c = compiler.compile(app.appId(), filter, "aud", form);
            String sql = c.joins() + " " + c.predicate();
            assertThat(sql).as(form.name()).doesNotContain(sneaky).doesNotContain("drop").doesNotContain("a-b.c_d").doesNotContain("plan");
            assertThat(c.params()).containsValue("{\"plan\":\"x'; drop table devices;--\"}").containsValue("custom:" + sneaky)
                    .containsValue(List.of(sneaky)).containsValue("a-b.c_d");
            assertThat(c.params().keySet()).allMatch(k -> k.startsWith("aud_"));
            long n = jdbc.sql("select count(*) from devices d " + c.joins() + " where d.app_id = :app and (" + c.predicate() + ")")
                    .param("app", app.appId()).params(c.params()).query(Long.class).single();
            assertThat(n).isZero();
        }
    }
}
