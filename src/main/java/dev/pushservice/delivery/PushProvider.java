package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import java.util.concurrent.CompletableFuture;

/**
 * Delivers prepared messages for one platform. Implementations are thread-safe, long-lived,
 * keep one client per app credential, and bound their in-flight requests so that a slow provider
 * applies back-pressure ({@link #send} waits for a slot) instead of exhausting memory.
 *
 * <p>The returned future never completes exceptionally for a provider's answer: rejections and
 * transient failures are {@link DeliveryResult} values. It completes exceptionally only for a
 * bug or misuse (e.g. a message for another platform).
 */
public interface PushProvider extends AutoCloseable {

    Platform platform();

    CompletableFuture<DeliveryResult> send(PushMessage message);

    @Override
    default void close() {
    }
}
