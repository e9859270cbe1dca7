package dev.pushservice.notifications;

import dev.pushservice.platform.storage.Uuid7;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** The {@code notification_recipients} partition of a notification, for {@link RecipientStatistics}. */
@Repository
class RecipientPartitionRepository {

    private final JdbcClient jdbc;

    RecipientPartitionRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * {@code ANALYZE} of the partition that holds (or will hold) the recipients of {@code notificationId},
     * a version 7 id; returns its name. The partition comes from the registry (V49) by the id's time, not
     * from a row: the first pages' rows may not exist yet (handed over, inserted when recorded). Run it
     * outside a transaction: it holds its lock (which lets inserts and updates through) until the end.
     */
    String analyzeRecipientsOf(UUID notificationId) {
        String partition = jdbc.sql("""
                        select coalesce((select name from storage_partitions where parent = 'notification_recipients'
                                           and range_start <= :at and :at < range_end),
                                        'notification_recipients_default')""")
                .param("at", OffsetDateTime.ofInstant(Uuid7.time(notificationId), ZoneOffset.UTC))
                .query(String.class).single();
        // a name from the registry, written by the partition maintenance: quoted all the same
        jdbc.sql("analyze " + quoteIdentifier(partition)).update();
        return partition;
    }

    private static String quoteIdentifier(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }
}
