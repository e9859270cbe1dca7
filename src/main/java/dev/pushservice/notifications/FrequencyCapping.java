package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.FrequencyCap;
import dev.pushservice.delivery.DeliveryStore.Claimed;
import dev.pushservice.platform.rules.Priority;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * Enforces the apps' frequency caps ({@link FrequencyCap}) when delivery claims recipients: at most
 * {@code limit} notifications per user (per device, for a device without a user) in any rolling
 * window, exactly, across lanes, workers and instances.
 *
 * <p><b>How.</b> {@code frequency_cap_sends} holds one row per counted send (recipient of a capped
 * notification handed to a provider), with its subject and time. In the claim transaction, after the
 * claim statement, {@link #admit} takes for the claimed recipients of capped notifications one
 * transaction-level advisory lock per subject, in sorted order (one statement), then in a second
 * statement counts each subject's notifications within the window, admits what fits (oldest
 * notification first), writes their counted sends and marks the rest {@code skipped_frequency_cap}.
 * Two transactions racing for a subject's last slot serialize on its lock, and the second counts the
 * first's committed send: exactly one wins. A counted send whose recipient ends other than accepted
 * is deleted in the transaction that records it ({@link #released}), so the count is that of
 * accepted sends plus those still in flight; a retry keeps its slot.
 *
 * <p><b>Cost.</b> Nothing for apps without a cap, and nothing for the transactional lane unless an
 * app caps it: the cap is read from the settings cache, no statement runs. With a cap, two statements
 * per claimed chunk, one index range per recipient: about as much again as the claim itself, more
 * when recipients are skipped (the figures: bench/README.md, "Figures behind design comments"). Per-statement CTEs are
 * materialized on purpose: inlined, the planner joined the chunk's rows pairwise, far slower.
 *
 * <p><b>Semantics decided here</b> (docs/api-decisions.md, "Delivery controls"): the window counts
 * from the instant a send is handed over; notifications with {@code frequency_cap_override} and
 * exempt transactional ones are neither capped nor counted; a cap change applies to sends claimed
 * after it (other instances within the settings cache's 5 s). Thread-safe.
 */
@Component
class FrequencyCapping {

    private static final Logger log = LoggerFactory.getLogger(FrequencyCapping.class);
    static final String PRUNE = "frequency-cap-prune";
    static final int PRUNE_BATCH = 10_000;
    /** The reason of skipped recipients in {@code push_delivery_outcomes_total} (outcome {@code skipped}). */
    static final String METRIC_REASON = "frequency_cap";

    private final FrequencyCapRepository repository;
    private final AppSettingsService settings;
    private final Clock clock;

    FrequencyCapping(FrequencyCapRepository repository, AppSettingsService settings, Clock clock) {
        this.repository = repository;
        this.settings = settings;
        this.clock = clock;
    }

    /**
     * What the claim step let through.
     *
     * @param admitted the claimed recipients to send, in claim order
     * @param skipped notification → app of the recipients the caps skipped (now terminal)
     * @param skippedRecipients how many recipients the caps skipped (the rows the admit statement returned)
     */
    record Admission(List<Claimed> admitted, Map<UUID, UUID> skipped, int skippedRecipients) {

        static Admission all(List<Claimed> claimed) {
            return new Admission(claimed, Map.of(), 0);
        }
    }

    /** Whether the app has a cap that applies to {@code lane} (from the settings cache; no statement). */
    boolean applies(UUID appId, Priority lane) {
        return settings.frequencyCap(appId).filter(f -> f.appliesTo(lane.value())).isPresent();
    }

    /**
     * Applies the caps to {@code claimed} (recipients of {@code lane} just claimed); call it in the
     * claim's transaction on the delivery pool.
     */
    Admission admit(Priority lane, List<Claimed> claimed, Instant now) {
        if (claimed.isEmpty()) return Admission.all(claimed);
        Map<UUID, Optional<FrequencyCap>> caps = new HashMap<>();
        ArrayNode rows = JsonNodeFactory.instance.arrayNode();
        for (Claimed c : claimed) {
            if (c.unsendable() != null) continue; // already failed by the claim: never sent, never counted
            FrequencyCap cap = caps.computeIfAbsent(c.appId(), app -> settings.frequencyCap(app)
                    .filter(f -> f.appliesTo(lane.value()))).orElse(null);
            if (cap == null) continue;
            rows.addObject().put("n", c.notificationId().toString()).put("d", c.deviceId().toString())
                    .put("l", cap.limit()).put("w", cap.windowSeconds());
        }
        if (rows.isEmpty()) return Admission.all(claimed);
        String json = rows.toString();
        repository.lockSubjects(json);
        List<FrequencyCapRepository.Skipped> skipped = repository.admit(json, now);
        if (skipped.isEmpty()) return Admission.all(claimed);
        Set<FrequencyCapRepository.Skipped> out = new HashSet<>(skipped);
        List<Claimed> admitted = new ArrayList<>(claimed.size() - skipped.size());
        Map<UUID, UUID> notifications = new LinkedHashMap<>();
        for (Claimed c : claimed) {
            if (out.contains(new FrequencyCapRepository.Skipped(c.notificationId(), c.deviceId()))) {
                notifications.put(c.notificationId(), c.appId());
            } else {
                admitted.add(c);
            }
        }
        log.debug("Lane {}: {} claimed recipient(s) skipped by frequency caps", lane.value(), skipped.size());
        return new Admission(admitted, notifications, skipped.size());
    }

    /**
     * Gives back the counted sends of recorded recipients that did not end accepted; {@code rows}
     * ({@code n}, {@code d}) are the recorded outcomes other than acceptances. Call it in the record
     * transaction, after the outcomes are written.
     */
    void released(String rows) {
        repository.release(rows);
    }

    /** The same for every recipient of {@code notifications} (pending ones failed at once: no credentials). */
    void releasedAll(Set<UUID> notifications) {
        if (!notifications.isEmpty()) repository.releaseUnaccepted(notifications);
    }

    /** A cancel made the notification's pending recipients cancelled: call it in the cancel's transaction. */
    void cancelled(UUID notificationId) {
        repository.releaseCancelled(notificationId);
    }

    /** Deletes the counted sends whose window has passed, in batches; returns how many. */
    long prune() {
        Instant now = clock.instant();
        long total = 0;
        int n;
        do {
            n = repository.prune(now, PRUNE_BATCH);
            total += n;
        } while (n == PRUNE_BATCH);
        return total;
    }

    /** The recurring prune (role {@code scheduler}, every minute). */
    @Configuration(proxyBeanMethods = false)
    static class PruneConfiguration {

        @Bean
        RecurringTask<Void> frequencyCapPrune(FrequencyCapping caps) {
            return Tasks.recurring(PRUNE, FixedDelay.of(Duration.ofMinutes(1))).execute((instance, context) -> caps.prune());
        }
    }
}
