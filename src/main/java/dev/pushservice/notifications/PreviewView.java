package dev.pushservice.notifications;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * The answer of {@code POST /v1/notifications/preview}: who the notification would reach now, and
 * what a sample recipient per platform (or the device asked for) would be sent. Never holds a token.
 *
 * @param audience devices the audience selects now (the fan-out's selection), in total and per platform
 * @param interruptionLevel as creation would resolve it
 * @param samples one per platform with a device in the audience (newest device first, as the fan-out
 *                orders them), or only the device asked for
 */
public record PreviewView(Audience audience, String interruptionLevel, List<Sample> samples) {

    /** @param platforms every platform, 0 where the audience has no device */
    public record Audience(long total, Map<String, Long> platforms) {
    }

    /**
     * @param inAudience false for a device asked for that the audience would not reach (it is still rendered)
     * @param localization the {@code localizations} key chosen for this recipient as the request spelled
     *                     it, or null for the default content
     * @param request what the provider would receive; null when {@code rejected}
     * @param rejected why the provider would reject it before sending; null when there is a request
     */
    public record Sample(UUID deviceId, String platform, String externalUserId, boolean inAudience, String localization,
                  ProviderRequest request, Rejection rejected) {
    }

    /**
     * @param headers the headers that shape delivery (APNs {@code apns-*}; Web Push {@code ttl},
     *                {@code urgency}, {@code topic}, {@code content-encoding}; none for FCM)
     * @param body APNs: the JSON payload; FCM: the HTTP v1 body ({@code {"message": …}}, no token);
     *             Web Push: the JSON the browser decrypts
     */
    public record ProviderRequest(Map<String, String> headers, JsonNode body) {
    }

    /** @param reason a recipient's {@code last_error} code, such as {@code payload_too_large} */
    public record Rejection(String reason, String detail) {
    }
}
