package dev.pushservice.delivery.apns;

import com.eatthepath.pushy.apns.DeliveryPriority;
import com.eatthepath.pushy.apns.PushType;
import com.eatthepath.pushy.apns.util.SimpleApnsPushNotification;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.ProviderPreview;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ReasonCode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Maps a {@link PushMessage} to an APNs request: headers ({@code apns-push-type},
 * {@code apns-priority}, {@code apns-expiration}, {@code apns-collapse-id}, {@code apns-topic})
 * and the JSON payload. Stateless and thread-safe.
 *
 * <ul>
 *   <li>Background push ({@code content_available} with neither title nor body): push type
 *       {@code background}, priority 5, {@code aps} holds only {@code content-available: 1} (APNs
 *       refuses or throttles a background push with an alert, sound or badge, or at priority 10).</li>
 *   <li>Alert push: priority 10, except 5 for the {@code bulk} queue and for {@code passive}
 *       notifications; {@code time_sensitive} and {@code critical} are always 10.</li>
 *   <li>{@code aps}: {@code alert {title, body}}, {@code sound} (none for {@code passive}; the
 *       dictionary {@code {"critical":1,"name":…,"volume":1.0}} for {@code critical}), {@code badge},
 *       {@code category}, {@code mutable-content: 1} when there is an image, {@code content-available: 1}
 *       when requested beside visible content, and {@code interruption-level} for every level but
 *       {@code active} (APNs' own default, so a message without a level goes out exactly as before).</li>
 *   <li>Beside {@code aps}: every {@code data} key (except {@code aps}, which cannot be overridden),
 *       then {@code click_url}, {@code image_url} (for a notification service extension to download)
 *       and {@code actions} (iOS shows buttons only for a category the app registered, so actions are
 *       data for the app; {@code category} selects the registered set). These three win over a
 *       {@code data} key of the same name.</li>
 *   <li>{@code platform_overrides.ios} (shape: {@link dev.pushservice.delivery.PlatformOverrides}, checked at
 *       creation): {@code subtitle} into the alert, {@code sound}, {@code badge}, {@code category} over the
 *       common fields, {@code thread_id}, {@code target_content_id}, {@code relevance_score}, and
 *       {@code mutable_content} over the image's default.</li>
 * </ul>
 */
public final class ApnsPayload {

    /** APNs' limit for every push type this service sends. */
    public static final int MAX_PAYLOAD_BYTES = 4096;

    /** Expiration when a message has no TTL: 28 days, the spec's maximum {@code ttl} and FCM's default. */
    public static final int DEFAULT_TTL_SECONDS = 2_419_200;

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final int MAX_TOKEN_LENGTH = 200;

    private ApnsPayload() {
    }

    /** A message that can never be sent as it is: a permanent rejection, decided before sending. */
    static final class Unsendable extends Exception {
        final ReasonCode reason;
        final String detail;

        Unsendable(ReasonCode reason, String detail) {
            super(detail, null, false, false);
            this.reason = reason;
            this.detail = detail;
        }
    }

    static SimpleApnsPushNotification build(PushMessage message, String topic, Instant now) throws Unsendable {
        String token = message.token();
        if (!isDeviceToken(token)) {
            // Never reaches APNs: the token is not even hexadecimal, so it can never become valid
            throw new Unsendable(ReasonCode.TOKEN_INVALID, "not a hexadecimal APNs device token");
        }
        boolean background = message.background();
        Inputs inputs = new Inputs(message);
        Memo memo = last;
        String payload;
        if (memo != null && memo.inputs().equals(inputs)) {
            payload = memo.payload(); // built (and found valid) for the same inputs
        } else {
            payload = payload(message, background);
            last = new Memo(inputs, payload);
        }
        return new Redacted(token, topic, payload, expiration(message.ttlSeconds(), now), priority(message, background),
                background ? PushType.BACKGROUND : PushType.ALERT, message.collapseId());
    }

    /**
     * Everything of a message its JSON payload is built from: the payload is a function of these alone
     * (the token, the TTL and the collapse id go into headers).
     */
    private record Inputs(String title, String body, String imageUrl, String clickUrl, Map<String, Object> data,
                          String sound, Integer badge, String category, List<PushMessage.Action> actions,
                          boolean contentAvailable, ObjectNode platformOverrides, InterruptionLevel level) {

        Inputs(PushMessage m) {
            this(m.title(), m.body(), m.imageUrl(), m.clickUrl(), m.data(), m.sound(), m.badge(), m.category(),
                    m.actions(), m.contentAvailable(), m.platformOverrides(), m.interruptionLevel());
        }
    }

    private record Memo(Inputs inputs, String payload) {
    }

    /**
     * The last payload built, with its inputs. The messages of a send differ by their token alone
     * unless the content has per-recipient placeholders, so consecutive messages mostly share their
     * payload: building it again was ~6% of the service's CPU in a 100,000-recipient iOS send. Shared
     * by every thread; a race only replaces one valid entry with another.
     */
    private static volatile Memo last;

    private static String payload(PushMessage message, boolean background) throws Unsendable {
        ObjectNode ios = iosOverrides(message);
        ObjectNode root = NODES.objectNode();
        ObjectNode aps = root.putObject("aps");
        if (background) {
            aps.put("content-available", 1);
        } else {
            alertFields(message, ios, aps);
        }
        message.data().forEach((key, value) -> {
            if (!"aps".equals(key)) root.set(key, value instanceof JsonNode node ? node : JSON.valueToTree(value));
        });
        if (message.clickUrl() != null) root.put("click_url", message.clickUrl());
        if (message.imageUrl() != null) root.put("image_url", message.imageUrl());
        if (!message.actions().isEmpty()) {
            ArrayNode actions = root.putArray("actions");
            for (PushMessage.Action action : message.actions()) {
                ObjectNode a = actions.addObject().put("id", action.id()).put("text", action.text());
                if (action.icon() != null) a.put("icon", action.icon());
            }
        }

        byte[] payload = JSON.writeValueAsBytes(root);
        if (payload.length > MAX_PAYLOAD_BYTES) {
            throw new Unsendable(ReasonCode.PAYLOAD_TOO_LARGE, payload.length + " bytes, APNs allows " + MAX_PAYLOAD_BYTES);
        }
        return new String(payload, StandardCharsets.UTF_8);
    }

    /**
     * 1 to 200 hexadecimal digits. A loop, not a regular expression: it runs for every message, and the
     * {@code Pattern} it replaces was 6% of the service's CPU in a 100,000-recipient iOS send.
     */
    static boolean isDeviceToken(String token) {
        if (token == null || token.isEmpty() || token.length() > MAX_TOKEN_LENGTH) return false;
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) return false;
        }
        return true;
    }

    /**
     * The request {@code notification} makes, as a preview: the {@code apns-*} headers Pushy sends
     * for it ({@code apns-expiration} in epoch seconds, 0 for "now or never"; {@code apns-topic} only
     * when the app has credentials) and the JSON payload; the device token is left out.
     */
    static ProviderPreview.Request preview(SimpleApnsPushNotification notification) {
        Map<String, String> headers = new java.util.LinkedHashMap<>();
        headers.put("apns-push-type", notification.getPushType().getHeaderValue());
        headers.put("apns-priority", Integer.toString(notification.getPriority().getCode()));
        headers.put("apns-expiration", Long.toString(notification.getExpiration() == null ? 0
                : notification.getExpiration().getEpochSecond()));
        if (notification.getCollapseId() != null) headers.put("apns-collapse-id", notification.getCollapseId());
        if (!notification.getTopic().isEmpty()) headers.put("apns-topic", notification.getTopic());
        return new ProviderPreview.Request(headers, JSON.readTree(notification.getPayload()));
    }

    /**
     * Pushy's notification, minus the device token and payload in {@code toString()}: Pushy logs
     * notifications (and exceptions carry them), and a token or user content must never reach a log.
     */
    static final class Redacted extends SimpleApnsPushNotification {
        Redacted(String token, String topic, String payload, Instant expiration, DeliveryPriority priority,
                 PushType pushType, String collapseId) {
            super(token, topic, payload, expiration, priority, pushType, collapseId);
        }

        @Override
        public String toString() {
            return "ApnsPushNotification[topic=" + getTopic() + ", pushType=" + getPushType()
                    + ", priority=" + getPriority() + ", payloadChars=" + getPayload().length() + "]";
        }
    }

    static DeliveryPriority priority(PushMessage message, boolean background) {
        if (background) return DeliveryPriority.CONSERVE_POWER;
        return switch (message.interruptionLevel()) {
            case TIME_SENSITIVE, CRITICAL -> DeliveryPriority.IMMEDIATE;
            case PASSIVE -> DeliveryPriority.CONSERVE_POWER;
            case ACTIVE -> message.priority() == Priority.BULK
                    ? DeliveryPriority.CONSERVE_POWER : DeliveryPriority.IMMEDIATE;
        };
    }

    /**
     * 0: deliver now or never ({@code apns-expiration: 0}). No TTL: {@link #DEFAULT_TTL_SECONDS}, as
     * FCM does; APNs reads a missing header as 0, which would drop every push to an offline device.
     */
    private static Instant expiration(Integer ttlSeconds, Instant now) {
        if (ttlSeconds == null) return now.plusSeconds(DEFAULT_TTL_SECONDS);
        if (ttlSeconds == 0) return Instant.EPOCH;
        return now.plusSeconds(ttlSeconds);
    }

    private static void alertFields(PushMessage message, ObjectNode ios, ObjectNode aps) throws Unsendable {
        ObjectNode alert = NODES.objectNode();
        if (message.title() != null) alert.put("title", message.title());
        String subtitle = text(ios, "subtitle");
        if (subtitle != null) alert.put("subtitle", subtitle);
        if (message.body() != null) alert.put("body", message.body());
        if (!alert.isEmpty()) aps.set("alert", alert);

        InterruptionLevel level = message.interruptionLevel();
        String sound = firstNonNull(text(ios, "sound"), message.sound());
        if (level == InterruptionLevel.CRITICAL) {
            aps.putObject("sound").put("critical", 1).put("name", sound == null ? "default" : sound).put("volume", 1.0);
        } else if (level != InterruptionLevel.PASSIVE && sound != null) {
            aps.put("sound", sound);
        }

        Integer badge = message.badge();
        if (ios != null && ios.has("badge")) {
            JsonNode b = ios.get("badge");
            if (!b.isIntegralNumber() || !b.canConvertToInt() || b.intValue() < 0) {
                throw new Unsendable(ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios.badge must be an integer >= 0");
            }
            badge = b.intValue();
        }
        if (badge != null) aps.put("badge", badge);

        String category = firstNonNull(text(ios, "category"), message.category());
        if (category != null) aps.put("category", category);
        String thread = text(ios, "thread_id");
        if (thread != null) aps.put("thread-id", thread);
        String target = text(ios, "target_content_id");
        if (target != null) aps.put("target-content-id", target);

        boolean mutable = message.imageUrl() != null;
        if (ios != null && ios.has("mutable_content")) {
            if (!ios.get("mutable_content").isBoolean()) {
                throw new Unsendable(ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios.mutable_content must be true or false");
            }
            mutable = ios.get("mutable_content").booleanValue();
        }
        if (mutable) aps.put("mutable-content", 1);
        if (message.contentAvailable()) aps.put("content-available", 1);

        if (level != InterruptionLevel.ACTIVE) aps.put("interruption-level", apnsLevel(level));
        if (ios != null && ios.has("relevance_score")) {
            JsonNode score = ios.get("relevance_score");
            if (!score.isNumber() || score.doubleValue() < 0 || score.doubleValue() > 1) {
                throw new Unsendable(ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios.relevance_score must be a number between 0 and 1");
            }
            aps.put("relevance-score", score.doubleValue());
        }
    }

    private static String apnsLevel(InterruptionLevel level) {
        return switch (level) {
            case PASSIVE -> "passive";
            case ACTIVE -> "active";
            case TIME_SENSITIVE -> "time-sensitive";
            case CRITICAL -> "critical";
        };
    }

    private static ObjectNode iosOverrides(PushMessage message) throws Unsendable {
        ObjectNode overrides = message.platformOverrides();
        if (overrides == null || !overrides.has("ios") || overrides.get("ios").isNull()) return null;
        if (!(overrides.get("ios") instanceof ObjectNode ios)) {
            throw new Unsendable(ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios must be an object");
        }
        for (Map.Entry<String, JsonNode> field : ios.properties()) {
            boolean textField = switch (field.getKey()) {
                case "subtitle", "sound", "category", "thread_id", "target_content_id" -> true;
                default -> false;
            };
            if (textField && !field.getValue().isString() && !field.getValue().isNull()) {
                throw new Unsendable(ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios." + field.getKey() + " must be a string");
            }
        }
        return ios;
    }

    private static String text(ObjectNode ios, String field) {
        if (ios == null) return null;
        JsonNode value = ios.get(field);
        return value == null || value.isNull() ? null : value.stringValue();
    }

    private static String firstNonNull(String a, String b) {
        return a != null ? a : b;
    }
}
