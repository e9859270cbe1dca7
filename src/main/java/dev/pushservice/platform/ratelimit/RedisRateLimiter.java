package dev.pushservice.platform.ratelimit;

import dev.pushservice.platform.config.PushProperties;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Buckets in Redis (Bucket4j compare-and-swap), shared by every instance. */
final class RedisRateLimiter implements RateLimiter {

    private static final Logger log = LoggerFactory.getLogger(RedisRateLimiter.class);

    private static final long RECONNECT_PAUSE_MILLIS = 5_000;

    private final Buckets buckets;
    private final RedisClient client;
    private final Clock clock;
    private volatile ProxyManager<String> proxies;
    private volatile long lastAttempt;
    private volatile long lastWarning;

    RedisRateLimiter(PushProperties.RateLimit limits, RedisClient client, Clock clock) {
        this.buckets = new Buckets(limits);
        this.client = client;
        this.clock = clock;
    }

    /**
     * Connects on first use (and again after a failed attempt, at most every few seconds), so the
     * service starts and serves while Redis is down; once connected Lettuce reconnects by itself.
     */
    private ProxyManager<String> proxies() {
        ProxyManager<String> current = proxies;
        if (current != null) return current;
        synchronized (this) {
            if (proxies != null) return proxies;
            long now = clock.millis();
            if (now - lastAttempt < RECONNECT_PAUSE_MILLIS) {
                throw new IllegalStateException("Redis not connected");
            }
            lastAttempt = now;
            StatefulRedisConnection<String, byte[]> connection =
                    client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
            proxies = Bucket4jLettuce.casBasedBuilder(connection)
                    .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofMinutes(1)))
                    .build();
            return proxies;
        }
    }

    @Override
    public List<Quota> quotas() {
        return buckets.quotas();
    }

    @Override
    public Decision tryAcquire(UUID orgId, UUID appId) {
        try {
            ProxyManager<String> proxies = proxies();
            return buckets.acquire(orgId, appId,
                    key -> proxies.builder().build(key, buckets::appConfig),
                    key -> proxies.builder().build(key, buckets::orgConfig));
        } catch (RuntimeException e) {
            long now = clock.millis();
            if (now - lastWarning > 10_000) {
                lastWarning = now;
                log.warn("Rate limits not enforced: Redis unreachable ({})", e.getClass().getSimpleName());
            }
            return Decision.unchecked();
        }
    }
}
