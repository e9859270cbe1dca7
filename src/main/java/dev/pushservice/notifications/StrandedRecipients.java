package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Clock;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The recurring task {@value #SWEEP} (role {@code scheduler}, see {@code platform/jobs}): every
 * {@code push.delivery.cancelled-sweep-interval} (default 1 minute, at least 1 s) after the previous
 * run ended, ends the recipients of cancelled notifications that a dead instance had claimed and
 * never recorded ({@link RecipientDelivery#cancelStranded}), in batches until none is left. The
 * lanes never claim them again (they claim only processing notifications), so without it they would
 * stay {@code sending} and keep their frequency-cap slots. A recipient is ended once its lease
 * ({@code push.delivery.lease}) has run out, so at most lease + interval after its claim. One
 * scheduler instance runs it at a time; each run is one loose scan of the work index (see
 * {@link DeliveryRecipientRepository#cancelStranded}).
 */
@Configuration(proxyBeanMethods = false)
class StrandedRecipients {

    static final String SWEEP = "delivery-cancelled-leases";

    @Bean
    RecurringTask<Void> deliveryCancelledLeasesSweep(RecipientDelivery delivery, Clock clock,
                                                     @Value("${push.delivery.cancelled-sweep-interval:1m}") Duration every) {
        if (every.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("push.delivery.cancelled-sweep-interval must be at least 1s");
        }
        return Tasks.recurring(SWEEP, FixedDelay.of(every)).execute((instance, context) -> {
            while (delivery.cancelStranded(clock.instant()) > 0) {
                // more were stranded than one batch holds
            }
        });
    }
}
