package dev.pushservice.delivery.fcm;

import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.delivery.http.RetryAfter;
import java.time.Instant;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Turns an FCM v1 error answer into a {@link DeliveryResult}. The FCM error code is taken from
 * {@code error.details[].errorCode} (type {@code google.firebase.fcm.v1.FcmError}) and falls back to
 * {@code error.status}, then to the HTTP status.
 *
 * The detail is that code and FCM's message ({@code UNREGISTERED: Requested entity was not found.}).
 *
 * <ul>
 * <li>{@code UNREGISTERED}: {@code token_unregistered}.</li>
 * <li>{@code INVALID_ARGUMENT} naming the token (a {@code message.token} field violation, or a message about
 *     the registration token): {@code token_invalid}; any other {@code INVALID_ARGUMENT}: {@code payload_invalid}.</li>
 * <li>{@code SENDER_ID_MISMATCH}: {@code sender_mismatch}, the token <em>not</em> invalidated (when the
 *     app's service account is of another Firebase project than all its devices, invalidating would wipe
 *     the whole Android audience over a mistake the app can fix), and the app's other recipients go on:
 *     a token is chosen by whoever registers it with the public key, so one of another project must not
 *     stop every Android send of the app as {@code credentials_invalid} does.</li>
 * <li>{@code THIRD_PARTY_AUTH_ERROR}, {@code UNAUTHENTICATED} (401), {@code PERMISSION_DENIED} (403),
 *     {@code NOT_FOUND} without {@code UNREGISTERED} (wrong project): {@code credentials_invalid}; other 4xx:
 *     {@code provider_rejected}.</li>
 * <li>{@code QUOTA_EXCEEDED} (429): {@code rate_limited}; {@code UNAVAILABLE} (503), {@code INTERNAL} (500),
 *     any 5xx: {@code provider_unavailable}; both transient, with {@code Retry-After} (seconds or an HTTP
 *     date) when given.</li>
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
        String detail = detail(code, message);
        ReasonCode reason = switch (code) {
            case "UNREGISTERED" -> ReasonCode.TOKEN_UNREGISTERED;
            case "INVALID_ARGUMENT" -> tokenViolation || mentionsToken(message)
                    ? ReasonCode.TOKEN_INVALID : ReasonCode.PAYLOAD_INVALID;
            case "QUOTA_EXCEEDED" -> ReasonCode.RATE_LIMITED;
            case "UNAVAILABLE", "INTERNAL" -> ReasonCode.PROVIDER_UNAVAILABLE;
            case "SENDER_ID_MISMATCH" -> ReasonCode.SENDER_MISMATCH;
            case "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND" -> ReasonCode.CREDENTIALS_INVALID;
            default -> status == 429 ? ReasonCode.RATE_LIMITED
                    : status >= 500 ? ReasonCode.PROVIDER_UNAVAILABLE
                    : ReasonCode.PROVIDER_REJECTED;
        };
        return reason.permanent()
                ? new DeliveryResult.Rejected(reason, detail)
                : new DeliveryResult.Failed(reason, detail, RetryAfter.parse(retryAfter, now), status);
    }

    private static boolean mentionsToken(String message) {
        return message != null && message.toLowerCase(java.util.Locale.ROOT).contains("registration token");
    }

    private static String detail(String code, String message) {
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
