package dev.pushservice.devices;

import dev.pushservice.platform.rules.Platform;
import java.util.Map;

/** A validated registration body. Absent optional fields are null and leave stored values unchanged. */
record Registration(
        Platform platform,
        String pushToken,
        String externalUserId,
        String identityToken,
        String appVersion,
        String deviceModel,
        String osVersion,
        String locale,
        String timezone,
        Map<String, String> tags) {
}
