package dev.pushservice.platform.ratelimit;

import dev.pushservice.platform.config.PushProperties;
import io.github.bucket4j.Bucket;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** Buckets in this process's memory: correct for a single instance, the default. */
final class LocalRateLimiter implements RateLimiter {

    private final Buckets buckets;
    private final ConcurrentMap<String, Bucket> local = new ConcurrentHashMap<>();

    LocalRateLimiter(PushProperties.RateLimit limits) {
        this.buckets = new Buckets(limits);
    }

    @Override
    public List<Quota> quotas() {
        return buckets.quotas();
    }

    @Override
    public Decision tryAcquire(UUID orgId, UUID appId) {
        return buckets.acquire(orgId, appId,
                key -> local.computeIfAbsent(key, k -> Bucket.builder().addLimit(buckets.appConfig().getBandwidths()[0]).build()),
                key -> local.computeIfAbsent(key, k -> Bucket.builder().addLimit(buckets.orgConfig().getBandwidths()[0]).build()));
    }
}
