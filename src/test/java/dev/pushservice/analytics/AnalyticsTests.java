package dev.pushservice.analytics;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

class AnalyticsTests extends ApiTest {

    private static final List<String> TYPES =
            List.of("received", "confirmed_delivered", "delivered", "opened", "clicked", "dismissed", "custom", "outcome");

    @Autowired
    JdbcClient jdbc;

    TestApp appIn(String zone) {
        Tenants.Organisation org = tenants.createOrganisation(TestTokens.unique("analytics org "));
        Tenants.App app = tenants.createApp(org.id(), "analytics app", zone);
        String server = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
        String client = tenants.issueKey(app.id(), KeyKind.PUBLIC, "public", Set.of(), null).rawKey();
        return new TestApp(org.id(), app.id(), server, client);
    }

    void event(TestApp app, String type, String name, Instant at) {
        String n = name == null ? "" : ",\"event_name\":\"" + name + "\"";
        TestApi.Response r = api.post("/v1/events", app.publicKey(),
                "{\"event_type\":\"" + type + "\"" + n + ",\"occurred_at\":\"" + at + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
    }

    JsonNode analytics(TestApp app, String query) {
        TestApi.Response r = api.get("/v1/analytics" + query, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    static JsonNode day(JsonNode analytics, LocalDate date) {
        for (JsonNode d : analytics.path("daily")) if (d.path("date").asString().equals(date.toString())) return d.path("events");
        throw new AssertionError("no entry for " + date + " in " + analytics);
    }

    @Test
    void everyDayAndTypeIsPresentOldestFirstWithExactCounts() {
        TestApp app = newApp();
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        Instant now = Instant.now();
        Instant twoDaysAgo = today.minusDays(2).atTime(12, 0).toInstant(ZoneOffset.UTC);
        event(app, "opened", null, now);
        event(app, "opened", null, now);
        event(app, "custom", "a", now);
        event(app, "custom", "b", now);
        event(app, "clicked", null, twoDaysAgo);

        JsonNode a = analytics(app, "?days=3");
        assertThat(a.path("days").asInt()).isEqualTo(3);
        assertThat(a.path("timezone").asString()).isEqualTo("UTC");
        List<String> dates = new ArrayList<>();
        a.path("daily").forEach(d -> dates.add(d.path("date").asString()));
        assertThat(dates).containsExactly(today.minusDays(2).toString(), today.minusDays(1).toString(), today.toString());
        for (JsonNode d : a.path("daily")) assertThat(d.path("events").propertyNames()).containsExactlyElementsOf(TYPES);
        assertThat(day(a, today).path("opened").asLong()).isEqualTo(2);
        assertThat(day(a, today).path("custom").asLong()).isEqualTo(2);
        assertThat(day(a, today).path("clicked").asLong()).isZero();
        assertThat(day(a, today.minusDays(1)).path("opened").asLong()).isZero();
        assertThat(day(a, today.minusDays(2)).path("clicked").asLong()).isEqualTo(1);
        assertThat(a.path("outcomes")).isEmpty();

        // one day only: today; the clicked event two days ago is outside
        JsonNode one = analytics(app, "?days=1");
        assertThat(one.path("daily")).hasSize(1);
        assertThat(day(one, today).path("clicked").asLong()).isZero();
        assertThat(analytics(app, "").path("daily")).hasSize(30);
        assertThat(analytics(app, "").path("days").asInt()).isEqualTo(30);
    }

    @Test
    void daysFollowTheAppTimeZoneWhereTheBoundaryMatters() {
        String zoneId = "America/Los_Angeles";
        ZoneId zone = ZoneId.of(zoneId);
        TestApp la = appIn(zoneId);
        TestApp utc = newApp();
        LocalDate todayLa = LocalDate.now(zone);
        // 20:00 in Los Angeles is 03:00 or 04:00 UTC of the next day
        Instant evening = todayLa.minusDays(1).atTime(LocalTime.of(20, 0)).atZone(zone).toInstant();
        event(la, "opened", null, evening);
        event(utc, "opened", null, evening);

        JsonNode a = analytics(la, "?days=7");
        assertThat(a.path("timezone").asString()).isEqualTo(zoneId);
        assertThat(a.path("daily").get(6).path("date").asString()).isEqualTo(todayLa.toString());
        assertThat(day(a, todayLa.minusDays(1)).path("opened").asLong()).isEqualTo(1);
        assertThat(day(a, todayLa).path("opened").asLong()).isZero();

        LocalDate utcDay = evening.atZone(ZoneOffset.UTC).toLocalDate();
        assertThat(utcDay).isEqualTo(todayLa);
        JsonNode u = analytics(utc, "?days=7");
        assertThat(day(u, utcDay).path("opened").asLong()).isEqualTo(1);
        assertThat(day(u, utcDay.minusDays(1)).path("opened").asLong()).isZero();
    }

    @Test
    void outcomeTotalsCoverThePeriodByNameLargestFirst() {
        TestApp app = newApp();
        Instant now = Instant.now();
        Instant tenDaysAgo = now.minusSeconds(10 * 86_400);
        for (int i = 0; i < 3; i++) event(app, "outcome", "purchase", now);
        event(app, "outcome", "signup", now.minusSeconds(86_400));
        event(app, "outcome", "zeta", now);
        event(app, "outcome", "alpha", now);
        event(app, "outcome", "old", tenDaysAgo);
        event(app, "custom", "purchase", now);

        JsonNode week = analytics(app, "?days=7");
        List<String> names = new ArrayList<>();
        List<Long> totals = new ArrayList<>();
        week.path("outcomes").forEach(o -> {
            names.add(o.path("event_name").asString());
            totals.add(o.path("total").asLong());
        });
        assertThat(names).containsExactly("purchase", "alpha", "signup", "zeta");
        assertThat(totals).containsExactly(3L, 1L, 1L, 1L);
        long outcomesInDaily = 0;
        for (JsonNode d : week.path("daily")) outcomesInDaily += d.path("events").path("outcome").asLong();
        assertThat(outcomesInDaily).isEqualTo(6);

        JsonNode month = analytics(app, "?days=30");
        assertThat(month.path("outcomes").findValuesAsString("event_name")).contains("old");
    }

    @Test
    void aYearIsAnsweredFromTheDailyCounters() {
        TestApp app = newApp();
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        // a year of counters as ingest leaves them (ingest refuses events older than 30 days, so write them directly)
        jdbc.sql("""
                        insert into event_daily_counts (app_id, day, event_type, event_name, count)
                        select :app, d::date, t, case when t in ('custom', 'outcome') then 'n' || (extract(doy from d)::int % 3) else '' end, 5
                        from generate_series(cast(:from as date), cast(:to as date), interval '1 day') d,
                             unnest(array['received','confirmed_delivered','delivered','opened','clicked','dismissed','custom','outcome']) t""")
                .param("app", app.appId()).param("from", today.minusDays(364)).param("to", today).update();
        JsonNode a = analytics(app, "?days=365");
        assertThat(a.path("daily")).hasSize(365);
        assertThat(a.path("daily").get(0).path("date").asString()).isEqualTo(today.minusDays(364).toString());
        for (JsonNode d : a.path("daily")) {
            for (String t : TYPES) assertThat(d.path("events").path(t).asLong()).isEqualTo(5);
        }
        long outcomeTotal = 0;
        for (JsonNode o : a.path("outcomes")) outcomeTotal += o.path("total").asLong();
        assertThat(outcomeTotal).isEqualTo(365 * 5);
        assertThat(a.path("outcomes")).hasSize(3);
    }

    @Test
    void daysMustBeAnIntegerFromOneTo365() {
        TestApp app = newApp();
        for (String bad : List.of("7.5", "x", "0", "366", "-1", "", "1e2", "+7", "99999999999", "7,8", "%207")) {
            TestApi.Response r = api.get("/v1/analytics?days=" + bad, app.serverKey());
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(bad).containsExactly("days");
        }
        assertError(api.get("/v1/analytics?days=7&days=8", app.serverKey()), 422, "validation_failed");
        assertThat(analytics(app, "?days=365").path("daily")).hasSize(365);
        assertThat(analytics(app, "?days=1").path("daily")).hasSize(1);
    }

    @Test
    void otherAppsEventsAreNeverCounted() {
        TestApp app = newApp();
        TestApp other = newApp();
        event(other, "opened", null, Instant.now());
        event(other, "outcome", "purchase", Instant.now());
        JsonNode a = analytics(app, "?days=2");
        for (JsonNode d : a.path("daily")) for (String t : TYPES) assertThat(d.path("events").path(t).asLong()).isZero();
        assertThat(a.path("outcomes")).isEmpty();
        assertThat(day(analytics(other, "?days=1"), LocalDate.now(ZoneOffset.UTC)).path("opened").asLong()).isEqualTo(1);
    }

    @Test
    void readingNeedsNotificationsReadAndAServerKey() {
        TestApp app = newApp();
        assertError(api.get("/v1/analytics", app.publicKey()), 403, "forbidden");
        assertError(api.get("/v1/analytics", serverKey(app, Scope.EVENTS_WRITE)), 403, "forbidden");
        assertThat(api.get("/v1/analytics", serverKey(app, Scope.NOTIFICATIONS_READ)).status()).isEqualTo(200);
        assertError(api.get("/v1/analytics", null), 401, "unauthorized");
    }
}
