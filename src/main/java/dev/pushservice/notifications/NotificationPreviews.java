package dev.pushservice.notifications;

import dev.pushservice.delivery.Blueprint;
import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.delivery.ProviderPreview;
import dev.pushservice.delivery.PushProviders;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.rules.Platform;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Preview of a notification before it is created ({@code POST /v1/notifications/preview}): the
 * creation body checked by {@link NotificationService#prepare} (the same checks, the same 422s), the
 * audience counted with the fan-out's SQL ({@link NotificationFanOut#audience}), and sample
 * recipients rendered by the {@link Blueprint} delivery builds and each provider's
 * {@link dev.pushservice.delivery.PushProvider#preview}, the code that builds the real request. So a
 * preview cannot drift from what is sent. Writes nothing (a read-only transaction) and sends
 * nothing. Thread-safe.
 */
@Service
class NotificationPreviews {

    private final NotificationService service;
    private final NotificationFanOut fanOut;
    private final NotificationReadRepository notifications;
    private final PushProviders providers;
    private final Clock clock;

    NotificationPreviews(NotificationService service, NotificationFanOut fanOut, NotificationReadRepository notifications,
                         PushProviders providers, Clock clock) {
        this.service = service;
        this.fanOut = fanOut;
        this.notifications = notifications;
        this.providers = providers;
        this.clock = clock;
    }

    /**
     * Previews {@code request} for the app's audience now, rendered for {@code deviceId} when given,
     * else for a sample recipient per platform.
     *
     * @throws dev.pushservice.platform.domain.InvalidInput what creation would refuse, and a
     *         {@code device_id} that is not a device of this app
     */
    @Transactional(readOnly = true)
    PreviewView preview(UUID appId, NotificationRequest request, UUID deviceId) {
        List<Violation> problems = new ArrayList<>();
        if (deviceId != null && !notifications.deviceExists(appId, deviceId)) {
            problems.add(new Violation("device_id", "no device with this id exists in this app"));
        }
        NotificationService.Prepared prepared = service.prepare(appId, request, problems);
        Instant now = clock.instant();
        FanOutPageRepository.AudienceSql audience = fanOut.audience(appId, prepared.audience());
        FanOutPageRepository.RenderValues values = fanOut.renderValues(prepared.content());

        Map<String, Long> platforms = new LinkedHashMap<>();
        for (Platform p : Platform.values()) platforms.put(p.value(), 0L);
        platforms.putAll(notifications.audienceCounts(appId, audience));
        long total = platforms.values().stream().mapToLong(Long::longValue).sum();

        List<NotificationReadRepository.Sample> samples = deviceId != null
                ? notifications.sampleDevice(appId, deviceId, audience, values).stream().toList()
                : notifications.sampleRecipients(appId, audience, values).stream()
                        .map(r -> new NotificationReadRepository.Sample(r, true)).toList();
        Blueprint blueprint = RecipientDelivery.blueprint(null, appId, prepared.priority(), prepared.interruptionLevel(),
                prepared.content(), prepared.ttl(), now);
        List<PreviewView.Sample> rendered = samples.stream().map(s -> render(blueprint, s, now)).toList();
        return new PreviewView(new PreviewView.Audience(total, platforms), prepared.interruptionLevel(), rendered);
    }

    private PreviewView.Sample render(Blueprint blueprint, NotificationReadRepository.Sample sample, Instant now) {
        DeliveryStore.Claimed recipient = sample.recipient();
        Blueprint.Localized localized = blueprint.localizationFor(recipient);
        ProviderPreview preview = providers.forPlatform(recipient.platform()).preview(blueprint.message(recipient, now));
        PreviewView.ProviderRequest request = null;
        PreviewView.Rejection rejected = null;
        switch (preview) {
            case ProviderPreview.Request r -> request = new PreviewView.ProviderRequest(r.headers(), r.body());
            case ProviderPreview.Refused r -> rejected = new PreviewView.Rejection(r.reason().code(), r.detail());
        }
        return new PreviewView.Sample(recipient.deviceId(), recipient.platform().value(),
                recipient.values() == null ? null : recipient.values().externalUserId(), sample.inAudience(),
                localized == null ? null : localized.locale(), request, rejected);
    }
}
