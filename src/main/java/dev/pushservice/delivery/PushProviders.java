package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.springframework.stereotype.Component;

/**
 * The provider of each {@link Platform}: what the delivery core sends through, so that it never
 * names a provider or switches on a platform. Built from every {@link PushProvider} bean: two for
 * one platform stop the service from starting. Thread-safe and immutable; it does not own the
 * providers (their beans close them).
 */
@Component
public final class PushProviders {

    private final Map<Platform, PushProvider> byPlatform = new EnumMap<>(Platform.class);

    public PushProviders(List<PushProvider> providers) {
        for (PushProvider provider : providers) {
            PushProvider other = byPlatform.putIfAbsent(provider.platform(), provider);
            if (other != null) {
                throw new IllegalStateException("two providers for " + provider.platform().value() + ": "
                        + other.getClass().getSimpleName() + " and " + provider.getClass().getSimpleName());
            }
        }
    }

    /**
     * The provider that delivers to {@code platform}.
     *
     * @throws IllegalStateException when this instance has none for it (a misuse: it does not deliver)
     */
    public PushProvider forPlatform(Platform platform) {
        PushProvider provider = byPlatform.get(platform);
        if (provider == null) throw new IllegalStateException("no push provider for " + platform.value());
        return provider;
    }

    /** Sends through the message's platform's provider; see {@link PushProvider#send} for waiting and results. */
    public CompletableFuture<DeliveryResult> send(PushMessage message) {
        return forPlatform(message.platform()).send(message);
    }
}
