package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Service;

/**
 * Asks each provider whether it accepts an app's credentials, without showing anything to a person
 * (APNs: a background push to a made-up token, answered {@code BadDeviceToken} when the key is good;
 * FCM: a {@code validate_only} message; Web Push: the VAPID subject and key pair checked here). The
 * providers are asked in parallel; one that does not answer within {@link #WAIT} is
 * {@code unavailable}. A refusal found here is remembered as one found by a send
 * ({@link CredentialRejections}). The one implementation behind {@code POST /v1/app/settings/check}
 * and the dashboard's "Check credentials" button. Blocks the calling thread (a request's virtual thread).
 */
@Service
public class CredentialChecks {

    static final Duration WAIT = Duration.ofSeconds(20);
    private static final Map<Platform, String> NAMES = Map.of(Platform.IOS, "apns", Platform.ANDROID, "fcm", Platform.WEB, "webpush");

    private final ObjectProvider<PushProviders> providers;

    CredentialChecks(ObjectProvider<PushProviders> providers) {
        this.providers = providers;
    }

    /** Each provider's verdict on the app's credentials, by provider name ({@code apns}, {@code fcm}, {@code webpush}), in that order. */
    public Map<String, CredentialCheck> check(UUID appId) {
        PushProviders all = providers.getObject();
        Map<Platform, CompletableFuture<CredentialCheck>> asked = new EnumMap<>(Platform.class);
        for (Platform p : Platform.values()) {
            try {
                asked.put(p, all.forPlatform(p).checkCredentials(appId));
            } catch (IllegalStateException none) {
                asked.put(p, CompletableFuture.completedFuture(CredentialCheck.unavailable("this service has no provider for it")));
            } catch (RuntimeException e) {
                asked.put(p, CompletableFuture.completedFuture(CredentialCheck.unavailable(e.getClass().getSimpleName())));
            }
        }
        long deadline = System.nanoTime() + WAIT.toNanos();
        Map<String, CredentialCheck> answer = new LinkedHashMap<>();
        for (Platform p : Platform.values()) {
            CredentialCheck check;
            try {
                check = asked.get(p).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                check = CredentialCheck.unavailable("no answer within " + WAIT.toSeconds() + " s");
            } catch (ExecutionException e) {
                check = CredentialCheck.unavailable(e.getCause() == null ? "failed" : e.getCause().getClass().getSimpleName());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                check = CredentialCheck.unavailable("interrupted");
            }
            answer.put(NAMES.get(p), check);
        }
        return answer;
    }
}
