package dev.pushservice.delivery.fcm;

import dev.pushservice.delivery.DeliveryResult;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Turns an FCM v1 error answer into a {@link DeliveryResult}. The FCM error code is taken from
 * {@code error.details[].errorCode} (type {@code google.firebase.fcm.v1.FcmError}) and falls back to
 * {@code error.status}, then to the HTTP status.
 *
 * <ul>
 * <li>{@code UNREGISTERED}: rejected, token invalid.</li>
 * <li>{@code INVALID_ARGUMENT} naming the token (a {@code message.token} field violation, or a message about
 *     the registration token): rejected, token invalid; any other {@code INVALID_ARGUMENT}: rejected only.</li>
 * <li>{@code SENDER_ID_MISMATCH}: rejected, token <em>not</em> invalidated: it almost always means the app's
 *     service account belongs to another Firebase project than its devices, and invalidating would wipe the
 *     whole Android audience over a configuration mistake that the app can fix.</li>
 * <li>{@code THIRD_PARTY_AUTH_ERROR}, {@code UNAUTHENTICATED} (401), {@code PERMISSION_DENIED} (403),
 *     {@code NOT_FOUND} without {@code UNREGISTERED} (wrong project), other 4xx: rejected only.</li>
 * <li>{@code QUOTA_EXCEEDED} (429), {@code UNAVAILABLE} (503), {@code INTERNAL} (500), any 5xx: failed,
 *     transient, with {@code Retry-After} (seconds or an HTTP date) when given.</li>
 * </ul>
 */
final class FcmErrors {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int MAX_REASON = 300;

    private FcmErrors() {
    }

    /** @param retryAfter the {@code Retry-After} header, or null */
    static DeliveryResult map(int status, String retryAfter, byte[] body, Instant now) {
        JsonNode error = errorNode(body);
        String fcmStatus = text(error, "status");
        String message = text(error, "message");
        String errorCode = null;
        boolean tokenViolation = false;
        JsonNode details = error == null ? null : error.get("details");
        if (details != null && details.isArray()) {
            for (JsonNode detail : details) {
                String type = text(detail, "@type");
                if (type != null && type.endsWith("google.firebase.fcm.v1.FcmError") && errorCode == null) {
                    errorCode = text(detail, "errorCode");
                }
                JsonNode violations = detail.get("fieldViolations");
                if (violations != null && violations.isArray()) {
                    for (JsonNode v : violations) {
                        if ("message.token".equals(text(v, "field"))) tokenViolation = true;
                    }
                }
            }
        }
        String code = errorCode != null ? errorCode : fcmStatus != null ? fcmStatus : "HTTP_" + status;
        String reason = reason(code, message);
        return switch (code) {
            case "UNREGISTERED" -> new DeliveryResult.Rejected(reason, true, null);
            case "INVALID_ARGUMENT" -> new DeliveryResult.Rejected(reason,
                    tokenViolation || mentionsToken(message), null);
            case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL" ->
                    new DeliveryResult.Failed(reason, retryAfter(retryAfter, now));
            case "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED",
                 "NOT_FOUND" -> new DeliveryResult.Rejected(reason, false, null);
            default -> status == 429 || status >= 500
                    ? new DeliveryResult.Failed(reason, retryAfter(retryAfter, now))
                    : new DeliveryResult.Rejected(reason, false, null);
        };
    }

    /** {@code Retry-After} as delta-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable. */
    static Duration retryAfter(String header, Instant now) {
        String value = header == null ? null : header.strip();
        if (value == null || value.isEmpty()) return null;
        if (value.chars().allMatch(Character::isDigit)) {
            try {
                return Duration.ofSeconds(Long.parseLong(value));
            } catch (NumberFormatException e) {
                return null;
            }
        }
        try {
            Instant at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            return at.isAfter(now) ? Duration.between(now, at) : Duration.ZERO;
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static boolean mentionsToken(String message) {
        return message != null && message.toLowerCase(java.util.Locale.ROOT).contains("registration token");
    }

    private static String reason(String code, String message) {
        String reason = message == null || message.isBlank() ? code : code + ": " + message;
        return reason.length() > MAX_REASON ? reason.substring(0, MAX_REASON) : reason;
    }

    private static JsonNode errorNode(byte[] body) {
        if (body == null || body.length == 0) return null;
        try {
            JsonNode root = JSON.readTree(body);
            JsonNode error = root == null ? null : root.get("error");
            return error != null && error.isObject() ? error : null;
        } catch (JacksonException e) {
            return null;
        }
    }

    private static String text(JsonNode node, String field) {
        if (node == null) return null;
        JsonNode value = node.get(field);
        return value != null && value.isString() ? value.stringValue() : null;
    }
}
