package dev.pushservice.platform.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.TestDatabase;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * V60: the arrays of handovers and recorded batches have no statistics (ANALYZE skips them), their uuid
 * arrays are stored without compression attempts, and the batches' provider message ids with lz4 where the
 * server has it, in every partition: those the migration found and those the partition maintenance makes later.
 */
class ArrayStorageMigrationTests {

    @Test
    void uuidArraysAreNeverCompressedAndLaterPartitionsTakeTheSettings() {
        DatabaseUrl url = TestDatabase.newDatabase();
        DriverManagerDataSource ds = new DriverManagerDataSource(url.jdbcUrl(), url.username(), url.password());
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().migrate();
        JdbcClient jdbc = JdbcClient.create(ds);
        // a partition made after the migration, as the maintenance task makes them
        assertThat(jdbc.sql("select storage_create_partition('notification_recipient_batches', now() + interval '40 days')")
                .query(Boolean.class).single()).isTrue();

        List<String> batchTables = jdbc.sql("""
                        select 'notification_recipient_batches' union all
                        select inhrelid::regclass::text from pg_inherits
                        where inhparent = 'notification_recipient_batches'::regclass""")
                .query(String.class).list();
        assertThat(batchTables).hasSizeGreaterThan(9); // parent, default, the migration's eight days, the later one
        for (String table : batchTables) {
            assertThat(storage(jdbc, table, "device_ids")).as(table).isEqualTo("e");
            assertThat(storage(jdbc, table, "user_ids")).as(table).isEqualTo("e");
            assertThat(storage(jdbc, table, "external_user_ids")).as(table).isEqualTo("x");
            for (String column : List.of("device_ids", "user_ids", "external_user_ids", "provider_message_ids")) {
                assertThat(statisticsTarget(jdbc, table, column)).as(table + "." + column).isZero();
            }
            assertThat(statisticsTarget(jdbc, table, "notification_id")).as(table).isNotEqualTo(0);
        }
        for (String column : List.of("device_ids", "user_ids", "platforms", "external_user_ids", "render_values")) {
            assertThat(statisticsTarget(jdbc, "notification_handovers", column)).as(column).isZero();
        }
        assertThat(storage(jdbc, "notification_handovers", "device_ids")).isEqualTo("e");
        assertThat(storage(jdbc, "notification_handovers", "user_ids")).isEqualTo("e");
        assertThat(storage(jdbc, "notification_handovers", "platforms")).isEqualTo("x");

        boolean lz4 = jdbc.sql("select count(*) > 0 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)")
                .query(Boolean.class).single();
        for (String table : batchTables) {
            assertThat(compression(jdbc, table, "provider_message_ids")).as(table).isEqualTo(lz4 ? "l" : "");
        }
    }

    private static String storage(JdbcClient jdbc, String table, String column) {
        return jdbc.sql("select attstorage::text from pg_attribute where attrelid = cast(:t as regclass) and attname = :c")
                .param("t", table).param("c", column).query(String.class).single();
    }

    /** The column's statistics target: -1 (or null from PostgreSQL 17) is the default. */
    private static int statisticsTarget(JdbcClient jdbc, String table, String column) {
        return jdbc.sql("select coalesce(attstattarget, -1) from pg_attribute where attrelid = cast(:t as regclass) and attname = :c")
                .param("t", table).param("c", column).query(Integer.class).single();
    }

    private static String compression(JdbcClient jdbc, String table, String column) {
        return jdbc.sql("select attcompression::text from pg_attribute where attrelid = cast(:t as regclass) and attname = :c")
                .param("t", table).param("c", column).query(String.class).single();
    }
}
