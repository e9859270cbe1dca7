package dev.pushservice.delivery.apns;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.apps.SettingsSection;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.platform.json.JsonInput;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Component;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code apns} section of app settings, and the provider's {@link CredentialSource}: token
 * (.p8) or certificate credentials are checked when set (a bad key is a 422 then, never a failure
 * at send time) and stored encrypted; reads show only bundle id, environment, auth kind, key and
 * team id. Parsed credentials are cached per app for 30 s, replaced at once on this instance when
 * changed.
 */
@Component
public class ApnsSettings implements SettingsSection, CredentialSource<ApnsCredentials> {

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final Cache<UUID, Optional<Versioned<ApnsCredentials>>> cache = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(30)).maximumSize(10_000).build();

    ApnsSettings(AppCredentialStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
    }

    @Override
    public String name() {
        return "apns";
    }

    @Override
    public Runnable prepare(UUID appId, JsonNode value, JsonInput in) {
        if (value == null || value.isNull()) {
            return () -> {
                store.remove(appId, AppCredentialStore.APNS);
                cache.invalidate(appId);
            };
        }
        Optional<JsonInput> section = in.nested("apns");
        if (section.isEmpty()) return () -> { };
        ApnsCredentials credentials = ApnsCredentials.read(section.get());
        if (credentials == null) return () -> { };
        JsonNode summary = json.valueToTree(credentials.summary());
        byte[] secret = json.writeValueAsBytes(credentials.toJson());
        return () -> {
            store.put(appId, AppCredentialStore.APNS, summary, secret);
            cache.invalidate(appId);
        };
    }

    @Override
    public Object read(UUID appId) {
        return store.summaries(appId).get(AppCredentialStore.APNS);
    }

    @Override
    public Optional<Versioned<ApnsCredentials>> find(UUID appId) {
        return cache.get(appId, id -> store.find(id, AppCredentialStore.APNS).map(s -> {
            JsonInput stored = JsonInput.object(json.readTree(new String(s.secret(), StandardCharsets.UTF_8)));
            ApnsCredentials credentials = ApnsCredentials.read(stored);
            stored.check();
            return new Versioned<>(credentials, s.version());
        }));
    }
}
