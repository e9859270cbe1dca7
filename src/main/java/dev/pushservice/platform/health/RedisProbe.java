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
 * PINGs Redis over a connection of its own, each probe bounded by one second. Connecting starts
 * at construction and is never abandoned half-way: a connect slower than one probe (a cold JVM,
 * a slow network) is still awaited by the next probe instead of being replaced by another.
 * Not thread-safe: {@link HealthService} calls it from one thread at a time.
 */
final class RedisProbe implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisProbe.class);
    static final long TIMEOUT_MILLIS = 1000;

    private final RedisClient client;
    private final RedisURI uri;
    private CompletableFuture<StatefulRedisConnection<String, String>> connection;

    RedisProbe(RedisClient client, String url) {
        this.client = client;
        this.uri = RedisURI.create(url);
        this.connection = connect();
    }

    HealthReport.Component check() {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
        try {
            if (connection.isCompletedExceptionally() || (connection.isDone() && !connection.join().isOpen())) {
                reconnect();
            }
            StatefulRedisConnection<String, String> c = connection.get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            long start = System.nanoTime();
            c.async().ping().get(Math.max(1, deadline - start), TimeUnit.NANOSECONDS);
            return HealthReport.Component.up(System.nanoTime() - start);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return HealthReport.Component.down();
        } catch (Exception e) {
            log.warn("Health check: Redis unreachable ({})", e.getClass().getSimpleName());
            if (connection.isDone()) reconnect(); // a pending connect is left to finish for the next probe
            return HealthReport.Component.down();
        }
    }

    private CompletableFuture<StatefulRedisConnection<String, String>> connect() {
        return client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture();
    }

    private void reconnect() {
        close();
        connection = connect();
    }

    @Override
    public void close() {
        connection.thenAccept(StatefulRedisConnection::closeAsync);
    }
}
