package dev.pushservice.delivery.fcm;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.apps.SettingsSection;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.json.JsonInput;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import org.springframework.stereotype.Component;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The {@code fcm} section of app settings, and the provider's {@link CredentialSource}: the
 * service-account JSON is checked when set (a bad one is a 422 then, never a failure at send time)
 * and stored encrypted; reads show only project id and client email. Parsed credentials are cached
 * per app for 30 s, and replaced at once on this instance when changed.
 */
@Component
public class FcmSettings implements SettingsSection, CredentialSource<FcmCredentials> {

    private static final String FIELD = "fcm.service_account";

    private final AppCredentialStore store;
    private final JsonMapper json;
    private final Cache<UUID, Optional<Versioned<FcmCredentials>>> cache = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(30)).maximumSize(10_000).build();

    FcmSettings(AppCredentialStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
    }

    @Override
    public String name() {
        return "fcm";
    }

    @Override
    public Runnable prepare(UUID appId, JsonNode value, JsonInput in) {
        if (value == null || value.isNull()) {
            return () -> forget(appId, store.remove(appId, AppCredentialStore.FCM));
        }
        if (!value.isObject()) {
            in.reject("fcm", "must be an object {\"service_account\": {…}} or null to remove");
            return () -> { };
        }
        JsonNode account = value.get("service_account");
        if (account == null || !(account.isObject() || account.isString())) {
            in.reject(FIELD, "is required: the service-account JSON from the Firebase console (object or string)");
            return () -> { };
        }
        String raw = account.isString() ? account.stringValue() : json.writeValueAsString(account);
        FcmCredentials credentials;
        try {
            credentials = FcmCredentials.parse(FIELD, raw);
        } catch (ApiException e) {
            in.rejectAll(e.details().stream().map(d -> new dev.pushservice.platform.domain.Violation(d.field(), d.message())).toList());
            return () -> { };
        }
        ObjectNode summary = json.createObjectNode()
                .put("project_id", credentials.projectId())
                .put("client_email", credentials.clientEmail());
        return () -> forget(appId, store.put(appId, AppCredentialStore.FCM, summary, raw.getBytes(StandardCharsets.UTF_8)));
    }

    @Override
    public Object read(UUID appId) {
        return store.summaries(appId).get(AppCredentialStore.FCM);
    }

    @Override
    public Optional<Versioned<FcmCredentials>> find(UUID appId) {
        return cache.get(appId, id -> store.find(id, AppCredentialStore.FCM).map(s ->
                new Versioned<>(FcmCredentials.parse(FIELD, new String(s.secret(), StandardCharsets.UTF_8)), s.version())));
    }

    private void forget(UUID appId, Object ignored) {
        cache.invalidate(appId);
    }
}
