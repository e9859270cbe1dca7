package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pushservice.delivery.DeliveryEngine;
import dev.pushservice.delivery.DeliveryProperties;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.platform.db.DeliveryDatabase;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.support.TestTokens;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Delivery keeps its pace whatever else is slow, against the real peers: a slow Web Push service
 * holds back neither iOS nor Android nor another push service; slow recording holds back sending
 * (never more sent and unrecorded than the lane's window, twice its in-flight budget; nothing sent
 * twice); an
 * exhausted API connection pool does not stop a send from being recorded and finished. Every
 * assertion is about states (what was accepted while something else was still waiting), not times.
 */
class PaceTests extends PeerApiTest {

    /** A second push service (another origin than {@link #WEB}) that the tests make slow. */
    private static final LocalWebPushReceiver SLOW = LocalWebPushReceiver.start();

    @Autowired
    JdbcClient jdbc;

    @Autowired
    javax.sql.DataSource apiPool;

    @Autowired
    DeliveryDatabase deliveryDb;

    @Autowired
    DeliveryEngine delivery;

    @Autowired
    DeliveryProperties deliveryProperties;

    @AfterAll
    static void closeSlowReceiver() {
        SLOW.release();
        SLOW.close();
    }

    @Test
    void iosAndAndroidFinishWhileASlowPushServiceStillHasMostOfTheWebRecipients() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String[]> devices = new ArrayList<>();
        for (int i = 0; i < 300; i++) devices.add(new String[] {"ios", TestTokens.apns()});
        for (int i = 0; i < 300; i++) devices.add(new String[] {"android", TestTokens.fcm()});
        List<LocalWebPushReceiver.Subscriber> browsers = new ArrayList<>();
        for (int i = 0; i < 1200; i++) {
            LocalWebPushReceiver.Subscriber s = WEB.subscribe();
            WEB.delay(s.id(), Duration.ofSeconds(3)); // a push service answering a few dozen pushes a second
            browsers.add(s);
            devices.add(new String[] {"web", s.json()});
        }
        registerInterleaved(app, devices);
        String id = send(app, "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"high\",\"target\":{\"type\":\"all\"}}");
        try {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
                    .until(() -> accepted(id, "ios") == 300 && accepted(id, "android") == 300);
            long web = accepted(id, "web");
            assertThat(web).as("when iOS and Android are done, most web recipients still wait for their slow push service")
                    .isLessThan(600);
        } finally {
            browsers.forEach(s -> WEB.delay(s.id(), null));
        }
        // the push service answers at once again: the rest go (and leave the lane to the next test)
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).until(() ->
                "completed".equals(summary(app, id).path("status").asString()));
        assertThat(summary(app, id).path("accepted_count").asLong()).isEqualTo(1800);
    }

    @Test
    void aSlowPushServiceDoesNotHoldBackTheWebRecipientsOfAnother() throws Exception {
        TestApp app = newApp();
        List<String[]> devices = new ArrayList<>();
        List<LocalWebPushReceiver.Subscriber> slow = new ArrayList<>();
        List<LocalWebPushReceiver.Subscriber> fast = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            LocalWebPushReceiver.Subscriber s = SLOW.subscribe();
            slow.add(s);
            devices.add(new String[] {"web", s.json()});
            LocalWebPushReceiver.Subscriber f = WEB.subscribe();
            fast.add(f);
            devices.add(new String[] {"web", f.json()});
        }
        registerInterleaved(app, devices);
        SLOW.hold(); // answers nothing until released
        String id;
        try {
            id = send(app, "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"high\",\"target\":{\"type\":\"all\"}}");
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
                    .until(() -> fast.stream().allMatch(f -> !WEB.received(f.id()).isEmpty()));
            assertThat(slow.stream().filter(s -> !SLOW.received(s.id()).isEmpty()))
                    .as("the slow push service has answered none of its recipients yet").isEmpty();
        } finally {
            SLOW.release();
        }
        assertThat(finished(app, id).path("accepted_count").asLong()).isEqualTo(300);
        assertThat(fast).allSatisfy(f -> assertThat(WEB.received(f.id())).as("sent once").hasSize(1));
    }

    @Test
    void slowRecordingHoldsBackSendingSoNoMoreThanTheLanesWindowIsSentAndUnrecorded() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        List<String[]> devices = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            String token = TestTokens.apns();
            tokens.add(token);
            devices.add(new String[] {"ios", token});
        }
        registerInterleaved(app, devices);
        // the lane's unrecorded window: twice its in-flight budget (a batch is recorded while the next budget's worth is in flight)
        int window = 2 * deliveryProperties.lanes().get(Priority.HIGH).inFlight();
        // recording made slow for this app only: every accepted row written costs 20 ms in the recorder's transaction
        String trigger = "pace_tests_slow_" + app.appId().toString().replace("-", "");
        jdbc.sql("""
                create or replace function pace_tests_slow_record() returns trigger language plpgsql as $$
                begin perform pg_sleep(0.02); return new; end $$""").update();
        jdbc.sql("create trigger " + trigger + " before insert or update on notification_recipients for each row"
                + " when (new.app_id = '" + app.appId() + "'::uuid and new.status = 'accepted')"
                + " execute function pace_tests_slow_record()").update();
        // handed recipients accepted at their first attempt are written per batch (V58): 20 ms per member there
        jdbc.sql("""
                create or replace function pace_tests_slow_batch() returns trigger language plpgsql as $$
                begin perform pg_sleep(0.02 * cardinality(new.device_ids)); return new; end $$""").update();
        jdbc.sql("create trigger " + trigger + " before insert on notification_recipient_batches for each row"
                + " when (new.app_id = '" + app.appId() + "'::uuid)"
                + " execute function pace_tests_slow_batch()").update();
        try {
            String id = send(app, "{\"title\":\"a\",\"body\":\"b\",\"priority\":\"high\",\"target\":{\"type\":\"all\"}}");
            long mostAhead = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (System.nanoTime() < deadline) {
                // the peer first, the rows after: what the peer got by then was sent before the rows were read
                long sent = tokens.stream().mapToLong(t -> APNS_RECEIVED.getOrDefault(t, List.of()).size()).sum();
                long recorded = accepted(id, "ios");
                mostAhead = Math.max(mostAhead, sent - recorded);
                if (recorded == tokens.size()) break;
                LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
            }
            assertThat(accepted(id, "ios")).isEqualTo(tokens.size());
            assertThat(mostAhead).as("pushes the peer received beyond the rows recorded accepted, at most").isPositive()
                    .isLessThanOrEqualTo(window);
            assertThat(tokens).allSatisfy(t -> assertThat(APNS_RECEIVED.get(t)).as("sent once").hasSize(1));
        } finally {
            jdbc.sql("drop trigger " + trigger + " on notification_recipients").update();
            jdbc.sql("drop trigger " + trigger + " on notification_recipient_batches").update();
        }
    }

    @Test
    void aSendIsRecordedAndFinishedWhileTheApiPoolIsExhausted() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String[]> devices = new ArrayList<>();
        for (int i = 0; i < 20; i++) devices.add(new String[] {"ios", TestTokens.apns()});
        registerInterleaved(app, devices);
        String body = "{\"title\":\"a\",\"body\":\"b\",\"priority\":\"high\",\"target\":{\"type\":\"all\"}}";
        // the app's settings (provider credentials, delivery controls) are cached by a first send
        assertThat(finished(app, send(app, body)).path("status").asString()).isEqualTo("completed");

        String id;
        delivery.pause(); // the next send's recipients wait pending, materialized while the API pool is free
        try {
            id = send(app, body);
            await().atMost(WAIT).until(() -> jdbc.sql("select recipient_count from notifications where id = :id")
                    .param("id", UUID.fromString(id)).query(Long.class).optional().orElse(null) != null);
        } catch (RuntimeException | Error e) {
            delivery.resume();
            throw e;
        }
        HikariDataSource api = (HikariDataSource) apiPool;
        List<Connection> held = new ArrayList<>();
        try {
            for (int i = 0; i < api.getMaximumPoolSize(); i++) held.add(api.getConnection());
            delivery.resume();
            JdbcClient own = deliveryDb.jdbc(); // the test's reads must not wait for the API pool either
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() -> "completed".equals(
                    own.sql("select status from notifications where id = :id").param("id", UUID.fromString(id))
                            .query(String.class).single()));
            Map<String, Object> counts = own.sql("""
                            select count(*) filter (where status = 'accepted') as accepted, count(*) as total
                            from notification_recipient_states where notification_id = :id""")
                    .param("id", UUID.fromString(id)).query().singleRow();
            assertThat(counts).containsEntry("accepted", 20L).containsEntry("total", 20L);
        } finally {
            delivery.resume();
            for (Connection c : held) c.close();
        }
    }

    private long accepted(String notificationId, String platform) {
        return jdbc.sql("select count(*) from notification_recipient_states where notification_id = :id and platform = :p"
                        + " and status = 'accepted'")
                .param("id", UUID.fromString(notificationId)).param("p", platform).query(Long.class).single();
    }

    /** Devices straight into the table, in one statement: the fan-out reads them in an order that mixes their platforms. */
    private void registerInterleaved(TestApp app, List<String[]> devices) {
        UUID user = UUID.randomUUID();
        jdbc.sql("insert into users (id, app_id, tags) values (:id, :app, '{}'::jsonb)")
                .param("id", user).param("app", app.appId()).update();
        jdbc.sql("""
                        insert into devices (id, app_id, platform, token, token_hash, user_id)
                        select gen_random_uuid(), :app, p, t, sha256(convert_to(t, 'UTF8')), :user
                        from unnest(cast(:platforms as text[]), cast(:tokens as text[])) as x(p, t)""")
                .param("app", app.appId()).param("user", user)
                .param("platforms", devices.stream().map(d -> d[0]).toArray(String[]::new))
                .param("tokens", devices.stream().map(d -> d[1]).toArray(String[]::new)).update();
    }
}
