package dev.pushservice.platform.ratelimit;

import dev.pushservice.platform.config.PushProperties;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * The bucket maths shared by both {@link RateLimiter}s: one bucket per app and one per
 * organisation, greedy refill at {@code *PerSecond}, capacity {@code *Burst}.
 */
final class Buckets {

    private final PushProperties.RateLimit limits;
    private final BucketConfiguration appConfig;
    private final BucketConfiguration orgConfig;

    Buckets(PushProperties.RateLimit limits) {
        this.limits = limits;
        this.appConfig = config(limits.appBurst(), limits.appPerSecond());
        this.orgConfig = config(limits.orgBurst(), limits.orgPerSecond());
    }

    private static BucketConfiguration config(long burst, long perSecond) {
        return BucketConfiguration.builder()
                .addLimit(limit -> limit.capacity(burst).refillGreedy(perSecond, Duration.ofSeconds(1)))
                .build();
    }

    /** The app's and the organisation's bucket, as {@link RateLimiter#quotas()} lists them. */
    List<RateLimiter.Quota> quotas() {
        return List.of(new RateLimiter.Quota("app", limits.appBurst(), windowSeconds(limits.appBurst(), limits.appPerSecond())),
                new RateLimiter.Quota("org", limits.orgBurst(), windowSeconds(limits.orgBurst(), limits.orgPerSecond())));
    }

    private static long windowSeconds(long burst, long perSecond) {
        return Math.max(1, (long) Math.ceil((double) burst / perSecond));
    }

    BucketConfiguration appConfig() {
        return appConfig;
    }

    BucketConfiguration orgConfig() {
        return orgConfig;
    }

    static String appKey(UUID appId) {
        return "push:rl:app:" + appId;
    }

    static String orgKey(UUID orgId) {
        return "push:rl:org:" + orgId;
    }

    /** Consumes from the app bucket, then (if allowed) the organisation bucket. */
    RateLimiter.Decision acquire(UUID orgId, UUID appId, Function<String, Bucket> app, Function<String, Bucket> org) {
        ConsumptionProbe appProbe = app.apply(appKey(appId)).tryConsumeAndReturnRemaining(1);
        RateLimiter.Window appWindow = window("app", limits.appBurst(), limits.appPerSecond(), appProbe);
        if (!appProbe.isConsumed()) {
            return new RateLimiter.Decision(false, retryAfter(appProbe), appWindow, null);
        }
        ConsumptionProbe orgProbe = org.apply(orgKey(orgId)).tryConsumeAndReturnRemaining(1);
        RateLimiter.Window orgWindow = window("org", limits.orgBurst(), limits.orgPerSecond(), orgProbe);
        return new RateLimiter.Decision(orgProbe.isConsumed(), orgProbe.isConsumed() ? 0 : retryAfter(orgProbe),
                appWindow, orgWindow);
    }

    private static RateLimiter.Window window(String name, long burst, long perSecond, ConsumptionProbe probe) {
        long remaining = probe.getRemainingTokens();
        long reset = (long) Math.ceil((double) (burst - remaining) / perSecond);
        return new RateLimiter.Window(name, remaining, reset);
    }

    private static long retryAfter(ConsumptionProbe probe) {
        return Math.max(1, (long) Math.ceil(probe.getNanosToWaitForRefill() / 1_000_000_000.0));
    }
}
