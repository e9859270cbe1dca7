package dev.pushservice.platform.health;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PINGs Redis over a connection of its own (opened on first use, reopened after a failure), each
 * step bounded by one second. Not thread-safe: {@link HealthService} calls it from one thread at a time.
 */
final class RedisProbe implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisProbe.class);
    static final long TIMEOUT_MILLIS = 1000;

    private final RedisClient client;
    private final RedisURI uri;
    private StatefulRedisConnection<String, String> connection;

    RedisProbe(RedisClient client, String url) {
        this.client = client;
        this.uri = RedisURI.create(url);
    }

    HealthReport.Component check() {
        try {
            StatefulRedisConnection<String, String> c = connection();
            long start = System.nanoTime();
            c.async().ping().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            return HealthReport.Component.up(System.nanoTime() - start);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return HealthReport.Component.down();
        } catch (Exception e) {
            log.warn("Health check: Redis unreachable ({})", e.getClass().getSimpleName());
            closeConnection();
            return HealthReport.Component.down();
        }
    }

    private StatefulRedisConnection<String, String> connection() throws Exception {
        if (connection != null && connection.isOpen()) return connection;
        closeConnection();
        CompletableFuture<StatefulRedisConnection<String, String>> pending =
                client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture();
        try {
            connection = pending.get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            return connection;
        } catch (Exception e) {
            // a connect that completes after we gave up must not leak its socket
            pending.thenAccept(StatefulRedisConnection::closeAsync);
            throw e;
        }
    }

    private void closeConnection() {
        if (connection != null) {
            connection.closeAsync();
            connection = null;
        }
    }

    @Override
    public void close() {
        closeConnection();
    }
}
