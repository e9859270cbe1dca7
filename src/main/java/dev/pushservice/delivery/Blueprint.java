package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Locales;
import dev.pushservice.templates.CompiledContent;
import dev.pushservice.templates.RenderedContent;
import dev.pushservice.templates.Renderer;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What every recipient of one notification is sent, before placeholders: the snapshot taken at
 * creation, with its content (and each localization's) compiled once. {@link #message} chooses the
 * recipient's localization and renders it for that recipient; the
 * per-platform presentation of {@code priority} and {@code interruptionLevel} (the spec's
 * interruption-level table) is each provider's payload builder's job. Immutable and thread-safe.
 *
 * @param content compiled title, body, click URL and data
 * @param templateData the notification's {@code template_data}, for {@code {{ template.* }}}; may be null
 * @param ttlSeconds the notification's TTL, or null for the provider's default
 * @param expiresAt when the TTL runs out (the instant the notification became due plus TTL, or plus
 *                  {@link #DEFAULT_TTL} for a notification without one: how long an outage is retried), or null;
 *                  a recipient's own expiry ({@link DeliveryStore.Claimed#expiresAt()}) comes first
 * @param localizations the content per locale ({@link Locales#normalize normalized} keys), each already
 *                      complete (a partial variant filled from its shorter locale and the default); empty
 *                      when there are none
 */
public record Blueprint(
        UUID notificationId,
        UUID appId,
        Priority priority,
        InterruptionLevel interruptionLevel,
        CompiledContent content,
        JsonNode templateData,
        String imageUrl,
        Integer ttlSeconds,
        Instant expiresAt,
        String collapseId,
        String sound,
        Integer badge,
        String category,
        List<PushMessage.Action> actions,
        boolean contentAvailable,
        ObjectNode platformOverrides,
        Map<String, Localized> localizations) {

    /**
     * How long a notification without a TTL of its own is retried through a provider outage: 28 days,
     * the spec's largest TTL and FCM's default. Its messages carry no TTL (each provider's default).
     */
    public static final java.time.Duration DEFAULT_TTL = java.time.Duration.ofDays(28);

    public Blueprint {
        if (priority == null) priority = Priority.NORMAL;
        if (interruptionLevel == null) interruptionLevel = InterruptionLevel.ACTIVE;
        actions = actions == null ? List.of() : List.copyOf(actions);
        localizations = localizations == null ? Map.of() : Map.copyOf(localizations);
    }

    /** A blueprint without localizations: every recipient gets {@code content}. */
    public Blueprint(UUID notificationId, UUID appId, Priority priority, InterruptionLevel interruptionLevel,
                     CompiledContent content, JsonNode templateData, String imageUrl, Integer ttlSeconds,
                     Instant expiresAt, String collapseId, String sound, Integer badge, String category,
                     List<PushMessage.Action> actions, boolean contentAvailable, ObjectNode platformOverrides) {
        this(notificationId, appId, priority, interruptionLevel, content, templateData, imageUrl, ttlSeconds, expiresAt,
                collapseId, sound, badge, category, actions, contentAvailable, platformOverrides, Map.of());
    }

    /**
     * The content of one localization, complete: what a recipient whose locale chose it is sent
     * instead of the default title, body, click URL and image.
     *
     * @param locale the key as the request spelled it (for previews and logs)
     */
    public record Localized(String locale, CompiledContent content, String imageUrl) {
    }

    /**
     * The localization {@code recipient} gets: the first of its locales' {@link Locales#lookupOrder
     * lookup order} that the notification has, or null for the default content.
     */
    public Localized localizationFor(DeliveryStore.Claimed recipient) {
        if (localizations.isEmpty() || recipient.locales().isEmpty()) return null;
        for (String locale : Locales.lookupOrder(recipient.locales().toArray(String[]::new))) {
            Localized found = localizations.get(locale);
            if (found != null) return found;
        }
        return null;
    }

    /**
     * The message for {@code recipient} at {@code now}. It carries only the TTL left, so a provider
     * never holds a push past the recipient's expiry (a retry, a held or throttled recipient).
     */
    public PushMessage message(DeliveryStore.Claimed recipient, Instant now) {
        Renderer.Values values = recipient.values() == null ? Renderer.Values.NONE : recipient.values();
        if (templateData != null && values.templateData() == null) {
            values = new Renderer.Values(values.externalUserId(), values.tags(), values.properties(), templateData);
        }
        Localized localized = localizationFor(recipient);
        RenderedContent rendered = Renderer.render(localized == null ? content : localized.content(), values);
        return new PushMessage(appId, notificationId, recipient.deviceId(), recipient.platform(), recipient.token(),
                rendered.title(), rendered.body(), localized == null ? imageUrl : localized.imageUrl(),
                rendered.clickUrl(), data(rendered.data()),
                remainingTtl(now, expiresAt(recipient)), collapseId, sound, badge, category, actions, contentAvailable, platformOverrides,
                priority, interruptionLevel);
    }

    /** When {@code recipient}'s TTL runs out: its own expiry when it has one, else the notification's. */
    public Instant expiresAt(DeliveryStore.Claimed recipient) {
        return recipient.expiresAt() != null ? recipient.expiresAt() : expiresAt;
    }

    Integer remainingTtl(Instant now) {
        return remainingTtl(now, expiresAt);
    }

    private Integer remainingTtl(Instant now, Instant expiresAt) {
        if (ttlSeconds == null || expiresAt == null) return ttlSeconds;
        long left = Duration.between(now, expiresAt).toSeconds();
        return (int) Math.max(0, Math.min(ttlSeconds, left));
    }

    private static Map<String, Object> data(JsonNode data) {
        if (data == null || !data.isObject() || data.isEmpty()) return Map.of();
        Map<String, Object> map = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : data.properties()) {
            JsonNode value = e.getValue();
            map.put(e.getKey(), value.isString() ? value.stringValue() : value);
        }
        return map;
    }
}
