package dev.pushservice.delivery;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * The cache behind each provider's {@link CredentialSource}: what {@code loader} found for an app
 * (credentials, none, or {@link CredentialSource.Unusable}) is kept for {@link #TTL}, so a send
 * neither reads the database nor decrypts nor parses keys; a change made on this instance is seen
 * at once ({@link #invalidate}), other instances see it within the TTL. Thread-safe.
 */
public final class CredentialCache<T> {

    /** How long other instances may keep using replaced credentials. */
    public static final Duration TTL = Duration.ofSeconds(30);

    private final Function<UUID, Optional<CredentialSource.Versioned<T>>> loader;
    private final Cache<UUID, Entry<T>> cache = Caffeine.newBuilder()
            .expireAfterWrite(TTL).maximumSize(10_000).build();

    /** @param loader reads and parses an app's stored credentials; may throw {@link CredentialSource.Unusable} */
    public CredentialCache(Function<UUID, Optional<CredentialSource.Versioned<T>>> loader) {
        this.loader = loader;
    }

    /** As {@link CredentialSource#find}: throws {@link CredentialSource.Unusable} again for as long as it is cached. */
    public Optional<CredentialSource.Versioned<T>> find(UUID appId) {
        Entry<T> entry = cache.get(appId, this::load);
        if (entry.unusable() != null) throw new CredentialSource.Unusable(entry.unusable());
        return entry.found();
    }

    /** What is cached for the app, if usable credentials are; never loads. */
    public Optional<CredentialSource.Versioned<T>> cached(UUID appId) {
        Entry<T> entry = cache.getIfPresent(appId);
        return entry == null ? Optional.empty() : entry.found();
    }

    public void invalidate(UUID appId) {
        cache.invalidate(appId);
    }

    private Entry<T> load(UUID appId) {
        try {
            return new Entry<>(loader.apply(appId), null);
        } catch (CredentialSource.Unusable e) {
            return new Entry<>(Optional.empty(), e.getMessage());
        }
    }

    private record Entry<T>(Optional<CredentialSource.Versioned<T>> found, String unusable) {
    }
}
