package dev.pushservice.users;

import dev.pushservice.devices.DeviceView;
import java.time.Instant;
import java.util.List;
import tools.jackson.databind.JsonNode;

/** A user as the API shows it: profile, aliases and devices; no internal or app ids. */
record UserView(
        String externalUserId,
        String locale,
        String timezone,
        JsonNode tags,
        JsonNode properties,
        List<Alias> aliases,
        List<DeviceView> devices,
        Instant createdAt,
        Instant updatedAt) {

    public record Alias(String label, String value) {
    }
}
