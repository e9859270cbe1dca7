package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.storage.Uuid7;
import dev.pushservice.support.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The delivery claim walks the work index in due order and stops at its limit even where the planner
 * statistics say the recipients' partition is empty, as they say of every new day's partition until it
 * is analyzed. Unpinned, that plan sorted the notification's whole backlog for every chunk
 * (bench/README.md, 2026-11-27). A fresh database, so every partition's statistics are those of an
 * empty table.
 */
class ClaimPlanTests {

    @Test
    void theClaimWalksTheWorkIndexWhenStatisticsSayThePartitionIsEmpty() {
        DatabaseUrl url = TestDatabase.newDatabase();
        DriverManagerDataSource ds = new DriverManagerDataSource(url.jdbcUrl(), url.username(), url.password());
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().migrate();
        JdbcClient jdbc = JdbcClient.create(ds);
        UUID notification = Uuid7.at(Instant.now());
        jdbc.sql("""
                        insert into organisations (id, name) values ('00000000-0000-4000-8000-000000000001', 'o');
                        insert into apps (id, org_id, name) values ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'a');
                        insert into notifications (id, app_id, idempotency_key, request_hash, status, priority, interruption_level,
                                                   content, audience, audience_at, created_at, updated_at)
                        values (:id, '00000000-0000-4000-8000-000000000002', 'k', '\\x00', 'processing', 'bulk', 'active',
                                '{}', '{}', now(), now(), now());
                        analyze notification_recipients;""")
                .param("id", notification).update();
        // the statistics stay those of the empty table: the rows arrive after the analyze, as a fan-out's do
        jdbc.sql("""
                        insert into notification_recipients (notification_id, device_id, app_id, platform, status, next_attempt_at, updated_at)
                        select :id, gen_random_uuid(), '00000000-0000-4000-8000-000000000002', 'ios', 'pending',
                               now() - g * interval '1 millisecond', now()
                        from generate_series(1, 20000) g""")
                .param("id", notification).update();
        TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(ds));
        Instant now = Instant.now();

        List<String> plan = tx.execute(status -> {
            // JIT on as PostgreSQL ships it (where the server has no LLVM, pg_jit_available() is false and no plan shows JIT)
            jdbc.sql("select set_config('jit', 'on', true)").query(String.class).single();
            String[] was = DeliveryRecipientRepository.pinClaimPlan(jdbc);
            List<String> lines = DeliveryRecipientRepository.claimStatement(jdbc, "explain ", Priority.BULK, Platform.IOS,
                    500, now, now.plus(Duration.ofMinutes(2)), DeliveryStore.Apps.ALL).query(String.class).list();
            DeliveryRecipientRepository.restorePlanner(jdbc, was);
            assertThat(jdbc.sql("select current_setting('enable_sort') || current_setting('jit')").query(String.class).single())
                    .as("the rest of the transaction plans as before").isEqualTo("on" + was[3]);
            return lines;
        });

        String text = String.join("\n", plan);
        // no Sort of the recipients by due time (the notifications the claim walks, a few rows, may be sorted)
        assertThat(text).as(text).doesNotContainPattern("Sort  \\(.*\\n\\s+Sort Key: r\\.next_attempt_at");
        // nor JIT compilation, which the pinned plan's disabled-path costs would otherwise bring (seconds per claim)
        assertThat(text).as(text).doesNotContain("JIT:");
        assertThat(text).as(text).contains("Merge Append")
                .containsPattern("Index Scan using \\S+ on notification_recipients_p\\d{8} ");
    }
}
