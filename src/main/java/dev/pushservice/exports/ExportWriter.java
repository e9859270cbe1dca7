package dev.pushservice.exports;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.TaskDescriptor;
import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.platform.jobs.DeadLetters;
import dev.pushservice.platform.jobs.RetryPolicy;
import dev.pushservice.segments.FilterCompiler;
import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVPrinter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Writes export files: the durable task {@value #TASK_NAME} (role {@code worker}, one instance per
 * export, named by its id) and the recurring clean-up {@value #CLEAN_UP} (role {@code scheduler}).
 *
 * <h2>Streaming</h2>
 * Rows are read through one server-side cursor ({@link ExportRepository#FETCH_SIZE} rows per fetch)
 * in a read-only, repeatable-read transaction (one consistent snapshot), formatted by Commons CSV,
 * gzip-compressed, and cut into chunks of {@link #CHUNK_BYTES} stored as {@code export_chunks} rows,
 * each committed in its own short transaction. Memory is one fetch of rows plus one chunk, whatever
 * the row count. Progress (rows so far) is committed with every chunk and at least every
 * {@link #PROGRESS_EVERY}, so the export's read shows it while it runs.
 *
 * <h2>Crashes</h2>
 * An instance that dies mid-export leaves its execution picked; db-scheduler's dead-execution
 * detection revives it once its heartbeat is stale (30-40 s: see {@code JobRunner}), and the
 * next run finds the export {@code running}: it deletes the partial file and starts again, counting
 * attempts, and after {@value #MAX_ATTEMPTS} interrupted attempts marks it {@code failed} with the
 * reason. Each run holds a lease (the attempt number): a superseded run stops at its next chunk or
 * progress write. An error while exporting (not a crash) fails the export at once with a reason.
 * Completion records the {@code export.completed} lifecycle fact in its transaction.
 * The clean-up also fails any pending or running export whose task has disappeared (dead-lettered),
 * so no export stays {@code running} forever.
 */
@Component
class ExportWriter {

    static final String TASK_NAME = "export";
    static final TaskDescriptor<Data> TASK = TaskDescriptor.of(TASK_NAME, Data.class);
    static final String CLEAN_UP = "export-clean-up";
    static final int MAX_ATTEMPTS = 3;
    static final int CHUNK_BYTES = 1024 * 1024;
    static final Duration PROGRESS_EVERY = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(ExportWriter.class);
    private static final CSVFormat CSV = CSVFormat.RFC4180.builder().setRecordSeparator("\r\n").get();

    /** Task data: JSON in {@code scheduled_tasks}; add fields, never rename or remove them. */
    record Data(UUID appId, UUID exportId) {
    }

    private final ExportRepository exports;
    private final ExportService service;
    private final FilterCompiler compiler;
    private final TransactionTemplate transactions;
    private final TransactionTemplate reading;
    private final Clock clock;
    private final int chunkBytes;
    private final LifecycleEventRepository lifecycle;

    ExportWriter(ExportRepository exports, ExportService service, FilterCompiler compiler,
                 PlatformTransactionManager transactionManager, Clock clock,
                 @Value("${push.exports.chunk-bytes:" + CHUNK_BYTES + "}") int chunkBytes, LifecycleEventRepository lifecycle) {
        this.exports = exports;
        this.lifecycle = lifecycle;
        this.service = service;
        this.compiler = compiler;
        this.clock = clock;
        this.chunkBytes = chunkBytes;
        this.transactions = new TransactionTemplate(transactionManager);
        this.transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        this.reading = new TransactionTemplate(transactionManager);
        this.reading.setReadOnly(true);
        this.reading.setIsolationLevel(TransactionDefinition.ISOLATION_REPEATABLE_READ);
    }

    /** One run of the export task. */
    void run(Data data) {
        ExportRepository.Row row = transactions.execute(status -> start(data.appId(), data.exportId()));
        if (row == null) return;
        int attempt = row.attempts() + 1;
        try {
            write(row, attempt);
        } catch (Superseded e) {
            log.info("Export {}: run {} superseded, stopping", row.id(), attempt);
        } catch (RuntimeException | IOException e) {
            log.warn("Export {} failed", row.id(), e);
            String reason = "the export could not be written (" + e.getClass().getSimpleName()
                    + "); see the service log for export " + row.id();
            transactions.executeWithoutResult(status -> exports.fail(row.id(), reason, clock.instant()));
        }
    }

    private ExportRepository.Row start(java.util.UUID appId, java.util.UUID id) {
        ExportRepository.Row row = exports.lock(appId, id).orElse(null);
        if (row == null) return null;
        if ("running".equals(row.status())) {
            // an earlier run of this export was interrupted (instance crash or stop)
            if (row.attempts() >= MAX_ATTEMPTS) {
                exports.fail(id, "interrupted " + row.attempts() + " times (the instance running it stopped);"
                        + " create a new export", clock.instant());
                log.warn("Export {} failed after {} interrupted attempts", id, row.attempts());
                return null;
            }
            log.info("Export {}: attempt {} was interrupted, starting again", id, row.attempts());
        } else if (!"pending".equals(row.status())) {
            return null;
        }
        exports.start(id, clock.instant());
        return row;
    }

    private void write(ExportRepository.Row row, int attempt) throws IOException {
        FilterCompiler.Compiled segment = service.segmentFilter(row.appId(), row.filters(), compiler);
        ExportRepository.Query query = exports.query(row.appId(), row.type(), row.filters(), segment);
        ChunkSink sink = new ChunkSink(row.id(), attempt);
        CountingStream csvBytes = new CountingStream(new FastGzip(sink));
        long[] rows = {0};
        Instant[] lastProgress = {clock.instant()};
        try (CSVPrinter printer = new CSVPrinter(new BufferedWriter(
                new OutputStreamWriter(csvBytes, StandardCharsets.UTF_8), 64 * 1024), CSV)) {
            printer.printRecord(row.type().columns());
            reading.executeWithoutResult(status -> exports.stream(query, values -> {
                try {
                    printer.printRecord((Object[]) values);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                rows[0]++;
                sink.rows = rows[0];
                if ((rows[0] & 1023) == 0) {
                    Instant now = clock.instant();
                    if (Duration.between(lastProgress[0], now).compareTo(PROGRESS_EVERY) >= 0) {
                        lastProgress[0] = now;
                        progress(row.id(), attempt, rows[0]);
                    }
                }
            }));
        }
        Instant now = clock.instant();
        Instant expires = now.plus(ExportService.FILE_LIFE);
        boolean done = Boolean.TRUE.equals(transactions.execute(status -> {
            if (!exports.complete(row.id(), attempt, rows[0], csvBytes.count, sink.stored, sink.seq, now, expires)) return false;
            lifecycle.record(row.appId(), LifecycleEventRepository.Kind.EXPORT_COMPLETED, row.id(), Map.of("export_id", row.id(),
                    "type", row.type().value(), "rows", rows[0], "expires_at", expires.toString()), now);
            return true;
        }));
        if (!done) throw new Superseded();
        log.info("Export {} ({}) completed: {} rows, {} bytes", row.id(), row.type().value(), rows[0], csvBytes.count);
    }

    private void progress(UUID id, int attempt, long rows) {
        boolean mine = Boolean.TRUE.equals(transactions.execute(status -> exports.progress(id, attempt, rows, clock.instant())));
        if (!mine) throw new Superseded();
    }

    /** Cuts the compressed stream into chunks, each stored (with progress) in its own transaction. */
    private final class ChunkSink extends OutputStream {
        private final UUID id;
        private final int attempt;
        private final ByteArrayOutputStream buffer;
        int seq;
        long stored;
        long rows;

        ChunkSink(UUID id, int attempt) {
            this.id = id;
            this.attempt = attempt;
            this.buffer = new ByteArrayOutputStream(chunkBytes);
        }

        @Override
        public void write(int b) {
            buffer.write(b);
            if (buffer.size() >= chunkBytes) store();
        }

        @Override
        public void write(byte[] b, int off, int len) {
            while (len > 0) {
                int n = Math.min(len, chunkBytes - buffer.size());
                buffer.write(b, off, n);
                off += n;
                len -= n;
                if (buffer.size() >= chunkBytes) store();
            }
        }

        @Override
        public void close() {
            if (buffer.size() > 0 || seq == 0) store();
        }

        private void store() {
            byte[] data = buffer.toByteArray();
            buffer.reset();
            int at = seq;
            boolean mine = Boolean.TRUE.equals(transactions.execute(status ->
                    exports.progress(id, attempt, rows, clock.instant()) && appended(at, data)));
            if (!mine) throw new Superseded();
            seq++;
            stored += data.length;
        }

        private boolean appended(int at, byte[] data) {
            exports.appendChunk(id, at, data);
            return true;
        }
    }

    /**
     * gzip at the fastest level: CSV still shrinks to about a sixth, and the default level took a
     * quarter of a million-row export's time on one core.
     */
    private static final class FastGzip extends GZIPOutputStream {
        FastGzip(OutputStream out) throws IOException {
            super(out, 64 * 1024);
            def.setLevel(Deflater.BEST_SPEED);
        }
    }

    /** Counts the bytes of the uncompressed CSV. */
    private static final class CountingStream extends FilterOutputStream {
        long count;

        CountingStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }
    }

    /** This run no longer holds the export (a newer attempt took it, or it was failed meanwhile). */
    private static final class Superseded extends RuntimeException {
        Superseded() {
            super(null, null, false, false);
        }
    }

    /** Deletes expired files and fails exports whose task is gone; see the class documentation. */
    int cleanUp() {
        int expired = 0;
        int n;
        do {
            n = transactions.execute(status -> exports.expire(clock.instant(), 100));
            expired += n;
        } while (n == 100);
        List<UUID> orphans = exports.orphaned(TASK_NAME, 100);
        for (UUID id : orphans) {
            transactions.executeWithoutResult(status -> exports.fail(id,
                    "the export task stopped without finishing (it ran out of retries); create a new export", clock.instant()));
            log.warn("Export {} had no task left; marked failed", id);
        }
        if (expired > 0) log.info("Deleted {} expired export file(s)", expired);
        return expired + orphans.size();
    }

    @Configuration(proxyBeanMethods = false)
    static class ExportTasks {

        @Bean
        Task<Data> exportTask(ExportWriter writer, DeadLetters deadLetters) {
            // run() turns export errors into a failed export itself; what reaches here is the
            // database failing around it, worth a few retries
            return Tasks.oneTime(TASK)
                    .onFailure(deadLetters.handler(new RetryPolicy(3, Duration.ofSeconds(5), Duration.ofMinutes(1))))
                    .execute((instance, context) -> writer.run(instance.getData()));
        }

        @Bean
        RecurringTask<Void> exportCleanUp(ExportWriter writer) {
            return Tasks.recurring(CLEAN_UP, FixedDelay.of(Duration.ofMinutes(1))).execute((instance, context) -> writer.cleanUp());
        }
    }
}
