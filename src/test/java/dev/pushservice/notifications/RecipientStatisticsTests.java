package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.storage.Uuid7;
import dev.pushservice.support.TestTokens;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A fan-out analyzes the recipients' partition it fills ({@link RecipientStatistics}) when its statistics lag: the tests run
 * with {@code push.notifications.analyze-after} 8 ({@code ApiTest}). Nothing else in the service runs
 * {@code ANALYZE} on recipients, and autovacuum's analyses count apart ({@code autoanalyze_count}).
 */
class RecipientStatisticsTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    @Autowired
    RecipientPartitionRepository partitions;

    @Test
    void aFanOutPastTheThresholdAnalyzesItsPartitionAndASmallerOneDoesNot() throws Exception {
        TestApp small = newApp();
        credentials(small);
        for (int i = 0; i < 5; i++) register(small, "ios", TestTokens.apns(), "");
        long before = analyses();
        finished(small, send(small, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}"));
        assertThat(analyses()).as("5 recipients: under the threshold").isEqualTo(before);

    }

    /**
     * Past the threshold, the partition is analyzed only when its statistics count fewer rows than the run
     * inserted (a new day's partition, analyzed empty); one whose statistics know a larger table is left alone.
     */
    @Test
    void aPartitionIsAnalyzedOnlyWhenItsStatisticsCountFewerRowsThanTheRunInserted() {
        UUID notification = Uuid7.at(Instant.now());
        double known = jdbc.sql("""
                        select coalesce(max(c.reltuples), -1) from storage_partitions p
                        join pg_class c on c.oid = to_regclass(quote_ident(p.name))
                        where p.parent = 'notification_recipients' and p.range_start <= now() and now() < p.range_end""")
                .query(Double.class).single();
        long before = analyses();

        if (known >= 1) {
            assertThat(partitions.analyzeRecipientsOf(notification, (long) known)).as("statistics count as many").isNull();
            assertThat(analyses()).isEqualTo(before);
        }
        String analyzed = partitions.analyzeRecipientsOf(notification, (long) Math.max(known, 0) + 1);
        assertThat(analyzed).startsWith("notification_recipients");
        assertThat(analyses()).isEqualTo(before + 1);

        double now = jdbc.sql("select reltuples from pg_class where oid = to_regclass(quote_ident(:name))")
                .param("name", analyzed).query(Double.class).single();
        assertThat(partitions.analyzeRecipientsOf(notification, (long) Math.max(now, 0))).as("just analyzed").isNull();
        assertThat(analyses()).isEqualTo(before + 1);
    }

    /** Manual analyses of every recipients partition so far (PostgreSQL counts them apart from autovacuum's). */
    private long analyses() {
        return jdbc.sql("select coalesce(sum(analyze_count), 0) from pg_stat_user_tables"
                + " where relname like 'notification_recipients%'").query(Long.class).single();
    }
}
