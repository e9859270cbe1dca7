package dev.pushservice.devices;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The migration CSV reader on its own: the row limit, line numbers of rows with quoted line breaks, LF or CRLF. */
class MigrationCsvTests {

    @TempDir
    Path dir;

    private Path file(String text) throws Exception {
        Path f = Files.createTempFile(dir, "m", ".csv");
        Files.writeString(f, text, StandardCharsets.UTF_8);
        return f;
    }

    @Test
    void moreRowsThanTheLimitRefuseTheFile() throws Exception {
        Path f = file("source_device_id,push_token,platform\na,f1,android\nb,f2,android\nc,f3,android\n");
        assertThatThrownBy(() -> MigrationCsv.read(f, 2, r -> { }, s -> { }))
                .isInstanceOf(MigrationCsv.FileProblem.class).hasMessageContaining("more than 2 device rows");
        List<MigrationCsv.Row> rows = new ArrayList<>();
        assertThat(MigrationCsv.read(f, 3, rows::add, s -> { })).isEqualTo(MigrationCsv.Format.TEMPLATE);
        assertThat(rows).extracting(MigrationCsv.Row::line).containsExactly(2L, 3L, 4L);
    }

    @Test
    void lineNumbersCountQuotedLineBreaksAndBlankLinesWithLfOrCrlf() throws Exception {
        for (String eol : List.of("\n", "\r\n")) {
            Path f = file(String.join(eol, "\uFEFFSource_Device_ID , push_token,platform,tags_json", "a,f1,android,\"{\"\"k\"\":" + eol + "\"\"two\"\"}\"",
                    "", "b,f2,web,", "c,f3,android,"));
            List<MigrationCsv.Row> rows = new ArrayList<>();
            List<MigrationCsv.Skip> skips = new ArrayList<>();
            MigrationCsv.read(f, 10, rows::add, skips::add);
            assertThat(rows).extracting(MigrationCsv.Row::line).as(eol.length() + "").containsExactly(3L, 6L);
            assertThat(rows.getFirst().tagsJson()).isEqualTo("{\"k\":\"two\"}");
            assertThat(skips).extracting(MigrationCsv.Skip::line, MigrationCsv.Skip::reason).containsExactly(
                    org.assertj.core.groups.Tuple.tuple(5L, "unsupported_platform"));
        }
    }
}
