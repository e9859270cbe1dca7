package dev.pushservice.platform.db;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The zero-setup database: a PostgreSQL 17 server whose files live in {@code <dataDir>/postgres}
 * and survive restarts (initdb runs only when the directory is new).
 *
 * <p>Only one process can own a data directory. A second process on the same data dir (the
 * admin CLI while the service runs) finds it locked and connects to the running server through
 * the port recorded in {@code <dataDir>/postgres.port}. Closing stops the server only when this
 * process started it.
 */
public final class EmbeddedPostgresServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedPostgresServer.class);

    private final EmbeddedPostgres postgres;
    private final int port;

    private EmbeddedPostgresServer(EmbeddedPostgres postgres, int port) {
        this.postgres = postgres;
        this.port = port;
    }

    /** Starts the server on {@code dataDir}, or attaches to the one already running there. */
    public static EmbeddedPostgresServer startOrAttach(Path dataDir, boolean durableCommits) {
        Path pgDir = dataDir.resolve("postgres");
        Path portFile = dataDir.resolve("postgres.port");
        try {
            Files.createDirectories(pgDir);
            Integer running = runningPort(portFile);
            if (running != null && Files.exists(pgDir.resolve("postmaster.pid"))) {
                log.info("Attaching to the embedded PostgreSQL already running on port {}", running);
                return new EmbeddedPostgresServer(null, running);
            }
            long started = System.nanoTime();
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setDataDirectory(pgDir)
                    .setCleanDataDirectory(false)
                    .setRegisterShutdownHook(false)
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("synchronous_commit", durableCommits ? "on" : "off")
                    .setServerConfig("max_connections", "200")
                    // segment estimates over a million devices hash-join a few hundred MB
                    .setServerConfig("shared_buffers", "256MB")
                    // Planner statistics early: until autovacuum first analyzes a new table, pooled
                    // connections cache generic plans made for an empty table (a token lookup then
                    // walks every device of the app). PostgreSQL's default wakes autovacuum once a minute.
                    .setServerConfig("autovacuum_naptime", "10s")
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .start();
            Files.writeString(portFile, Integer.toString(pg.getPort()));
            log.info("Embedded PostgreSQL started on port {} with data in {} ({} ms)",
                    pg.getPort(), pgDir.toAbsolutePath(), (System.nanoTime() - started) / 1_000_000);
            return new EmbeddedPostgresServer(pg, pg.getPort());
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start the embedded PostgreSQL in " + pgDir.toAbsolutePath(), e);
        }
    }

    /** A throwaway server in a fresh temporary directory (tests, benchmarks), stopped by a JVM shutdown hook. */
    public static EmbeddedPostgresServer startTemporary() {
        return startTemporary(true);
    }

    /**
     * A throwaway server in a fresh temporary directory; without {@code shutdownHook} the caller stops it
     * ({@link #close}), e.g. only once the applications using it have closed their pools.
     */
    public static EmbeddedPostgresServer startTemporary(boolean shutdownHook) {
        try {
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setRegisterShutdownHook(shutdownHook)
                    .setServerConfig("max_connections", "300")
                    .start();
            return new EmbeddedPostgresServer(pg, pg.getPort());
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start a temporary embedded PostgreSQL", e);
        }
    }

    private static Integer runningPort(Path portFile) throws IOException {
        if (!Files.exists(portFile)) return null;
        int port;
        try {
            port = Integer.parseInt(Files.readString(portFile).trim());
        } catch (NumberFormatException e) {
            return null;
        }
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return port;
        } catch (IOException notListening) {
            return null;
        }
    }

    public DatabaseUrl url() {
        return new DatabaseUrl("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", null);
    }

    public int port() {
        return port;
    }

    @Override
    public void close() {
        if (postgres == null) return;
        try {
            postgres.close();
            log.info("Embedded PostgreSQL stopped");
        } catch (IOException e) {
            log.warn("Embedded PostgreSQL did not stop cleanly: {}", e.getMessage());
        }
    }
}
