package dev.pushservice.devices;

import java.time.Instant;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A device as the API shows it. Never the push token.
 *
 * @param invalidated the provider token no longer works (provider said so, or the device was deleted)
 * @param tags the tags of the device's user
 * @param migratedFrom provenance when the device was claimed from a staged migration record, else null
 */
public record DeviceView(
        UUID deviceId,
        String platform,
        boolean enabled,
        boolean invalidated,
        String externalUserId,
        String appVersion,
        String deviceModel,
        String osVersion,
        String locale,
        String timezone,
        JsonNode tags,
        Instant lastSeenAt,
        Instant createdAt,
        Instant updatedAt,
        Migration migratedFrom) {

    public record Migration(String provider, String sourceId) {
    }
}
