package dev.pushservice.platform.jobs;

import com.github.kagkarlsson.scheduler.task.Execution;
import com.github.kagkarlsson.scheduler.task.ExecutionComplete;
import com.github.kagkarlsson.scheduler.task.ExecutionOperations;
import com.github.kagkarlsson.scheduler.task.FailureHandler;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The end of the line for tasks that keep failing: {@link #handler} gives a task retries with
 * backoff, and once they are used up (or the task throws {@link PermanentJobFailure}) moves the
 * instance out of {@code scheduled_tasks} into {@code dead_letter_jobs} in one transaction, where
 * it stays for inspection and is counted by {@code /health}.
 *
 * <p>Only the task name, instance id, attempt count and the last exception's class and message are
 * kept (not the task data), so a task's instance id should name what it works on. Thread-safe.
 */
@Component
public class DeadLetters {

    private static final Logger log = LoggerFactory.getLogger(DeadLetters.class);
    static final int MAX_ERROR_LENGTH = 2000;

    private final DeadLetterRepository deadLetters;
    private final TransactionTemplate transactions;

    DeadLetters(DeadLetterRepository deadLetters, TransactionTemplate transactions) {
        this.deadLetters = deadLetters;
        this.transactions = transactions;
    }

    /** A failure handler: retry per {@code policy}, then dead-letter. Use one per task. */
    public <T> FailureHandler<T> handler(RetryPolicy policy) {
        return new RetryThenDeadLetter<>(policy);
    }

    private final class RetryThenDeadLetter<T> implements FailureHandler<T> {

        private final RetryPolicy policy;

        RetryThenDeadLetter(RetryPolicy policy) {
            this.policy = policy;
        }

        @Override
        public void onFailure(ExecutionComplete complete, ExecutionOperations<T> operations) {
            Execution execution = complete.getExecution();
            int attempts = execution.consecutiveFailures + 1;
            Throwable cause = complete.getCause().orElse(null);
            boolean permanent = isPermanent(cause);
            if (!permanent && attempts < policy.maxAttempts()) {
                Instant next = complete.getTimeDone().plus(policy.backoffAfter(attempts));
                operations.reschedule(complete, next);
                return;
            }
            // insert and delete commit together: a crash in between never loses or duplicates the job
            transactions.executeWithoutResult(status -> {
                deadLetters.insert(execution.getTaskName(), execution.getId(), attempts, describe(cause));
                operations.stop();
            });
            log.warn("Task {} instance {} dead-lettered after {} attempt(s){}", execution.getTaskName(),
                    execution.getId(), attempts, permanent ? " (permanent failure)" : "");
        }
    }

    private static boolean isPermanent(Throwable t) {
        for (int depth = 0; t != null && depth < 10; t = t.getCause(), depth++) {
            if (t instanceof PermanentJobFailure) return true;
        }
        return false;
    }

    static String describe(Throwable t) {
        if (t == null) return null;
        String text = t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
        return text.length() <= MAX_ERROR_LENGTH ? text : text.substring(0, MAX_ERROR_LENGTH - 1) + "…";
    }
}
