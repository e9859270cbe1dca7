package dev.pushservice.delivery.webpush;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import dev.pushservice.apps.AppCreated;
import dev.pushservice.apps.AppCredentialStore;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;

/**
 * When VAPID key pairs are made, so that no read ever has to make one: with the app, in the
 * transaction that creates it ({@link AppCreated}), when the service creates it; and by the
 * {@code scheduler} role's recurring {@value #SWEEP} task within {@link #SWEEP_EVERY} for apps that
 * have none: made by the admin CLI, or by a version before this rule. Several instances making one
 * app's pair agree on one (first writer wins).
 *
 * <p>Only in the service, never in an admin CLI run: the CLI may run with another
 * {@code PUSH_SECRET_KEY} than the service, and a pair sealed with the wrong key could never be
 * opened by the service, nor replaced without orphaning the browser subscriptions made with it.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication
class VapidKeyProvisioning {

    static final String SWEEP = "webpush-key-pairs";
    static final Duration SWEEP_EVERY = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(VapidKeyProvisioning.class);
    private static final int BATCH = 500;

    private final VapidKeyService vapid;
    private final AppCredentialStore store;

    VapidKeyProvisioning(VapidKeyService vapid, AppCredentialStore store) {
        this.vapid = vapid;
        this.store = store;
    }

    @EventListener
    void appCreated(AppCreated created) {
        vapid.ensure(created.appId());
    }

    @Bean
    RecurringTask<Void> webPushKeyPairSweep() {
        return Tasks.recurring(SWEEP, FixedDelay.of(SWEEP_EVERY)).execute((instance, context) -> makeMissing());
    }

    /** Makes a pair for every app that has none; returns how many. */
    int makeMissing() {
        int made = 0;
        List<UUID> missing;
        do {
            missing = store.appsWithout(VapidKeyService.NAME, BATCH);
            missing.forEach(vapid::ensure);
            made += missing.size();
        } while (missing.size() == BATCH);
        if (made > 0) log.info("Generated Web Push key pairs for {} app(s) that had none", made);
        return made;
    }
}
