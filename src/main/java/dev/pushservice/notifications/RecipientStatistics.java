package dev.pushservice.notifications;

import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.dao.DataAccessException;
import org.springframework.stereotype.Component;

/**
 * Keeps the planner's statistics of the {@code notification_recipients} partition a fan-out fills
 * close to what it holds: {@code ANALYZE} of that partition once the run has inserted
 * {@code push.notifications.analyze-after} rows, then each time the run's total has doubled (about
 * 10 runs for 10,000,000 recipients; each samples 30,000 rows whatever the size), when the partition's
 * statistics count fewer rows than the run has inserted: a partition whose statistics already know a
 * larger table (the day's earlier sends) is left alone, an ANALYZE there costs the fan-out a quarter
 * second for nothing (bench/README.md). A day's partition is
 * made ahead, empty, and analyzed as such; autovacuum analyzes it only after its next naptime (and never
 * where it is off). Until then every statement over it is planned for an empty table: the claim pins its
 * plan ({@link DeliveryRecipientRepository#pinClaimPlan}), recording, counting and the reconciler's
 * reads do not. Runs outside the page transactions (ANALYZE takes a lock that lets inserts and updates
 * through); a failure is logged and the fan-out goes on.
 */
@Component
class RecipientStatistics {

    private static final Logger log = LoggerFactory.getLogger(RecipientStatistics.class);

    private final RecipientPartitionRepository partitions;
    private final long firstAfter;

    RecipientStatistics(RecipientPartitionRepository partitions, @Value("${push.notifications.analyze-after:10000}") long firstAfter) {
        if (firstAfter < 0) throw new IllegalArgumentException("push.notifications.analyze-after must not be negative");
        this.partitions = partitions;
        this.firstAfter = firstAfter;
    }

    /** One fan-out run's count of inserted rows and the total at which it analyzes next. */
    Run run(UUID notificationId) {
        return new Run(notificationId);
    }

    final class Run {
        private final UUID notificationId;
        private long next = firstAfter;

        private Run(UUID notificationId) {
            this.notificationId = notificationId;
        }

        /** After a page committed: {@code total} rows inserted by this run so far. */
        void inserted(long total) {
            if (firstAfter == 0 || total < next) return;
            next = 2 * total;
            analyze(notificationId, total);
        }
    }

    private void analyze(UUID notificationId, long inserted) {
        if (notificationId.version() != 7) return; // made before V49: its rows are in a partition of their own
        try {
            long start = System.nanoTime();
            String partition = partitions.analyzeRecipientsOf(notificationId, inserted);
            if (partition != null) {
                log.debug("Notification {}: analyzed {} in {} ms", notificationId, partition,
                        (System.nanoTime() - start) / 1_000_000);
            }
        } catch (DataAccessException e) {
            log.warn("Notification {}: could not analyze its recipients' partition: {}", notificationId, e.getMessage());
        }
    }
}
