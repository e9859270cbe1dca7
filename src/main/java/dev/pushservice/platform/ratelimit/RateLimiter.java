package dev.pushservice.platform.ratelimit;

import java.util.List;
import java.util.UUID;

/**
 * Per-organisation and per-app request limits (token buckets). In-process by default; shared
 * through Redis when {@code REDIS_URL} is set so that the limits hold across instances.
 * Implementations are thread-safe. If the shared store is unreachable a request is allowed
 * (limits fail open; {@code /health} reports Redis down), because refusing all traffic
 * when Redis blips would turn a cache outage into a full outage.
 */
public interface RateLimiter {

    Decision tryAcquire(UUID orgId, UUID appId);

    /** The buckets every request spends, app first: what {@code RateLimit-Policy} lists. */
    List<Quota> quotas();

    /** A bucket's size {@code quota} and the seconds {@code windowSeconds} it takes to refill from empty. */
    record Quota(String name, long quota, long windowSeconds) {
    }

    /** One bucket's state after a request ({@code RateLimit}). {@code resetSeconds}: until the bucket is full again. */
    record Window(String name, long remaining, long resetSeconds) {
    }

    /**
     * @param allowed whether the request may proceed
     * @param retryAfterSeconds when refused, how long until a token is available (at least 1)
     * @param app the app bucket
     * @param org the organisation bucket
     */
    record Decision(boolean allowed, long retryAfterSeconds, Window app, Window org) {

        /** An unlimited decision for when the shared store cannot be reached. */
        public static Decision unchecked() {
            return new Decision(true, 0, null, null);
        }

        /** The tighter of the two windows, the one a client must respect. */
        public Window binding() {
            if (app == null) return org;
            if (org == null) return app;
            return org.remaining() < app.remaining() ? org : app;
        }
    }
}
