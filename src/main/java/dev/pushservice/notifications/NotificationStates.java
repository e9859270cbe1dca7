package dev.pushservice.notifications;

import static dev.pushservice.notifications.NotificationService.CANCELLED;
import static dev.pushservice.notifications.NotificationService.COMPLETED;
import static dev.pushservice.notifications.NotificationService.FAILED;
import static dev.pushservice.notifications.NotificationService.PROCESSING;
import static dev.pushservice.notifications.NotificationService.QUEUED;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.jobs.JobRunner;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * A notification's state machine after creation: cancel ({@link #cancel}, finished by
 * {@link #finishCancel} once its background task is done), finishing ({@link #finishIfDone}: exact
 * counts, {@code completed} or {@code failed}) and failing a dead-lettered fan-out
 * ({@link #failFanOut}). Every change locks the notification's row first and writes its lifecycle
 * fact in the same transaction; a terminal notification gets its final counts ({@code summary}) and
 * report figures once nothing of it is in flight. Thread-safe.
 */
@Service
class NotificationStates {

    private static final Logger log = LoggerFactory.getLogger(NotificationStates.class);

    private final NotificationRepository notifications;
    private final NotificationReadRepository reads;
    private final NotificationViews views;
    private final LifecycleEventRepository lifecycle;
    private final SchedulerClient scheduler;
    private final AuditLog audit;
    private final Clock clock;
    private final ObjectProvider<JobRunner> jobs;
    private final ObjectProvider<DeliveryHandoff> delivery;
    private final FrequencyCapping caps;
    private final CancelRepository cancels;

    NotificationStates(NotificationRepository notifications, NotificationReadRepository reads, NotificationViews views,
                       LifecycleEventRepository lifecycle, SchedulerClient scheduler, AuditLog audit, Clock clock,
                       ObjectProvider<JobRunner> jobs, ObjectProvider<DeliveryHandoff> delivery, FrequencyCapping caps,
                       CancelRepository cancels) {
        this.notifications = notifications;
        this.reads = reads;
        this.views = views;
        this.lifecycle = lifecycle;
        this.scheduler = scheduler;
        this.audit = audit;
        this.clock = clock;
        this.jobs = jobs;
        this.delivery = delivery;
        this.caps = caps;
        this.cancels = cancels;
    }

    /**
     * Cancels a draft, queued or processing notification. A draft or queued one has no recipients yet:
     * it is finished here, with its counts and its {@code notification.cancelled} fact. A processing one
     * is marked {@code cancelled} at once, by one keyed update that touches no recipient row, and its
     * {@code pending} recipients are left to the background task {@link NotificationCancels}, enqueued
     * in this transaction, which cancels them in batches and then records the fact. From this commit
     * nothing more is sent: no lane claims a cancelled notification's recipients, the fan-out stops
     * at its next page, and the recipients this process claimed or was handed but has not given to a
     * provider yet are dropped (told after the commit, before the answer). Recipients already handed
     * over ({@code sending}) finish as the provider answers. The answer's counts are those of the
     * moment: recipients still {@code pending} there are never sent and become {@code cancelled}
     * shortly (docs/api-decisions.md).
     *
     * @throws NotFound unknown or another app's
     * @throws InvalidInput the notification is already terminal
     */
    @Transactional
    public NotificationView cancel(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElseThrow(() -> new NotFound("Notification"));
        if (row.terminal()) {
            throw InvalidInput.of("notification_id", "the notification is " + row.status()
                    + "; only draft, queued or processing notifications can be cancelled");
        }
        Instant now = clock.instant();
        if (PROCESSING.equals(row.status())) {
            cancels.markCancelling(appId, id, now);
            scheduler.scheduleIfNotExists(NotificationCancels.TASK.instance(id.toString())
                    .data(new NotificationCancels.Data(appId, id)).scheduledTo(Instant.now()));
            // the background starts right after this commit, not at the next poll
            jobs.orderedStream().forEach(JobRunner::checkForDueWorkAfterCommit);
            log.info("Notification {} cancelled from {}; its pending recipients are cancelled in the background", id,
                    row.status());
        } else {
            // draft or queued: nothing was materialized (the fan-out moves it to processing first)
            int cancelled = notifications.cancelPending(appId, id, now);
            caps.cancelled(id);
            List<NotificationReadRepository.Count> counts = reads.counts(appId, List.of(id));
            boolean inFlight = counts.stream().anyMatch(c -> "sending".equals(c.status()));
            notifications.finish(appId, id, CANCELLED, now, inFlight ? null : summary(counts));
            if (!inFlight) notifications.storeReport(appId, id, sendStart(row), now);
            lifecycle.record(appId, Kind.NOTIFICATION_CANCELLED, id,
                    Map.of("notification_id", id, "previous_status", row.status(), "recipients_cancelled", cancelled), now);
            log.info("Notification {} cancelled from {}", id, row.status());
        }
        audit.record(appId, "notification.cancel", "notification", id, List.of("status"));
        // recipients claimed by delivery in this process but not yet handed to a provider are dropped too
        DeliveryHandoff handoff = delivery.getIfAvailable();
        if (handoff != null) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    handoff.cancelled(appId, id);
                }
            });
        }
        return views.get(appId, id);
    }

    /**
     * Finishes the cancel of a processing notification once its background task left nothing
     * pending ({@link NotificationCancels}): records its {@code notification.cancelled} fact
     * ({@code recipients_cancelled}: what the task's last run cancelled) and, when nothing of it is
     * in flight, its final counts. Once per cancel: does nothing when it is not cancelling any more.
     */
    @Transactional
    public void finishCancel(UUID appId, UUID id, long recipientsCancelled) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row == null || !cancels.endCancelling(appId, id)) return;
        List<NotificationReadRepository.Count> counts = finalCounts(notifications, reads, appId, id);
        if (counts != null) {
            notifications.storeSummary(appId, id, summary(counts));
            notifications.storeReport(appId, id, sendStart(row), row.finishedAt());
        }
        lifecycle.record(appId, Kind.NOTIFICATION_CANCELLED, id, Map.of("notification_id", id,
                "previous_status", PROCESSING, "recipients_cancelled", recipientsCancelled), clock.instant());
        log.info("Notification {}: cancel finished, {} pending recipient(s) cancelled in the background{}", id,
                recipientsCancelled, counts == null ? "; recipients still in flight" : "");
    }

    /**
     * Moves a processing notification whose recipients are all materialized and terminal to its
     * terminal state, with its exact counts: {@code failed} when recipients failed and none was
     * accepted, else {@code completed} (also with zero recipients). Does nothing otherwise. Called
     * by fan-out (zero recipients) and by delivery after it made recipients terminal. A cancelled
     * notification still without its summary gets it here once nothing of it is in flight.
     */
    @Transactional
    public void finishIfDone(UUID appId, UUID id) {
        finishIfDone(notifications, reads, lifecycle, appId, id);
    }

    /**
     * {@link #finishIfDone(UUID, UUID)} over {@code notifications}, {@code reads} and {@code lifecycle}
     * (repositories of either pool), in the caller's transaction on their pool: delivery's recorder finishes
     * notifications on the delivery pool, so an API overload never stalls it.
     */
    void finishIfDone(NotificationRepository notifications, NotificationReadRepository reads, LifecycleEventRepository lifecycle,
                      UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row != null && CANCELLED.equals(row.status()) && row.summary() == null) {
            // cancelled with recipients in flight: its counts are stored once they are final; status,
            // timestamps and lifecycle facts stay as the cancel left them
            List<NotificationReadRepository.Count> counts = finalCounts(notifications, reads, appId, id);
            if (counts != null) {
                notifications.storeSummary(appId, id, summary(counts));
                notifications.storeReport(appId, id, sendStart(row), row.finishedAt());
                log.info("Notification {} cancelled earlier: its last in-flight recipient is recorded, its counts are final", id);
            }
            return;
        }
        if (row == null || !PROCESSING.equals(row.status()) || row.recipientCount() == null) return;
        List<NotificationReadRepository.Count> counts = finalCounts(notifications, reads, appId, id);
        if (counts == null) return;
        long accepted = counts.stream().filter(c -> c.status().equals("accepted")).mapToLong(NotificationReadRepository.Count::count).sum();
        long failed = counts.stream().filter(c -> NotificationPages.FAILED_STATES.contains(c.status())).mapToLong(NotificationReadRepository.Count::count).sum();
        String status = accepted == 0 && failed > 0 ? FAILED : COMPLETED;
        Instant now = clock.instant();
        notifications.finish(appId, id, status, now, summary(counts));
        notifications.storeReport(appId, id, sendStart(row), now);
        lifecycle.record(appId, status.equals(FAILED) ? Kind.NOTIFICATION_FAILED : Kind.NOTIFICATION_COMPLETED, id,
                Map.of("notification_id", id, "recipients", row.recipientCount(), "accepted", accepted, "failed", failed), now);
        log.info("Notification {} {}: {} recipient(s), {} accepted, {} failed", id, status, row.recipientCount(), accepted, failed);
    }

    /** The reason a notification failed because its fan-out was dead-lettered (its {@code notification.failed} fact). */
    static final String FANOUT_FAILED = "fanout_failed";

    /**
     * Fails a queued or processing notification whose fan-out task was dead-lettered (its attempts ran
     * out, or it failed permanently), once nothing it materialized is in flight: the audience was not
     * reached in full. Its recipient count becomes what was materialized, its counts are stored as
     * final, and its {@code notification.failed} fact carries {@code reason} {@value #FANOUT_FAILED}.
     * Does nothing when it is terminal already, its fan-out finished, or work is left (the caller
     * checked the dead letter). Called by the reconciler ({@link NotificationReconciler}).
     */
    @Transactional
    public void failFanOut(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row == null || !(QUEUED.equals(row.status()) || PROCESSING.equals(row.status())) || row.recipientCount() != null) return;
        if (notifications.hasWorkLeft(id)) return;
        Instant now = clock.instant();
        int recipients = notifications.setRecipientCount(appId, id, now).orElse(0);
        List<NotificationReadRepository.Count> counts = reads.counts(appId, List.of(id));
        long accepted = counts.stream().filter(c -> c.status().equals("accepted")).mapToLong(NotificationReadRepository.Count::count).sum();
        long failed = counts.stream().filter(c -> NotificationPages.FAILED_STATES.contains(c.status())).mapToLong(NotificationReadRepository.Count::count).sum();
        notifications.finish(appId, id, FAILED, now, summary(counts));
        notifications.storeReport(appId, id, sendStart(row), now);
        lifecycle.record(appId, Kind.NOTIFICATION_FAILED, id, Map.of("notification_id", id, "recipients", recipients,
                "accepted", accepted, "failed", failed, "reason", FANOUT_FAILED), now);
        log.warn("Notification {} failed: its fan-out was dead-lettered after {} of its recipient(s) were materialized"
                + " ({} accepted, {} failed)", id, recipients, accepted, failed);
    }

    /** When the send of {@code row} began, as the report page's timeline counts it. */
    private static Instant sendStart(NotificationRepository.Row row) {
        return row.processingAt() != null ? row.processingAt() : row.createdAt();
    }

    /** The notification's counts when none of its recipients is pending or in flight any more, else null. */
    private static List<NotificationReadRepository.Count> finalCounts(NotificationRepository notifications,
                                                                   NotificationReadRepository reads, UUID appId, UUID id) {
        // a look through the work index first: counting every recipient of a large send while most are
        // still pending or in flight (the fan-out's last page calls this) cost PostgreSQL a read of each
        // (bench/README.md, "Figures behind design comments")
        if (notifications.hasWorkLeft(id)) return null;
        List<NotificationReadRepository.Count> counts = reads.counts(appId, List.of(id));
        return counts.stream().anyMatch(c -> c.status().equals("pending") || c.status().equals("sending")) ? null : counts;
    }

    private static JsonNode summary(List<NotificationReadRepository.Count> counts) {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (NotificationReadRepository.Count c : counts) {
            out.addObject().put("platform", c.platform()).put("status", c.status()).put("count", c.count());
        }
        return out;
    }
}
