package dev.pushservice.support;

import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.platform.db.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.springframework.boot.SpringApplication;

/**
 * One PostgreSQL server per test JVM. With {@code PUSH_TEST_DATABASE_URL} set (CI: the machine's
 * PostgreSQL) a fresh database is created on it for this run, so leftovers from earlier runs never
 * matter; otherwise a temporary embedded PostgreSQL is started. Tests isolate by app, not by database.
 */
public final class TestDatabase {

    /**
     * The database test databases are created and dropped from: {@code PUSH_TEST_DATABASE_URL}'s own, or the
     * embedded server's. Never one of the test databases: a drop (with {@code FORCE}) ends every connection
     * to its database, so another database's drop connected through it would be cut off half way and leave
     * that database behind, marked invalid.
     */
    private static DatabaseUrl server;
    private static DatabaseUrl url;

    private TestDatabase() {
    }

    /** {@code postgres://} style URL of this JVM's test database. */
    public static synchronized DatabaseUrl url() {
        if (url == null) {
            String external = System.getenv("PUSH_TEST_DATABASE_URL");
            if (external == null || external.isBlank()) {
                server = embedded();
                url = server;
            } else {
                server = DatabaseUrl.parse(external);
                url = freshDatabaseOn(server);
            }
        }
        return url;
    }

    /** A new, empty database on the same server (for tests that need their own schema, e.g. restart). */
    public static DatabaseUrl newDatabase() {
        return freshDatabaseOn(server());
    }

    private static synchronized DatabaseUrl server() {
        url();
        return server;
    }

    /** The URL as an operator would put it in {@code DATABASE_URL}. */
    public static String asDatabaseUrlSetting(DatabaseUrl db) {
        String jdbc = db.jdbcUrl();
        String sep = jdbc.contains("?") ? "&" : "?";
        StringBuilder s = new StringBuilder(jdbc);
        if (db.username() != null) s.append(sep).append("user=").append(db.username()).append(sep = "&");
        if (db.password() != null) s.append(sep).append("password=").append(db.password());
        return s.toString();
    }

    private static DatabaseUrl embedded() {
        EmbeddedPostgresServer server = EmbeddedPostgresServer.startTemporary(false);
        afterApplicationsClosed(server::close);
        return server.url();
    }

    /**
     * Runs {@code cleanup} at JVM exit once Spring Boot has closed every application context it started (its
     * shutdown handlers run after that). A plain JVM hook would run beside the contexts' closing: their
     * connection pools, finding the database gone, retried connecting until their close timed out, and the
     * test JVM outlived surefire's 30 s exit limit.
     */
    private static void afterApplicationsClosed(Runnable cleanup) {
        SpringApplication.getShutdownHandlers().add(cleanup);
    }

    private static DatabaseUrl freshDatabaseOn(DatabaseUrl server) {
        String name = "push_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(), server.username(), server.password());
             Statement s = c.createStatement()) {
            s.execute("create database " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot create a test database on " + server, e);
        }
        String jdbc = server.jdbcUrl().replaceFirst("(jdbc:postgresql://[^/]+)/[^?]*", "$1/" + name);
        DatabaseUrl db = new DatabaseUrl(jdbc, server.username(), server.password());
        afterApplicationsClosed(() -> drop(server, name));
        return db;
    }

    private static void drop(DatabaseUrl server, String name) {
        try (Connection c = DriverManager.getConnection(server.jdbcUrl(), server.username(), server.password());
             Statement s = c.createStatement()) {
            s.execute("drop database if exists " + name + " with (force)");
        } catch (SQLException ignored) {
            // best effort: the database is uniquely named and harmless if left
        }
    }
}
