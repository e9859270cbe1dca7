package dev.pushservice.platform.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.TestDatabase;
import java.util.List;
import java.util.Map;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationVersion;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * V49 and V50 convert existing tables in place: a database migrated to the version before V49 and filled by the old
 * schema keeps every row, the daily outcome counts (the copy fires no trigger), the triggers, foreign
 * keys, indexes and views over the tables, and the lifecycle id sequence, once migrated on.
 */
class PartitioningMigrationTests {

    @Test
    void existingRowsMoveIntoThePartitionedTablesWithTheirTriggersAndViews() {
        DatabaseUrl url = TestDatabase.newDatabase();
        DriverManagerDataSource ds = new DriverManagerDataSource(url.jdbcUrl(), url.username(), url.password());
        // the last migration before the conversion (other branches add versions below V49)
        MigrationVersion before = java.util.Arrays.stream(
                        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().info().all())
                .map(MigrationInfo::getVersion)
                .filter(v -> v != null && v.compareTo(MigrationVersion.fromVersion("49")) < 0)
                .max(MigrationVersion::compareTo).orElseThrow();
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").target(before).load().migrate();
        JdbcClient jdbc = JdbcClient.create(ds);
        jdbc.sql("""
                insert into organisations (id, name) values ('00000000-0000-4000-8000-000000000001', 'o');
                insert into apps (id, org_id, name) values ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'a');
                insert into notifications (id, app_id, idempotency_key, request_hash, status, priority, interruption_level,
                                           content, audience, audience_at, created_at, updated_at, summary)
                select gen_random_uuid(), '00000000-0000-4000-8000-000000000002', 'k' || g, '\\x00',
                       case when g <= 90 then 'completed' else 'processing' end, 'normal', 'active', '{}', '{}',
                       now() - interval '3 days', now() - interval '3 days', now(), case when g <= 90 then '[]'::jsonb end
                from generate_series(1, 100) g;
                insert into notification_recipients (notification_id, device_id, app_id, platform, status, next_attempt_at, updated_at)
                select n.id, gen_random_uuid(), n.app_id, 'ios', case when g % 4 = 0 then 'pending' else 'accepted' end, now(), now()
                from notifications n, generate_series(1, 40) g;
                insert into events (id, app_id, event_type, device_id, occurred_at, received_at)
                select gen_random_uuid(), '00000000-0000-4000-8000-000000000002', 'opened', gen_random_uuid(),
                       now() - g * interval '1 hour', now()
                from generate_series(1, 500) g;
                insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                select '00000000-0000-4000-8000-000000000002', 'notification.created', gen_random_uuid(), '{}',
                       now() - g * interval '1 hour'
                from generate_series(1, 300) g;""").update();
        long accepted = accepted(jdbc);
        assertThat(accepted).isEqualTo(3000);
        long lastFact = jdbc.sql("select max(id) from lifecycle_events").query(Long.class).single();
        List<String> triggers = triggers(jdbc);
        assertThat(triggers).contains("events.events_recorded", "events.events_start_journeys",
                "notification_recipients.notification_recipients_outcomes_ins",
                "notification_recipients.notification_recipients_outcomes_upd");

        // up to the last migration before V55, which merged the recipients' count triggers: the conversion itself keeps them all
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").target(MigrationVersion.fromVersion("54")).load().migrate();

        for (String table : List.of("notification_recipients", "events", "lifecycle_events", "webhook_deliveries")) {
            assertThat(jdbc.sql("select relkind::text from pg_class where relname = :t").param("t", table)
                    .query(String.class).single()).as(table).isEqualTo("p");
        }
        assertThat(count(jdbc, "notification_recipients")).isEqualTo(4000);
        assertThat(count(jdbc, "events")).isEqualTo(500);
        assertThat(count(jdbc, "lifecycle_events")).isEqualTo(300);
        // old (random) notification ids: in the partitions for rows from before the conversion
        // (or, for the few whose random id falls in the coming days, those days' partitions)
        Map<String, Long> where = jdbc.sql("""
                        select case when tableoid::regclass::text like 'notification_recipients_legacy%' then 'legacy'
                                    else tableoid::regclass::text end as part, count(*) as n
                        from notification_recipients group by 1""")
                .query((rs, n) -> Map.entry(rs.getString("part"), rs.getLong("n"))).list().stream()
                .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        assertThat(where.getOrDefault("legacy", 0L)).isGreaterThan(3900);
        assertThat(triggers(jdbc)).containsAll(triggers);
        assertThat(accepted(jdbc)).as("the copy counted nothing again").isEqualTo(accepted);
        assertThat(jdbc.sql("select count(*) from notification_recipient_states").query(Long.class).single()).isEqualTo(4000);
        assertThat(jdbc.sql("select count(*) from pg_constraint where conname = 'events_app_id_fkey' and conrelid = 'events'::regclass").query(Long.class).single())
                .isEqualTo(1);
        assertThat(jdbc.sql("select indexname from pg_indexes where tablename = 'notification_recipients'").query(String.class).list())
                .contains("notification_recipients_pkey", "notification_recipients_work_idx");

        // V55 and later: one count trigger per event, on the partitioned parent
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().migrate();
        assertThat(triggers(jdbc)).contains("notification_recipients.notification_recipients_counts_ins",
                        "notification_recipients.notification_recipients_counts_upd")
                .doesNotContain("notification_recipients.notification_recipients_outcomes_ins",
                        "notification_recipients.notification_recipients_outcomes_upd");
        // the statement trigger on the partitioned parent counts what becomes terminal from now on
        int done = jdbc.sql("update notification_recipients set status = 'accepted', updated_at = now() where status = 'pending'").update();
        assertThat(done).isEqualTo(1000);
        assertThat(accepted(jdbc)).isEqualTo(accepted + 1000);
        // lifecycle ids go on from the same sequence
        jdbc.sql("insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)"
                + " values ('00000000-0000-4000-8000-000000000002', 'x', gen_random_uuid(), '{}', now())").update();
        assertThat(jdbc.sql("select max(id) from lifecycle_events").query(Long.class).single()).isEqualTo(lastFact + 1);
    }

    private static long accepted(JdbcClient jdbc) {
        return jdbc.sql("select coalesce(sum(count), 0) from delivery_daily_counts where outcome = 'accepted'")
                .query(Long.class).single();
    }

    private static long count(JdbcClient jdbc, String table) {
        return jdbc.sql("select count(*) from " + table).query(Long.class).single();
    }

    private static List<String> triggers(JdbcClient jdbc) {
        return jdbc.sql("""
                        select c.relname || '.' || t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
                        where not t.tgisinternal and c.relname in ('notification_recipients', 'events', 'lifecycle_events')
                        order by 1""").query(String.class).list();
    }
}
