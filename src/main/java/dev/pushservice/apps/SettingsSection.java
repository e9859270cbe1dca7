package dev.pushservice.apps;

import dev.pushservice.platform.json.JsonInput;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A part of {@code /v1/app/settings} owned by another feature (a provider's credentials). The
 * settings service takes one section per view type ({@code SettingsSection<AppSettings.ApnsView>},
 * …), hands it its part of a PATCH body and shows what {@link #read} returns. Implementations
 * must never return a secret from {@link #read}.
 *
 * @param <V> what reads show: one of the views in {@link AppSettings}
 */
public interface SettingsSection<V> {

    /** The top-level field name, e.g. {@code fcm}. */
    String name();

    /**
     * Checks this section's value (JSON {@code null} means "remove"), recording problems on
     * {@code in} with field names under {@link #name()}; returns the change to make, which runs only
     * if the whole PATCH is valid, inside its transaction.
     */
    Runnable prepare(UUID appId, JsonNode value, JsonInput in);

    /** What settings reads show for this section, or null when nothing is configured. */
    V read(UUID appId);
}
