package dev.pushservice.platform.health;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.time.Instant;
import java.util.List;

/**
 * The body of {@code GET /health}. Field meanings are documented in docs/operations.md and
 * openapi.yaml; every field is always present ({@code null} when unknown).
 *
 * @param status {@code ok}, {@code degraded} (Redis configured but unreachable) or {@code down} (database unreachable: HTTP 503)
 * @param checkedAt when this snapshot was taken (snapshots are reused for up to one second)
 * @param roles the roles this instance runs ({@code PUSH_ROLES})
 * @param api this process answering HTTP: always {@code up} when a body is returned
 * @param database PostgreSQL reachability and round-trip time
 * @param redis {@code not_configured} without {@code REDIS_URL}
 * @param jobs background work as recorded in the database; null when the database is down
 * @param providerCircuits this instance's provider circuit breakers that are open or probing (a provider,
 *                         for one app's credential or one Web Push origin, down or limiting us; sends to it
 *                         wait); empty when every provider answers. Never changes {@code status}: an outage
 *                         of Apple's or Google's is waited out, not ours to be restarted for
 */
record HealthReport(
        String status,
        @JsonProperty("checked_at") Instant checkedAt,
        List<String> roles,
        Component api,
        Component database,
        Component redis,
        Jobs jobs,
        @JsonProperty("provider_circuits") List<ProviderCircuits.Circuit> providerCircuits) {

    public static final String OK = "ok";
    public static final String DEGRADED = "degraded";
    public static final String DOWN = "down";

    public boolean databaseUp() {
        return Component.UP.equals(database.status());
    }

    /**
     * @param status {@code up}, {@code down} or {@code not_configured}
     * @param latencyMs round trip of one real query/command in milliseconds (two decimals); null unless up
     */
    public record Component(String status, @JsonProperty("latency_ms") Double latencyMs) {

        public static final String UP = "up";
        public static final String DOWN = "down";
        public static final String NOT_CONFIGURED = "not_configured";

        static Component up(long nanos) {
            return new Component(UP, Math.round(nanos / 10_000.0) / 100.0);
        }

        static Component down() {
            return new Component(DOWN, null);
        }
    }

    /**
     * Counts from {@code scheduled_tasks} and {@code dead_letter_jobs}, read in one query.
     *
     * @param queueDepth jobs due now that no worker has picked up yet
     * @param pending all jobs not picked up, due now or later (includes queueDepth and retries waiting for their backoff)
     * @param oldestDueAgeSeconds how long the oldest due, unpicked job has been waiting; 0 when none is due
     * @param running jobs a worker is executing now
     * @param retrying jobs whose last attempt failed and that will be tried again
     * @param deadLettered jobs that exhausted their retries (rows of dead_letter_jobs)
     * @param countedAt when these counts were read; they are reused for up to five seconds
     */
    public record Jobs(
            @JsonProperty("queue_depth") long queueDepth,
            long pending,
            @JsonProperty("oldest_due_age_seconds") long oldestDueAgeSeconds,
            long running,
            long retrying,
            @JsonProperty("dead_lettered") long deadLettered,
            @JsonProperty("counted_at") Instant countedAt) {
    }
}
