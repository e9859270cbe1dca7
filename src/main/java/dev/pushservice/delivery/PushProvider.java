package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Delivers prepared messages for one platform. Implementations are thread-safe, long-lived,
 * keep one client per app credential, and bound their in-flight requests so that a slow provider
 * applies back-pressure ({@link #send} waits for a slot) instead of exhausting memory.
 *
 * <p>The returned future never completes exceptionally for a provider's answer, a bad message or
 * missing credentials: rejections and transient failures are {@link DeliveryResult} values with a
 * {@link ReasonCode}. It completes exceptionally only for a bug or misuse (e.g. a message for
 * another platform). The delivery core reaches providers through {@link PushProviders}.
 *
 * <p>Every implementation has the same shape: a builder ({@code XProvider.builder(credentials)},
 * with the provider's {@code push.<name>.*} properties and the service {@link java.time.Clock})
 * that checks its configuration at {@code build()}, a {@link CredentialSource} for each app's
 * credentials, and one long-lived client per app credential version.
 */
public interface PushProvider extends AutoCloseable {

    Platform platform();

    CompletableFuture<DeliveryResult> send(PushMessage message);

    /**
     * As {@link #send(PushMessage)}, and runs {@code written} once the request is on its way out (written to its
     * connection) or known never to go (answered without a request, failed first): exactly once. A cancel waits
     * for it (see {@code SendFence}). This default runs it when {@link #send(PushMessage)} returns, for a
     * provider that hands the request over as it returns or cannot tell when it is written (APNs: Pushy).
     */
    default CompletableFuture<DeliveryResult> send(PushMessage message, Runnable written) {
        try {
            return send(message);
        } finally {
            written.run();
        }
    }

    /**
     * For a provider that knows when its request is written: runs {@code request} with {@code written} made
     * to run once only, and runs it when the answer comes at the latest (a send refused before any request,
     * a failure), as {@link #send(PushMessage, Runnable)} promises.
     */
    static CompletableFuture<DeliveryResult> whenWritten(Runnable written,
                                                         Function<Runnable, CompletableFuture<DeliveryResult>> request) {
        AtomicBoolean ran = new AtomicBoolean();
        Runnable once = () -> {
            if (ran.compareAndSet(false, true)) written.run();
        };
        CompletableFuture<DeliveryResult> result = request.apply(once);
        result.whenComplete((answer, error) -> once.run());
        return result;
    }

    /**
     * What {@link #send} would hand to the provider for {@code message}, built by the same code, with
     * nothing sent: the request (headers and body, the token left out) or the rejection decided
     * before sending. Does not check the app's credentials (a preview of an app without them still
     * shows the payload); the APNs topic comes from them when they are there. Never blocks.
     */
    ProviderPreview preview(PushMessage message);

    /**
     * Asks the provider whether it accepts {@code appId}'s credentials, without showing anything to a
     * person. Never completes exceptionally for an answer; never blocks on I/O (the future completes on
     * an I/O thread).
     */
    default CompletableFuture<CredentialCheck> checkCredentials(java.util.UUID appId) {
        return CompletableFuture.completedFuture(CredentialCheck.unavailable("this provider cannot be checked"));
    }

    /**
     * The push service {@code message} goes to, when this platform's messages go to several services
     * that answer each at its own pace (Web Push: the endpoint's origin); null when they all go to one.
     * The lanes bound their requests open per origin, so one slow origin never takes a platform's
     * whole in-flight budget, and each origin is a provider circuit of its own ({@link ProviderBreakers}):
     * one push service down or limiting us holds back no other. Cheap and never blocking; null too for a token it cannot read (its
     * {@link #send} rejects it).
     */
    default String origin(PushMessage message) {
        return null;
    }

    /**
     * Whether {@link #origin} names push services (Web Push): then an app's circuits on this platform
     * are per origin, and a lane cannot leave an open one's recipients out of its claim (the claim does
     * not know a recipient's origin). False (APNs, FCM): one circuit covers an app's every recipient on
     * the platform, and while it is open the lanes claim none of them ({@link ProviderBreakers#paused}).
     */
    default boolean hasOrigins() {
        return false;
    }

    @Override
    default void close() {
    }
}
