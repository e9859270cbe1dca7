package dev.pushservice.devices;

import java.time.Instant;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A device as the API shows it. Never the push token.
 *
 * @param invalidatedAt when the token was marked invalid (the provider said so, or the device was deleted), or null
 * @param tags the tags of the device's user
 * @param migratedFrom provenance when the device was claimed from a staged migration record, else null
 */
public record DeviceView(
        UUID deviceId,
        String platform,
        boolean enabled,
        Instant invalidatedAt,
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
