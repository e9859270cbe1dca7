package dev.pushservice.delivery.webpush;

import dev.pushservice.apps.AppCreated;
import dev.pushservice.apps.AppCredentialStore;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * When VAPID key pairs are made, so that no read ever has to make one: with the app, in the
 * transaction that creates it ({@link AppCreated}); and at start, before this instance serves
 * requests, for apps that have none (made by a version before this rule). Several instances
 * starting together agree on one pair per app (first writer wins).
 */
@Component
class VapidKeyProvisioning implements SmartInitializingSingleton {

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

    @Override
    public void afterSingletonsInstantiated() {
        int made = 0;
        List<UUID> missing;
        do {
            missing = store.appsWithout(AppCredentialStore.WEBPUSH, BATCH);
            missing.forEach(vapid::ensure);
            made += missing.size();
        } while (missing.size() == BATCH);
        if (made > 0) log.info("Generated Web Push key pairs for {} existing app(s)", made);
    }
}
