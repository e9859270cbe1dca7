package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.support.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * No SQL statement of the service finds rows by {@code ctid} in a partitioned table. A {@code ctid}
 * is unique within one partition only, so {@code UPDATE t … WHERE t.ctid = x.row_id} on a partitioned
 * {@code t} also changes the row at the same place in every other partition: the claim, the cancel
 * sweep and the overdue expiry did that to {@code notification_recipients} from V49 to 2026-12-07
 * (docs/storage.md, "Never join a partitioned table on ctid alone"). The partitioned tables are read
 * from a freshly migrated database, so a table partitioned later is covered too; the statements are
 * the text blocks of {@code src/main/java}, where every statement of the service is written.
 */
class NoCtidOnPartitionedTablesTests {

    private static final Pattern TEXT_BLOCK = Pattern.compile("\"\"\"(.*?)\"\"\"", Pattern.DOTALL);
    private static final Pattern CTID = Pattern.compile("\\bctid\\b");

    @Test
    void noStatementThatUsesCtidNamesAPartitionedTable() throws IOException {
        DatabaseUrl url = TestDatabase.newDatabase();
        DriverManagerDataSource ds = new DriverManagerDataSource(url.jdbcUrl(), url.username(), url.password());
        Flyway.configure().dataSource(ds).locations("classpath:db/migration").load().migrate();
        List<String> partitioned = JdbcClient.create(ds).sql("""
                        select c.relname from pg_partitioned_table p join pg_class c on c.oid = p.partrelid
                        join pg_namespace s on s.oid = c.relnamespace where s.nspname = current_schema()""")
                .query(String.class).list();
        assertThat(partitioned).as("the partitioned tables").contains("notification_recipients", "events");

        List<String> withCtid = new ArrayList<>();
        List<String> offending = new ArrayList<>();
        try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                Matcher block = TEXT_BLOCK.matcher(Files.readString(file));
                while (block.find()) {
                    String sql = block.group(1);
                    if (!CTID.matcher(sql).find()) continue;
                    withCtid.add(file.getFileName().toString());
                    for (String table : partitioned) {
                        if (Pattern.compile("\\b" + Pattern.quote(table) + "\\b").matcher(sql).find()) {
                            offending.add(file + ": uses ctid and names " + table + ":\n" + sql.strip());
                        }
                    }
                }
            }
        }
        assertThat(withCtid).as("statements with ctid were found at all (the scan reads the sources)").isNotEmpty();
        assertThat(offending).as("find rows of a partitioned table by its key, not by ctid").isEmpty();
    }
}
