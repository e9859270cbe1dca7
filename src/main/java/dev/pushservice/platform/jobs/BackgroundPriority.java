package dev.pushservice.platform.jobs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * Background work runs at a lower OS scheduling priority than API requests, on Linux. This covers the
 * fan-out and other queued jobs, the delivery lanes other than {@code transactional}, and the event loops of
 * those lanes' APNs clients. When a large send keeps every core busy, the kernel then serves API requests first.
 *
 * <p>The requests run on virtual threads whose carriers stay at the normal priority. Background threads
 * get the nice value {@code PUSH_BACKGROUND_NICE} (default 10; 0 leaves every thread as it is). While
 * cores are idle the nice value changes nothing. It only decides who waits when they are all busy.
 * {@code bench/scale.sh 10000000}, back to back at the same send rate (~27,500 recipients/s on two cores):
 * during the send, {@code GET /v1/notifications/{id}} had p99 57.7 ms at the normal priority and 33.3 ms at
 * nice 10, and a registration 162.3 ms and 63.7 ms (bench/README.md, "`scale.sh 10000000` with background work at nice 10").
 *
 * <p>How: a thread reads its own id from {@code /proc/thread-self} and runs {@code renice} on it. Any user
 * may lower the priority of their own threads. Java 21 cannot call {@code setpriority} without native code,
 * so it runs the command, once per thread, when the thread starts. Without Linux or {@code renice}
 * (some minimal images), the first attempt logs why and background threads keep the normal priority.
 * The {@code transactional} lane's threads and its APNs event loop keep the normal priority. A thread
 * inherits its creator's priority, so a lowered thread that starts another passes it on. PostgreSQL's
 * backends are not affected. Thread-safe.
 */
@Component
public final class BackgroundPriority {

    private static final Logger log = LoggerFactory.getLogger(BackgroundPriority.class);

    /** The nice value background threads get; 0 (also before the bean exists): unchanged. */
    private static volatile int nice;
    private static volatile boolean unavailable;
    private static final ThreadLocal<Boolean> lowered = new ThreadLocal<>();

    BackgroundPriority(@Value("${push.background-nice:10}") int configured) {
        if (configured < 0 || configured > 19) {
            throw new IllegalArgumentException("PUSH_BACKGROUND_NICE must be 0 to 19 (0: every thread at the normal priority), not "
                    + configured);
        }
        nice = configured;
    }

    /**
     * Lowers the calling thread's priority to the background nice value, once per thread. A virtual
     * thread is left alone: its carrier also runs requests.
     */
    public static void lowerCurrentThread() {
        int value = nice;
        if (value <= 0 || unavailable || Thread.currentThread().isVirtual() || lowered.get() != null) return;
        lowered.set(Boolean.TRUE);
        try {
            // "<pid>/task/<tid>": Linux schedules threads by their tid, and renice takes one
            String tid = Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
            Process renice = new ProcessBuilder("renice", "-n", Integer.toString(value), "-p", tid)
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!renice.waitFor(5, TimeUnit.SECONDS)) {
                renice.destroyForcibly();
                giveUp("renice did not finish within 5 s");
            } else if (renice.exitValue() != 0) {
                giveUp("renice exited with status " + renice.exitValue());
            }
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            giveUp(e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@code base}'s threads, each lowering its own priority as it starts. */
    public static ThreadFactory threads(ThreadFactory base) {
        return task -> base.newThread(() -> {
            lowerCurrentThread();
            task.run();
        });
    }

    private static synchronized void giveUp(String why) {
        if (unavailable) return;
        unavailable = true;
        log.info("Background work keeps the normal OS priority (PUSH_BACKGROUND_NICE={}): {}", nice, why);
    }
}
