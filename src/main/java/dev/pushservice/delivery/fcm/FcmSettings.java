package dev.pushservice.delivery.fcm;

import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.apps.AppSettings;
import dev.pushservice.apps.SettingsSection;
import dev.pushservice.delivery.CredentialCache;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.platform.json.JsonInput;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Component;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code fcm} section of app settings, and the provider's {@link CredentialSource}: the
 * service-account JSON is checked when set (a bad one is a 422 then, never a failure at send time)
 * and stored encrypted; reads show only project id and client email. Parsed credentials are cached
 * per app for 30 s, and replaced at once on this instance when changed.
 */
@Component
class FcmSettings implements SettingsSection<AppSettings.FcmView>, CredentialSource<FcmCredentials> {

    /** The name the credentials are stored under, and the settings field. */
    static final String NAME = "fcm";
    private static final String FIELD = "fcm.service_account";

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final CredentialCache<FcmCredentials> cache = new CredentialCache<>(this::load);

    FcmSettings(AppCredentialStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
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
        if (!value.isObject()) {
            in.reject(NAME, "must be an object {\"service_account\": {…}} or null to remove");
            return () -> { };
        }
        JsonNode account = value.get("service_account");
        if (account == null || !(account.isObject() || account.isString())) {
            in.reject(FIELD, "is required: the service-account JSON from the Firebase console (object or string)");
            return () -> { };
        }
        String raw = account.isString() ? account.stringValue() : json.writeValueAsString(account);
        FcmCredentials credentials = FcmCredentials.read(FIELD, raw, in::reject);
        if (credentials == null) return () -> { };
        JsonNode summary = json.valueToTree(new AppSettings.FcmView(credentials.projectId(), credentials.clientEmail()));
        return () -> {
            store.put(appId, NAME, summary, raw.getBytes(StandardCharsets.UTF_8));
            cache.invalidate(appId);
        };
    }

    @Override
    public AppSettings.FcmView read(UUID appId) {
        return store.summary(appId, NAME).map(s -> json.treeToValue(s, AppSettings.FcmView.class)).orElse(null);
    }

    @Override
    public void rejected(UUID appId, long version, String reason, java.time.Instant at) {
        store.markRejected(appId, NAME, version, reason, at);
    }

    @Override
    public Optional<Versioned<FcmCredentials>> find(UUID appId) {
        return cache.find(appId);
    }

    private Optional<Versioned<FcmCredentials>> load(UUID appId) {
        return store.find(appId, NAME).map(stored -> {
            FcmCredentials credentials = FcmCredentials.read(FIELD,
                    new String(stored.secret(), StandardCharsets.UTF_8), (field, message) -> { });
            if (credentials == null) throw new Unusable("the stored FCM service account no longer passes its checks");
            return new Versioned<>(credentials, stored.version());
        });
    }
}
