package dev.pushservice.segments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.context.TestPropertySource;

/**
 * Estimates of an app above {@code push.segments.estimate-exact-limit} are counted on a sample of the
 * devices table's pages and scaled ({@link SegmentService#count}); an app below it is counted exactly,
 * whatever the table holds. Limits are small here (2,000 devices, samples of 1,000) so that 20,000
 * devices loaded set-based take the sampled path; each sampled figure is compared with the exact count
 * of the same filter, computed here from the rows.
 */
@TestPropertySource(properties = {"push.segments.estimate-exact-limit=2000", "push.segments.estimate-sample-devices=1000"})
class SegmentEstimateSamplingTests extends ApiTest {

    private static final int DEVICES = 20_000;

    @Autowired
    JdbcClient jdbc;

    /**
     * Device n (1..DEVICES): a user each; plan gold for n % 4 = 0; android for n % 3 = 0, else ios;
     * an {@code opened} event within a day for n % 5 < 2 (40%), none else; disabled for n % 50 = 0.
     */
    private void load(TestApp app) {
        jdbc.sql("""
                        insert into users (id, app_id, external_user_id, tags, created_at, updated_at)
                        select md5(:app || '-user-' || n)::uuid, cast(:app as uuid), 'user-' || n,
                               jsonb_build_object('plan', case when n % 4 = 0 then 'gold' else 'free' end), now(), now()
                        from generate_series(1, :devices) n""")
                .param("app", app.appId().toString()).param("devices", DEVICES).update();
        jdbc.sql("""
                        insert into devices (id, app_id, platform, token, token_hash, user_id, enabled, created_at, updated_at)
                        select md5(:app || '-device-' || n)::uuid, cast(:app as uuid), case when n % 3 = 0 then 'android' else 'ios' end,
                               'sampling-token-' || :app || '-' || n, sha256(('sampling-token-' || :app || '-' || n)::bytea),
                               md5(:app || '-user-' || n)::uuid, n % 50 <> 0, now(), now()
                        from generate_series(1, :devices) n""")
                .param("app", app.appId().toString()).param("devices", DEVICES).update();
        jdbc.sql("""
                        insert into device_event_last (app_id, device_id, event_key, last_at)
                        select cast(:app as uuid), md5(:app || '-device-' || n)::uuid, 'opened', now() - interval '1 hour'
                        from generate_series(1, :devices) n where n % 5 < 2""")
                .param("app", app.appId().toString()).param("devices", DEVICES).update();
        // the statistics the estimate reads the table's size from
        jdbc.sql("analyze devices").update();
    }

    private TestApi.Response estimate(TestApp app, String filter) {
        TestApi.Response r = api.post("/v1/segments/estimate", app.serverKey(), "{\"filter\":" + filter + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.json().path("exact").isBoolean()).as("says whether it counted every device: " + r).isTrue();
        return r;
    }

    private long exact(TestApp app, String where) {
        return jdbc.sql("select count(*) from devices d where d.app_id = :app and d.enabled and d.invalidated_at is null and " + where)
                .param("app", app.appId()).query(Long.class).single();
    }

    @Test
    void aLargeAppIsCountedOnASampleAndScaledCloseToTheExactCountAndTheSameWhenAskedAgain() {
        TestApp large = newApp();
        load(large);
        String[][] cases = {
                {"{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}", "d.platform = 'android'"},
                {"{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}",
                        "exists (select 1 from users u where u.id = d.user_id and u.tags ->> 'plan' = 'gold')"},
                {"{\"field\":\"event.opened\",\"operator\":\"within_days\",\"value\":7}",
                        "exists (select 1 from device_event_last e where e.device_id = d.id and e.event_key = 'opened')"},
                {"{\"any\":[{\"all\":[{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"},"
                        + "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}]},"
                        + "{\"field\":\"event.opened\",\"operator\":\"not_exists\"}]}",
                        "((exists (select 1 from users u where u.id = d.user_id and u.tags ->> 'plan' = 'gold') and d.platform = 'android')"
                                + " or not exists (select 1 from device_event_last e where e.device_id = d.id and e.event_key = 'opened'))"}};
        for (String[] c : cases) {
            long exact = exact(large, c[1]);
            TestApi.Response r = estimate(large, c[0]);
            assertThat(r.json().path("exact").asBoolean()).as(c[0]).isFalse();
            long sampled = r.json().path("estimated_recipients").asLong();
            // a sample of about 1,000 devices: within 15% of the exact count (several standard errors)
            assertThat((double) sampled).as(c[0] + " sampled against exact " + exact).isCloseTo(exact, org.assertj.core.data.Percentage.withPercentage(15));
            assertThat(estimate(large, c[0]).json().path("estimated_recipients").asLong()).as("asked again").isEqualTo(sampled);
        }
        // nothing matches: nothing in any sample
        TestApi.Response none = estimate(large, "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"none\"}");
        assertThat(none.json().path("estimated_recipients").asLong()).isZero();
        assertThat(none.json().path("exact").asBoolean()).isFalse();
    }

    @Test
    void aSmallAppIsCountedExactlyBesideALargeOne() {
        TestApp large = newApp();
        load(large);
        TestApp small = newApp();
        for (int i = 0; i < 3; i++) {
            assertThat(api.post("/v1/devices/register", small.publicKey(),
                    "{\"platform\":\"ios\",\"push_token\":\"" + dev.pushservice.support.TestTokens.apns() + "\",\"external_user_id\":\"u" + i + "\"}")
                    .status()).isEqualTo(201);
        }
        TestApi.Response r = estimate(small, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}");
        assertThat(r.json().path("exact").asBoolean()).isTrue();
        assertThat(r.json().path("estimated_recipients").asLong()).isEqualTo(3);
    }
}
