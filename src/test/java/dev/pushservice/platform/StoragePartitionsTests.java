package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.storage.PartitionMaintenance;
import dev.pushservice.platform.storage.Uuid7;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.net.http.HttpRequest;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Bounded storage (docs/storage.md): the time-partitioned tables have their partitions ahead of the
 * clock, a row with no partition yet lands in the default one and moves into its partition once that
 * is made, and retention drops whole partitions while a notification keeps answering with its counts.
 * An application instance of its own on a database of its own: retention here drops the day's
 * partitions, which the shared test database's other tests are using.
 */
class StoragePartitionsTests {

    private static final DateTimeFormatter DAY = DateTimeFormatter.ofPattern("yyyyMMdd").withZone(ZoneOffset.UTC);

    private final DatabaseUrl db = TestDatabase.newDatabase();
    private final LocalFcmServer fcm = new LocalFcmServer(0).start();

    @AfterEach
    void stopPeer() {
        fcm.close();
    }

    @Test
    void partitionsAheadDefaultPartitionAndRetentionKeepingTheSummary() throws Exception {
        try (AppInstance app = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.fcm.base-url", fcm.baseUrl().toString())
                .start()) {
            JdbcClient jdbc = app.jdbc();
            Instant now = Instant.now();

            // ahead: a week of daily partitions from today (recipients, lifecycle facts), weeks of events and webhook deliveries
            for (int d = 0; d <= 7; d++) {
                String day = DAY.format(now.plus(d, ChronoUnit.DAYS));
                assertThat(partitionOf(jdbc, "notification_recipients_p" + day)).isEqualTo("notification_recipients");
                assertThat(partitionOf(jdbc, "lifecycle_events_p" + day)).isEqualTo("lifecycle_events");
            }
            LocalDate monday = LocalDate.ofInstant(now, ZoneOffset.UTC).with(java.time.DayOfWeek.MONDAY);
            assertThat(partitionOf(jdbc, "events_p" + monday.format(DateTimeFormatter.BASIC_ISO_DATE))).isEqualTo("events");
            assertThat(partitionOf(jdbc, "events_p" + monday.plusWeeks(1).format(DateTimeFormatter.BASIC_ISO_DATE)))
                    .isEqualTo("events");
            assertThat(partitionOf(jdbc, "webhook_deliveries_p" + monday.format(DateTimeFormatter.BASIC_ISO_DATE)))
                    .isEqualTo("webhook_deliveries");
            assertThat(partitionOf(jdbc, "webhook_deliveries_p" + monday.plusWeeks(1).format(DateTimeFormatter.BASIC_ISO_DATE)))
                    .isEqualTo("webhook_deliveries");

            // a notification sent to completion: its recipients in today's partition
            TenantService tenants = app.bean(TenantService.class);
            Tenants.Organisation org = tenants.createOrganisation("retention");
            Tenants.App a = tenants.createApp(org.id(), "retention app", "UTC");
            String key = tenants.issueKey(a.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "retention-" + a.id());
            TestApi.Response settings = app.api.patch("/v1/app/settings", key,
                    "{\"fcm\":{\"service_account\":" + account.json(fcm.tokenUri()) + "}}");
            assertThat(settings.status()).as(settings.toString()).isEqualTo(200);
            List<String> tokens = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                String token = "retention-" + UUID.randomUUID();
                tokens.add(token);
                fcm.replyFor(token, i < 20 ? LocalFcmServer.Reply.ok() : LocalFcmServer.Reply.invalidToken());
            }
            jdbc.sql("""
                            insert into devices (id, app_id, platform, token, token_hash)
                            select gen_random_uuid(), :app, 'android', t, sha256(convert_to(t, 'UTF8'))
                            from unnest(cast(:tokens as text[])) as t""")
                    .param("app", a.id()).param("tokens", tokens.toArray(String[]::new)).update();
            TestApi.Response created = app.api.send(app.api.request("/v1/notifications", key)
                    .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}")));
            assertThat(created.status()).as(created.toString()).isEqualTo(202);
            String id = created.json().path("notification_id").asString();
            assertThat(UUID.fromString(id).version()).as("time-ordered notification ids").isEqualTo(7);
            await().atMost(Duration.ofSeconds(60)).until(() -> jdbc.sql(
                    "select summary is not null from notifications where id = cast(:id as uuid)").param("id", id)
                    .query(Boolean.class).single());
            assertThat(jdbc.sql("select distinct tableoid::regclass::text from notification_recipients where notification_id = cast(:id as uuid)")
                    .param("id", id).query(String.class).list())
                    .containsExactly("notification_recipients_p" + DAY.format(Uuid7.time(UUID.fromString(id))));
            // the accepted ones (handed to the lane, accepted at their first attempt) are stored per batch (V58)
            assertThat(jdbc.sql("select distinct tableoid::regclass::text from notification_recipient_batches where notification_id = cast(:id as uuid)")
                    .param("id", id).query(String.class).list())
                    .containsExactly("notification_recipient_batches_p" + DAY.format(Uuid7.time(UUID.fromString(id))));
            TestApi.Response before = app.api.get("/v1/notifications/" + id, key);
            assertThat(before.status()).isEqualTo(200);
            assertThat(before.json().path("accepted_count").asLong()).isEqualTo(20);
            assertThat(before.json().path("failed_count").asLong()).isEqualTo(10);
            assertThat(app.api.get("/v1/notifications/" + id + "/recipients", key).json().path("data").size()).isEqualTo(30);

            // a recipient of a notification 60 days ahead: no partition yet, so the default one takes it
            UUID later = Uuid7.at(now.plus(60, ChronoUnit.DAYS));
            jdbc.sql("""
                            insert into notification_recipients (notification_id, device_id, app_id, platform, status,
                                                                 next_attempt_at, updated_at)
                            values (:n, gen_random_uuid(), :app, 'android', 'pending', now(), now())""")
                    .param("n", later).param("app", a.id()).update();
            assertThat(tableOf(jdbc, later)).isEqualTo("notification_recipients_default");

            // 40 days on, with a notification of today still without its summary: recipients are kept
            PartitionMaintenance maintenance = app.bean(PartitionMaintenance.class);
            UUID unfinished = UUID.randomUUID();
            jdbc.sql("""
                            insert into notifications (id, app_id, idempotency_key, request_hash, status, priority,
                                                       interruption_level, content, audience, audience_at, created_at, updated_at)
                            values (:id, :app, :key, '\\x00', 'processing', 'normal', 'active', '{}', '{}', :at, :at, :at)""")
                    .param("id", unfinished).param("app", a.id()).param("key", unfinished.toString())
                    .param("at", Timestamp.from(now)).update();
            PartitionMaintenance.Result held = maintenance.run(now.plus(40, ChronoUnit.DAYS));
            // (the partitions of rows from before the conversion go: nothing from before it is unfinished)
            assertThat(held.dropped()).contains("notification_recipients_legacy", "notification_recipients_legacy_high",
                    "lifecycle_events_legacy", "lifecycle_events_p" + DAY.format(now));
            assertThat(held.dropped()).noneMatch(p -> p.startsWith("notification_recipients_p")
                    || p.startsWith("notification_recipient_batches_p"));
            assertThat(countOf(jdbc, id)).isEqualTo(30);

            // once it has its summary, the day's partition goes, whole
            jdbc.sql("update notifications set status = 'failed', summary = '[]' where id = :id").param("id", unfinished).update();
            PartitionMaintenance.Result result = maintenance.run(now.plus(40, ChronoUnit.DAYS));
            assertThat(result.dropped()).contains("notification_recipients_p" + DAY.format(now),
                    "notification_recipient_batches_p" + DAY.format(now));
            assertThat(result.dropped()).noneMatch(p -> p.equals("notification_recipients_p" + DAY.format(now.plus(15, ChronoUnit.DAYS))));
            assertThat(partitionOf(jdbc, "notification_recipients_p" + DAY.format(now))).isNull();
            assertThat(countOf(jdbc, id)).isZero();

            TestApi.Response after = app.api.get("/v1/notifications/" + id, key);
            assertThat(after.status()).isEqualTo(200);
            assertThat(after.json().path("status").asString()).isEqualTo(before.json().path("status").asString());
            assertThat(after.json().path("accepted_count").asLong()).isEqualTo(20);
            assertThat(after.json().path("failed_count").asLong()).isEqualTo(10);
            assertThat(after.json().path("counts")).isEqualTo(before.json().path("counts"));
            assertThat(after.json().path("platforms")).isEqualTo(before.json().path("platforms"));
            TestApi.Response list = app.api.get("/v1/notifications/" + id + "/recipients", key);
            assertThat(list.status()).isEqualTo(200);
            assertThat(list.json().path("data").size()).isZero();

            // the day of the stray recipient gets its partition: the row moves out of the default one
            maintenance.run(now.plus(55, ChronoUnit.DAYS));
            assertThat(tableOf(jdbc, later)).isEqualTo("notification_recipients_p" + DAY.format(now.plus(60, ChronoUnit.DAYS)));
            assertThat(jdbc.sql("select count(*) from notification_recipients_default").query(Long.class).single()).isZero();
        }
    }

    private static String partitionOf(JdbcClient jdbc, String partition) {
        return jdbc.sql("""
                        select p.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
                        join pg_class p on p.oid = i.inhparent where c.relname = :name""")
                .param("name", partition).query(String.class).optional().orElse(null);
    }

    private static String tableOf(JdbcClient jdbc, UUID notification) {
        return jdbc.sql("select tableoid::regclass::text from notification_recipients where notification_id = :n")
                .param("n", notification).query(String.class).single();
    }

    /** The notification's recipients: its rows and its batches' members (V58). */
    private static long countOf(JdbcClient jdbc, String notification) {
        return jdbc.sql("select count(*) from notification_recipient_states where notification_id = cast(:n as uuid)")
                .param("n", notification).query(Long.class).single();
    }
}
