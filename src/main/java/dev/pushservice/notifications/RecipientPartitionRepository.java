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
     * a version 7 id, unless its statistics already count at least {@code inserted} rows (the run's own so
     * far): then they are within twice of what it holds, and an {@code ANALYZE} (a 30,000-row sample, 250 ms
     * of a 300,000-row partition here) would only slow the fan-out. Returns the partition's name when it was
     * analyzed, else null. The partition comes from the registry (V49) by the id's time, not from a row: the
     * first pages' rows may not exist yet (handed over, inserted when recorded). Run it outside a
     * transaction: it holds its lock (which lets inserts and updates through) until the end.
     */
    String analyzeRecipientsOf(UUID notificationId, long inserted) {
        Partition partition = jdbc.sql("""
                        select p.name, coalesce(c.reltuples, -1) as reltuples
                        from (select coalesce((select name from storage_partitions where parent = 'notification_recipients'
                                                 and range_start <= :at and :at < range_end),
                                              'notification_recipients_default') as name) p
                        left join pg_class c on c.oid = to_regclass(quote_ident(p.name))""")
                .param("at", OffsetDateTime.ofInstant(Uuid7.time(notificationId), ZoneOffset.UTC))
                .query((rs, n) -> new Partition(rs.getString("name"), rs.getDouble("reltuples")))
                .single();
        if (partition.reltuples() >= inserted) return null;
        // a name from the registry, written by the partition maintenance: quoted all the same
        jdbc.sql("analyze " + quoteIdentifier(partition.name())).update();
        return partition.name();
    }

    /** A partition and the row count its statistics hold (-1: never analyzed). */
    private record Partition(String name, double reltuples) {
    }

    private static String quoteIdentifier(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }
}
