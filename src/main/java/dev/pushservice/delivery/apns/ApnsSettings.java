package dev.pushservice.delivery.apns;

import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.apps.AppSettings;
import dev.pushservice.apps.SettingsSection;
import dev.pushservice.delivery.CredentialCache;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.platform.json.JsonInput;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
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
 * changed. Stored credentials that no longer pass (a certificate that has expired since) are
 * {@link CredentialSource.Unusable}.
 */
@Component
class ApnsSettings implements SettingsSection<AppSettings.ApnsView>, CredentialSource<ApnsCredentials> {

    /** The name the credentials are stored under, and the settings field. */
    static final String NAME = "apns";

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final Clock clock;
    private final CredentialCache<ApnsCredentials> cache = new CredentialCache<>(this::load);

    ApnsSettings(AppCredentialStore store, JsonMapper json, Clock clock) {
        this.store = store;
        this.json = json;
        this.clock = clock;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Runnable prepare(UUID appId, JsonNode value, JsonInput in) {
        if (value == null || value.isNull()) {
            return () -> {
                store.remove(appId, NAME);
                cache.invalidate(appId);
            };
        }
        Optional<JsonInput> section = in.nested(NAME);
        if (section.isEmpty()) return () -> { };
        ApnsCredentials credentials = ApnsCredentials.read(section.get(), clock.instant());
        if (credentials == null) return () -> { };
        JsonNode summary = json.valueToTree(credentials.summary());
        byte[] secret = json.writeValueAsBytes(credentials.toJson());
        return () -> {
            store.put(appId, NAME, summary, secret);
            cache.invalidate(appId);
        };
    }

    @Override
    public AppSettings.ApnsView read(UUID appId) {
        return store.summary(appId, NAME).map(s -> json.treeToValue(s, AppSettings.ApnsView.class)).orElse(null);
    }

    @Override
    public void rejected(UUID appId, long version, String reason, java.time.Instant at) {
        store.markRejected(appId, NAME, version, reason, at);
    }

    @Override
    public Optional<Versioned<ApnsCredentials>> find(UUID appId) {
        return cache.find(appId);
    }

    private Optional<Versioned<ApnsCredentials>> load(UUID appId) {
        return store.find(appId, NAME).map(stored -> {
            JsonInput in = JsonInput.object(json.readTree(new String(stored.secret(), StandardCharsets.UTF_8)));
            ApnsCredentials credentials = ApnsCredentials.read(in, clock.instant());
            if (credentials == null) {
                throw new Unusable("the stored APNs credentials no longer pass their checks (an expired certificate?)");
            }
            return new Versioned<>(credentials, stored.version());
        });
    }
}
