package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.TestTokens;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A fan-out analyzes the recipients' partition it fills ({@link RecipientStatistics}): the tests run
 * with {@code push.notifications.analyze-after} 8 ({@code ApiTest}). Nothing else in the service runs
 * {@code ANALYZE} on recipients, and autovacuum's analyses count apart ({@code autoanalyze_count}).
 */
class RecipientStatisticsTests extends PeerApiTest {

    @Autowired
    JdbcClient jdbc;

    @Test
    void aFanOutPastTheThresholdAnalyzesItsPartitionAndASmallerOneDoesNot() throws Exception {
        TestApp small = newApp();
        credentials(small);
        for (int i = 0; i < 5; i++) register(small, "ios", TestTokens.apns(), "");
        long before = analyses();
        finished(small, send(small, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}"));
        assertThat(analyses()).as("5 recipients: under the threshold").isEqualTo(before);

        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 12; i++) register(app, "ios", TestTokens.apns(), "");
        String id = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertThat(finished(app, id).path("accepted_count").asLong()).isEqualTo(12);

        assertThat(analyses()).as("12 recipients in pages of 4: analyzed at 8").isEqualTo(before + 1);
    }

    /** Manual analyses of every recipients partition so far (PostgreSQL counts them apart from autovacuum's). */
    private long analyses() {
        return jdbc.sql("select coalesce(sum(analyze_count), 0) from pg_stat_user_tables"
                + " where relname like 'notification_recipients%'").query(Long.class).single();
    }
}
