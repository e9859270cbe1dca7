package dev.pushservice.platform.storage;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Transactional;

/**
 * The partitions of the time-partitioned tables (V49 to V52, V54): their registry and the functions that
 * create and drop them. Every change takes one advisory lock, so two instances maintaining at the
 * same time take turns instead of racing to create the same partition.
 */
@Repository
class PartitionRepository {

    /** Key of the advisory lock every partition change takes (any constant shared by all instances). */
    private static final long LOCK = 0x7061_7274_6974_6e73L; // "partitns"

    /** How long a change waits for a table's lock before giving up until the next run. */
    static final String LOCK_TIMEOUT = "5s";

    /** A partition retention may drop: its table and the newest time its rows can be about. */
    record Partition(String name, String parent, Instant dataUntil) {
    }

    private final JdbcClient jdbc;

    PartitionRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Creates the missing partitions of every table for the periods from {@code from} to {@code to}; how many. */
    @Transactional
    int create(Instant from, Instant to) {
        // an attach waits for the default partition's lock: never queue every writer behind a long transaction
        jdbc.sql("select set_config('lock_timeout', :timeout, true)").param("timeout", LOCK_TIMEOUT).query().singleRow();
        jdbc.sql("select pg_advisory_xact_lock(:lock)").param("lock", LOCK).query().singleRow();
        return jdbc.sql("select storage_create_partitions(:from, :to)")
                .param("from", Timestamp.from(from)).param("to", Timestamp.from(to)).query(Integer.class).single();
    }

    List<String> tables() {
        return jdbc.sql("select parent from storage_partitioned_tables order by parent").query(String.class).list();
    }

    /** The partitions of {@code parent} whose rows are all about times at or before {@code cutoff}, oldest first. */
    List<Partition> expired(String parent, Instant cutoff) {
        return jdbc.sql("""
                        select name, parent, data_until from storage_partitions
                        where parent = :parent and data_until <= :cutoff order by data_until, name""")
                .param("parent", parent).param("cutoff", Timestamp.from(cutoff))
                .query((rs, n) -> new Partition(rs.getString("name"), rs.getString("parent"),
                        rs.getTimestamp("data_until").toInstant()))
                .list();
    }

    /**
     * Whether a notification whose audience time is before {@code until} has no summary yet (it is not
     * finished, or a cancelled one still has recipients in flight): its recipient rows are still needed.
     */
    boolean unfinishedNotificationBefore(Instant until) {
        return jdbc.sql("select exists (select 1 from notifications where summary is null and audience_at < :until)")
                .param("until", Timestamp.from(until)).query(Boolean.class).single();
    }

    /**
     * Whether the partition's rows are still needed by its table's own rule (V54 {@code held_by}: a
     * month of journey executions while one of them is active or waiting); the drop asks again under
     * the parent's lock and refuses then.
     */
    boolean held(String name) {
        return jdbc.sql("select storage_partition_held(:name)").param("name", name).query(Boolean.class).single();
    }

    /** Detaches and drops one partition; fails after {@link #LOCK_TIMEOUT} when the parent stays locked. */
    @Transactional
    void drop(String name) {
        jdbc.sql("select set_config('lock_timeout', :timeout, true)").param("timeout", LOCK_TIMEOUT).query().singleRow();
        jdbc.sql("select pg_advisory_xact_lock(:lock)").param("lock", LOCK).query().singleRow();
        jdbc.sql("select storage_drop_partition(:name)").param("name", name).query().singleRow();
    }
}
