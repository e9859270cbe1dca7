package dev.pushservice.segments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Every general operator on every general field (spec: "General fields accept eq, neq, in, not_in,
 * contains, gt, gte, lt, lte, exists, not_exists"), through {@code POST /v1/segments/estimate}, over
 * four known devices, with the count each documented meaning gives (docs/api-decisions.md, "Segments").
 *
 * <pre>
 *      platform locale            timezone                app_version created_at  last_seen_at tags
 * d1   ios      de                (user) Europe/Berlin    2.9         2026-01-10  2026-03-01   plan=gold level=7 since=2025-06-01
 * d2   android  (user) fr         UTC                     2.10.1      2026-02-10  2026-04-01   plan=silver level=12
 * d3   web      en-US             America/New_York        beta        2026-03-10  2026-05-01   level=x
 * d4   android  -                 -                       -           2026-04-10  2026-06-01   -
 * d5   ios, disabled (never counted), d1's user
 * </pre>
 */
class SegmentOperatorMatrixTests extends ApiTest {

    @Autowired
    JdbcClient jdbc;

    record Row(String field, String operator, String value, long expected) {
    }

    static Row row(String field, String operator, String value, long expected) {
        return new Row(field, operator, value, expected);
    }

    static final List<Row> MATRIX = List.of(
            row("platform", "eq", "\"android\"", 2), row("platform", "neq", "\"android\"", 2),
            row("platform", "in", "[\"ios\",\"web\"]", 2), row("platform", "not_in", "[\"ios\"]", 3),
            row("platform", "contains", "\"o\"", 3), row("platform", "gt", "\"ios\"", 1), row("platform", "gte", "\"ios\"", 2),
            row("platform", "lt", "\"ios\"", 2), row("platform", "lte", "\"ios\"", 3),
            row("platform", "exists", null, 4), row("platform", "not_exists", null, 0),

            row("locale", "eq", "\"fr\"", 1), row("locale", "neq", "\"fr\"", 3), row("locale", "in", "[\"de\",\"en-US\"]", 2),
            row("locale", "not_in", "[\"de\"]", 3), row("locale", "contains", "\"e\"", 2), row("locale", "gt", "\"en\"", 2),
            row("locale", "gte", "\"en-US\"", 2), row("locale", "lt", "\"en\"", 1), row("locale", "lte", "\"fr\"", 3),
            row("locale", "exists", null, 3), row("locale", "not_exists", null, 1),

            row("timezone", "eq", "\"UTC\"", 1), row("timezone", "neq", "\"UTC\"", 3),
            row("timezone", "in", "[\"UTC\",\"Europe/Berlin\"]", 2), row("timezone", "not_in", "[\"UTC\"]", 3),
            row("timezone", "contains", "\"/\"", 2), row("timezone", "gt", "\"Europe/Berlin\"", 1),
            row("timezone", "gte", "\"Europe/Berlin\"", 2), row("timezone", "lt", "\"Europe/Berlin\"", 1),
            row("timezone", "lte", "\"UTC\"", 3), row("timezone", "exists", null, 3), row("timezone", "not_exists", null, 1),

            row("app_version", "eq", "\"2.9\"", 1), row("app_version", "neq", "\"2.9\"", 3),
            row("app_version", "in", "[\"2.9\",\"beta\"]", 2), row("app_version", "not_in", "[\"beta\"]", 3),
            row("app_version", "contains", "\".\"", 2), row("app_version", "gt", "\"2.9\"", 1), row("app_version", "gte", "\"2.9\"", 2),
            row("app_version", "lt", "\"2.10\"", 1), row("app_version", "lte", "\"2.10.1\"", 2),
            // not a version: compared as text ("2.9" and "2.10.1" sort before "alpha", "beta" after it)
            row("app_version", "lt", "\"alpha\"", 2), row("app_version", "gt", "\"alpha\"", 1),
            row("app_version", "exists", null, 3), row("app_version", "not_exists", null, 1),

            row("enabled", "eq", "true", 4), row("enabled", "neq", "true", 0), row("enabled", "in", "[true,false]", 4),
            row("enabled", "not_in", "[true]", 0), row("enabled", "contains", "\"ru\"", 4), row("enabled", "gt", "false", 4),
            row("enabled", "gte", "true", 4), row("enabled", "lt", "true", 0), row("enabled", "lte", "false", 0),
            row("enabled", "exists", null, 4), row("enabled", "not_exists", null, 0),

            row("created_at", "eq", "\"2026-02-10T00:00:00Z\"", 1), row("created_at", "neq", "\"2026-02-10T00:00:00Z\"", 3),
            row("created_at", "in", "[\"2026-02-10T00:00:00Z\",\"2026-03-10T01:00:00+01:00\"]", 2),
            row("created_at", "not_in", "[\"2026-01-10T00:00:00Z\"]", 3), row("created_at", "contains", "\"2026-03\"", 1),
            row("created_at", "gt", "\"2026-02-10T00:00:00Z\"", 2), row("created_at", "gte", "\"2026-02-10T00:00:00Z\"", 3),
            row("created_at", "lt", "\"2026-02-10T00:00:00Z\"", 1), row("created_at", "lte", "\"2026-02-10T00:00:00Z\"", 2),
            row("created_at", "exists", null, 4), row("created_at", "not_exists", null, 0),

            row("last_seen_at", "eq", "\"2026-04-01T00:00:00Z\"", 1), row("last_seen_at", "neq", "\"2026-04-01T00:00:00Z\"", 3),
            row("last_seen_at", "in", "[\"2026-03-01T00:00:00Z\",\"2026-06-01T00:00:00Z\"]", 2),
            row("last_seen_at", "not_in", "[\"2026-03-01T00:00:00Z\"]", 3), row("last_seen_at", "contains", "\"-05-01T00:00:00.000000Z\"", 1),
            row("last_seen_at", "gt", "\"2026-04-01T00:00:00Z\"", 2), row("last_seen_at", "gte", "\"2026-04-01T00:00:00Z\"", 3),
            row("last_seen_at", "lt", "\"2026-04-01T00:00:00Z\"", 1), row("last_seen_at", "lte", "\"2026-04-01T00:00:00Z\"", 2),
            row("last_seen_at", "exists", null, 4), row("last_seen_at", "not_exists", null, 0),

            row("tag.level", "eq", "7", 1), row("tag.level", "neq", "\"7\"", 3), row("tag.level", "in", "[7,\"x\"]", 2),
            row("tag.level", "not_in", "[12]", 3), row("tag.level", "contains", "\"1\"", 1),
            // numbers where both sides are numbers (12 > 10, 7 < 10), text otherwise ("x" > "10", "x" > "7")
            row("tag.level", "gt", "10", 2), row("tag.level", "gte", "7", 3), row("tag.level", "lt", "10", 1),
            row("tag.level", "lte", "12", 2), row("tag.level", "gt", "\"10\"", 2),
            row("tag.level", "exists", null, 3), row("tag.level", "not_exists", null, 1),
            row("tag.since", "gt", "\"2025-01-01\"", 1), row("tag.since", "lt", "\"2025-01-01\"", 0),
            row("tag.plan", "lt", "\"h\"", 1), row("tag.plan", "gte", "\"gold\"", 2));

    @Test
    void everyGeneralOperatorOnEveryGeneralFieldCountsWhatItsMeaningSelects() {
        TestApp app = population();
        List<String> wrong = new ArrayList<>();
        for (Row row : MATRIX) {
            String filter = SegmentFilterGrammarTests.cond(row.field(), row.operator(), row.value());
            TestApi.Response r = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + filter + "}");
            long got = r.status() == 200 ? r.json().path("estimated_recipients").asLong() : -r.status();
            if (got != row.expected()) wrong.add(filter + " -> " + r);
        }
        assertThat(wrong).isEmpty();
    }

    @Test
    void theMatrixCoversEveryGeneralOperatorOnEveryGeneralField() {
        Set<String> fields = Set.of("platform", "locale", "timezone", "app_version", "enabled", "created_at", "last_seen_at", "tag.level");
        Set<String> operators = Set.of("eq", "neq", "in", "not_in", "contains", "gt", "gte", "lt", "lte", "exists", "not_exists");
        Set<String> covered = MATRIX.stream().map(r -> r.field() + " " + r.operator()).collect(Collectors.toSet());
        for (String field : fields) {
            for (String operator : operators) assertThat(covered).contains(field + " " + operator);
        }
    }

    private TestApp population() {
        TestApp app = newApp();
        UUID u1 = user(app, "u1", null, "Europe/Berlin", "{\"plan\":\"gold\",\"level\":\"7\",\"since\":\"2025-06-01\"}");
        UUID u2 = user(app, "u2", "fr", null, "{\"plan\":\"silver\",\"level\":\"12\"}");
        UUID u3 = user(app, "u3", null, null, "{\"level\":\"x\"}");
        UUID u4 = user(app, "u4", null, null, "{}");
        device(app, u1, "ios", "de", null, "2.9", true, "2026-01-10T00:00:00Z", "2026-03-01T00:00:00Z");
        device(app, u2, "android", null, "UTC", "2.10.1", true, "2026-02-10T00:00:00Z", "2026-04-01T00:00:00Z");
        device(app, u3, "web", "en-US", "America/New_York", "beta", true, "2026-03-10T00:00:00Z", "2026-05-01T00:00:00Z");
        device(app, u4, "android", null, null, null, true, "2026-04-10T00:00:00Z", "2026-06-01T00:00:00Z");
        device(app, u1, "ios", "de", "UTC", "2.9", false, "2026-02-10T00:00:00Z", "2026-04-01T00:00:00Z");
        return app;
    }

    private UUID user(TestApp app, String external, String locale, String timezone, String tags) {
        UUID id = UUID.randomUUID();
        jdbc.sql("insert into users (id, app_id, external_user_id, locale, timezone, tags) values (:id, :app, :ext, :locale, :tz, cast(:tags as jsonb))")
                .param("id", id).param("app", app.appId()).param("ext", external).param("locale", locale).param("tz", timezone)
                .param("tags", tags).update();
        return id;
    }

    private void device(TestApp app, UUID user, String platform, String locale, String timezone, String version, boolean enabled,
                        String created, String seen) {
        UUID id = UUID.randomUUID();
        jdbc.sql("""
                        insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, locale, timezone,
                                             enabled, last_seen_at, created_at)
                        values (:id, :app, :platform, :token, :hash, :user, :version, :locale, :tz, :enabled, :seen, :created)""")
                .param("id", id).param("app", app.appId()).param("platform", platform).param("token", "matrix-" + id)
                .param("hash", sha256("matrix-" + id)).param("user", user).param("version", version).param("locale", locale)
                .param("tz", timezone).param("enabled", enabled).param("seen", OffsetDateTime.parse(seen))
                .param("created", OffsetDateTime.parse(created)).update();
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
