package dev.pushservice.platform.ratelimit;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.pushservice.platform.config.PushProperties;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;
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
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Buckets in Redis (Bucket4j compare-and-swap), shared by every instance. Each bucket's proxy is kept
 * (at most {@value #KEPT} keys, dropped after {@link #KEPT_FOR} unused) and built with Bucket4j's batching
 * optimisation: the requests of one app that arrive while its bucket's round trip is in flight go
 * together as one command, where each used to read the state and compare-and-swap it alone. Of concurrent
 * swaps of one bucket only one succeeds and the others go round again, so under one app's concurrent
 * requests each cost several round trips (bench/README.md, "Registration beside e029d80 on a
 * 10,000,000-device table"). Batching changes no limit: a batch's requests are applied one after the other
 * to the state read from Redis, and the result is swapped in as one, or the whole batch goes round again.
 */
final class RedisRateLimiter implements RateLimiter {

    static final int KEPT = 100_000;
    static final Duration KEPT_FOR = Duration.ofMinutes(10);

    private static final Logger log = LoggerFactory.getLogger(RedisRateLimiter.class);

    private static final long RECONNECT_PAUSE_MILLIS = 5_000;

    private final Buckets buckets;
    private final RedisClient client;
    private final Clock clock;
    private volatile ProxyManager<String> proxies;
    private final Cache<String, Bucket> kept = Caffeine.newBuilder().maximumSize(KEPT).expireAfterAccess(KEPT_FOR).build();
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

    /** The kept proxy of the bucket {@code key} (one {@code proxies} is ever made: Lettuce reconnects by itself). */
    private Bucket bucket(ProxyManager<String> proxies, String key, Supplier<BucketConfiguration> config) {
        return kept.get(key, k -> proxies.builder().withOptimization(Optimizations.batching()).build(k, config));
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
                    key -> bucket(proxies, key, buckets::appConfig), key -> bucket(proxies, key, buckets::orgConfig));
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
