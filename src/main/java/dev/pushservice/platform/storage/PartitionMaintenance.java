package dev.pushservice.platform.storage;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.dao.DataAccessException;
import org.springframework.stereotype.Service;

/**
 * Keeps the time-partitioned tables ({@code notification_recipients}, {@code events},
 * {@code lifecycle_events}, {@code webhook_deliveries}, {@code journey_executions}, the tables
 * partitioned with them; docs/storage.md) bounded: creates their partitions
 * {@link RetentionProperties#partitionsAhead() ahead} of the clock, and drops whole partitions whose
 * rows are older than the table's retention. Runs at every start (any role: an instance that writes
 * must find its partitions) and every {@value #EVERY_MINUTES} minutes as the recurring task
 * {@value #TASK} (role {@code scheduler}). A row whose partition does not exist yet goes to the
 * table's default partition, so an insert never fails; it moves into its partition when that is
 * created.
 *
 * <p>Recipients of a notification are dropped only once every notification of that day and before
 * has its summary (the counts reads answer with after the rows are gone): one still running (or a
 * cancelled one with sends in flight) holds retention back, and the next run tries again. A partition
 * its table's own rule still needs (a month of journey executions while one of them is active or
 * waiting: V54 {@code held_by}) is kept, with a warning naming it, and the later ones may go. A drop
 * that cannot get the parent's lock within {@link PartitionRepository#LOCK_TIMEOUT} (a long
 * transaction on the table) also waits for the next run.
 */
@Service
public class PartitionMaintenance {

    static final String TASK = "storage-partition-maintenance";
    static final long EVERY_MINUTES = 60;

    private static final Logger log = LoggerFactory.getLogger(PartitionMaintenance.class);

    /** The tables of a notification's recipients (rows, and the accepted ones per batch: V58), kept while it runs. */
    private static final java.util.Set<String> HOLDS_RECIPIENTS =
            java.util.Set.of("notification_recipients", "notification_recipient_batches");

    /** What one run did. */
    public record Result(int created, List<String> dropped) {
    }

    private final PartitionRepository partitions;
    private final RetentionProperties retention;
    private final Clock clock;

    PartitionMaintenance(PartitionRepository partitions, RetentionProperties retention, Clock clock) {
        this.partitions = partitions;
        this.retention = retention;
        this.clock = clock;
    }

    /** One run at the application clock's time. */
    public Result run() {
        return run(clock.instant());
    }

    /** One run as at {@code now}: partitions ahead of it created, those past retention before it dropped. */
    public Result run(Instant now) {
        int created = createAhead(now);
        List<String> dropped = new ArrayList<>();
        for (String table : partitions.tables()) {
            Duration keep = retention.of(table);
            if (keep == null) continue;
            for (PartitionRepository.Partition p : partitions.expired(table, now.minus(keep))) {
                if (HOLDS_RECIPIENTS.contains(table) && partitions.unfinishedNotificationBefore(p.dataUntil())) {
                    log.warn("Partition {} is past retention but a notification from before {} has no summary yet;"
                            + " kept until it finishes", p.name(), p.dataUntil());
                    break;
                }
                if (partitions.held(p.name())) {
                    // the only rule so far: a month of journey executions with one still active or waiting (V54)
                    log.warn("Partition {} is past retention but its table's held_by rule still needs it (a journey"
                            + " execution in it is active or waiting); kept until it does not", p.name());
                    continue;
                }
                try {
                    partitions.drop(p.name());
                    dropped.add(p.name());
                } catch (DataAccessException e) {
                    log.warn("Partition {} not dropped this time ({}); the next run tries again", p.name(),
                            e.getMostSpecificCause().getMessage());
                    break;
                }
            }
        }
        if (created > 0 || !dropped.isEmpty()) {
            log.info("Storage partitions: {} created ahead, {} dropped past retention {}", created, dropped.size(), dropped);
        }
        return new Result(created, dropped);
    }

    /** Creates the partitions from the current period to {@code now} plus the configured time ahead. */
    int createAhead(Instant now) {
        return partitions.create(now, now.plus(retention.partitionsAhead()));
    }

    @EventListener(ApplicationReadyEvent.class)
    void atStart() {
        try {
            createAhead(clock.instant());
        } catch (DataAccessException e) {
            // the default partitions take the rows meanwhile; the recurring task tries again
            log.warn("Storage partitions not created at start: {}", e.getMostSpecificCause().getMessage());
        }
    }

    /** The recurring task (role {@code scheduler}). */
    @Configuration(proxyBeanMethods = false)
    static class TaskConfiguration {

        @Bean
        RecurringTask<Void> storagePartitionMaintenance(PartitionMaintenance maintenance) {
            return Tasks.recurring(TASK, FixedDelay.of(Duration.ofMinutes(EVERY_MINUTES)))
                    .execute((instance, context) -> maintenance.run());
        }
    }
}
