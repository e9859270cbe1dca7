package dev.pushservice.notifications;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;

/**
 * What the dashboard's notification pages need from this feature, on the code the API runs: a
 * creation body goes through {@link NotificationRequest#read} and {@link NotificationService#create}
 * exactly as {@code POST /v1/notifications} sends it (same checks, same 422s, nothing stored on a
 * refusal), a preview through {@link NotificationPreviews}, cancel through
 * {@link NotificationStates#cancel}; the report's figures come from {@link NotificationReportRepository},
 * one set-based statement per family of figures, so a page costs the same number of statements for any
 * audience. Thread-safe.
 */
@Service
public class NotificationPages {

    /** Recipient states that ended without a provider's acceptance and without a failure: left out on purpose. */
    public static final Set<String> SKIPPED_STATES = Set.of("cancelled", "skipped_frequency_cap");
    /** Recipient states counted as failed (as {@link NotificationView#failedCount} counts them). */
    public static final Set<String> FAILED_STATES = Set.of("failed", "invalid_token", "expired");
    /** The platforms in the order pages show them. */
    public static final List<String> PLATFORMS = List.of("ios", "android", "web");
    /** Most points a timeline chart series gets: wider sends are bucketed by several seconds. */
    static final int MAX_POINTS = 600;

    private final NotificationService service;
    private final NotificationViews views;
    private final NotificationStates states;
    private final NotificationPreviews previews;
    private final NotificationReportRepository reports;
    private final Clock clock;

    NotificationPages(NotificationService service, NotificationViews views, NotificationStates states,
                      NotificationPreviews previews, NotificationReportRepository reports, Clock clock) {
        this.service = service;
        this.views = views;
        this.states = states;
        this.previews = previews;
        this.reports = reports;
        this.clock = clock;
    }

    /** The notification as {@code GET /v1/notifications/{id}} shows it. @throws NotFound unknown or another app's */
    public NotificationView get(UUID appId, UUID id) {
        return views.get(appId, id);
    }

    /**
     * Creates the notification {@code body} describes (the JSON {@code POST /v1/notifications} takes)
     * under {@code idempotencyKey}, as the API does.
     *
     * @throws InvalidInput what the API would answer 422 for; nothing is stored then
     */
    public Created create(UUID appId, String idempotencyKey, JsonNode body) {
        JsonInput in = JsonInput.object(body);
        NotificationRequest request = NotificationRequest.read(in, clock.instant());
        in.check();
        NotificationView.Created created = service.create(appId, idempotencyKey, request);
        return new Created(created.notificationId(), created.status(), created.scheduledAt(), created.idempotentReplay());
    }

    /** @param replay true when the key had created this notification before (the same body was sent twice) */
    public record Created(UUID notificationId, String status, Instant scheduledAt, boolean replay) {
    }

    /**
     * What creation would refuse in {@code body} (the field checks, then, for a well-formed body,
     * the checks against the app's data), without creating anything; empty when it would be accepted.
     */
    @Transactional(readOnly = true)
    public List<Violation> problems(UUID appId, JsonNode body) {
        JsonInput in = JsonInput.object(body);
        NotificationRequest request = NotificationRequest.read(in, clock.instant());
        try {
            if (in.hasErrors()) in.check();
            else service.prepare(appId, request, List.of());
        } catch (InvalidInput e) {
            return e.violations();
        }
        return List.of();
    }

    /** The preview of {@code POST /v1/notifications/preview} for {@code body}. @throws InvalidInput as the API would */
    public PreviewView preview(UUID appId, JsonNode body) {
        JsonInput in = JsonInput.object(body);
        NotificationRequest request = NotificationRequest.read(in, clock.instant());
        in.check();
        return previews.preview(appId, request, null);
    }

    /** Cancels as {@code POST /v1/notifications/{id}/cancel} does. @throws InvalidInput already terminal */
    public NotificationView cancel(UUID appId, UUID id) {
        return states.cancel(appId, id);
    }

    // --- the report --------------------------------------------------------------------------------

    /**
     * Per platform: recipients (the audience materialized), accepted, failed and skipped, and the
     * engagement events of its recipients.
     *
     * @param engaged devices with an {@code opened} or {@code clicked} event
     */
    public record PlatformFigures(String platform, long recipients, long accepted, long failed, long skipped, long pending,
                                  long received, long confirmed, long opened, long clicked, long engaged) {

        /** Engaged devices per accepted recipient, in percent; null before anything was accepted. */
        public Double ctr() {
            return accepted == 0 ? null : 100.0 * engaged / accepted;
        }
    }

    /** A reason code and how many recipients ended with it, per platform and in total. */
    public record Reason(String status, String reason, long total, Map<String, Long> platforms) {
    }

    /**
     * @param total every platform together
     * @param platforms ios, android, web, then any other the data holds (events of devices that were no recipient: "unknown")
     * @param failures failed recipients by state and reason code, most first
     * @param skipped skipped recipients (cancelled, frequency cap) by state and reason, most first
     * @param acceptedTimeline [bucket start (epoch seconds), accepted per second in that bucket]
     * @param bucketSeconds the width of an accepted-timeline bucket
     * @param opensTimeline [hour (epoch seconds), opened, clicked]
     */
    public record Report(PlatformFigures total, List<PlatformFigures> platforms, List<Reason> failures, List<Reason> skipped,
                         List<double[]> acceptedTimeline, long bucketSeconds, List<long[]> opensTimeline) {
    }

    /**
     * The report page's figures: four statements whatever the audience's size. A finished
     * notification's recipient figures are read as stored when it finished (one keyed read), a running
     * one's from the counts the database keeps (never a read of each recipient row); engagement is
     * always live.
     */
    @Transactional(readOnly = true)
    public Report report(UUID appId, NotificationView n) {
        UUID id = n.notificationId();
        Map<String, long[]> figures = new TreeMap<>((a, b) -> rank(a) - rank(b) != 0 ? rank(a) - rank(b) : a.compareTo(b));
        PLATFORMS.forEach(p -> figures.put(p, new long[10]));
        Map<String, Reason> failures = new LinkedHashMap<>();
        Map<String, Reason> skipped = new LinkedHashMap<>();
        // a finished notification's recipient figures were stored when it finished (V39); one still
        // going (or cancelled with recipients in flight) is read from its counts (V46), the figures the
        // finishing stores; only one finished before V39 stored them is read from its recipient rows
        NotificationReportRepository.Stored stored = n.finishedAt() != null ? reports.stored(appId, id) : null;
        long bucket;
        NotificationReportRepository.Outcomes outcomes;
        if (stored != null) {
            bucket = stored.bucket();
            outcomes = stored.outcomes();
        } else {
            bucket = bucket(n.processingAt() != null ? n.processingAt() : n.createdAt(),
                    n.finishedAt() != null ? n.finishedAt() : clock.instant());
            outcomes = reports.counted(appId, id, bucket);
            if (outcomes == null) {
                outcomes = n.finishedAt() != null ? reports.outcomes(appId, id, bucket)
                        : new NotificationReportRepository.Outcomes(List.of(), List.of());
            }
        }
        for (NotificationReportRepository.Outcome o : outcomes.outcomes()) {
            long[] f = figures.computeIfAbsent(o.platform(), k -> new long[10]);
            f[0] += o.count();
            if ("accepted".equals(o.status())) f[1] += o.count();
            else if (FAILED_STATES.contains(o.status())) f[2] += o.count();
            else if (SKIPPED_STATES.contains(o.status())) f[3] += o.count();
            else f[4] += o.count();
            Map<String, Reason> into = FAILED_STATES.contains(o.status()) ? failures : SKIPPED_STATES.contains(o.status()) ? skipped : null;
            if (into != null) {
                String reason = o.reason() == null ? o.status() : o.reason();
                Reason r = into.computeIfAbsent(o.status() + "/" + reason, k -> new Reason(o.status(), reason, 0, new LinkedHashMap<>()));
                r.platforms().merge(o.platform(), o.count(), Long::sum);
                into.put(o.status() + "/" + reason, new Reason(r.status(), r.reason(), r.total() + o.count(), r.platforms()));
            }
        }
        for (NotificationReportRepository.Engagement e : reports.engagement(appId, id)) {
            long[] f = figures.computeIfAbsent(e.platform(), k -> new long[10]);
            if (e.eventType() == null) {
                f[9] += e.engagedDevices();
                continue;
            }
            switch (e.eventType()) {
                case "received" -> f[5] += e.count();
                case "confirmed_delivered", "delivered" -> f[6] += e.count();
                case "opened" -> f[7] += e.count();
                case "clicked" -> f[8] += e.count();
                default -> {
                }
            }
        }
        List<PlatformFigures> platforms = new ArrayList<>();
        long[] sum = new long[10];
        figures.forEach((p, f) -> {
            platforms.add(figures(p, f));
            for (int i = 0; i < f.length; i++) sum[i] += f[i];
        });

        List<double[]> accepted = outcomes.accepted().stream()
                .map(b -> new double[] {b[0], (double) b[1] / bucket}).toList();
        List<long[]> opens = reports.opensPerHour(appId, id);
        return new Report(figures("all", sum), platforms, sorted(failures), sorted(skipped), accepted, bucket, opens);
    }

    /** The accepted-timeline bucket width (seconds) of a send from {@code start} to {@code end}: at most {@link #MAX_POINTS} buckets. */
    static long bucket(Instant start, Instant end) {
        long span = Math.max(1, Duration.between(start, end).toSeconds() + 1);
        return Math.max(1, (span + MAX_POINTS - 1) / MAX_POINTS);
    }

    private static PlatformFigures figures(String platform, long[] f) {
        return new PlatformFigures(platform, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]);
    }

    private static int rank(String platform) {
        int i = PLATFORMS.indexOf(platform);
        return i < 0 ? PLATFORMS.size() : i;
    }

    private static List<Reason> sorted(Map<String, Reason> reasons) {
        return reasons.values().stream().sorted((a, b) -> Long.compare(b.total(), a.total())).toList();
    }

    // --- one recipient -----------------------------------------------------------------------------

    /**
     * What is stored about one device's delivery of a notification, its last attempt included:
     * {@code attempts} counts them, {@code lastError} is the last answer's reason code (null after an
     * acceptance), {@code updatedAt} when the last one was recorded. The attempts before it that did not
     * end the recipient are {@link RecipientAttempt}s.
     */
    public record RecipientState(UUID deviceId, String platform, String externalUserId, String status, int attempts,
                                 String lastError, String providerMessageId, Instant dueAt, Instant updatedAt, Instant expiresAt) {
    }

    /**
     * An attempt that did not end its recipient ({@code delivery_attempts}): {@code outcome} {@code retry}
     * (sent, failed transiently) or {@code deferred} (not sent: its provider's circuit was open, for an
     * outage or a rate limit); {@code reason} a reason code; {@code httpStatus} the provider's, when known.
     */
    public record RecipientAttempt(UUID deviceId, int attempt, Instant at, String outcome, String reason, Integer httpStatus) {
    }

    /** An engagement event of a recipient for this notification. */
    public record RecipientEvent(UUID deviceId, String eventType, String eventName, Instant occurredAt, Instant receivedAt) {
    }

    /**
     * @param recipients the device's row, or the user's devices' rows (at most {@link NotificationReportRepository#RECIPIENT_LIMIT})
     * @param attempts their attempts before the last, oldest first (at most {@link NotificationReportRepository#ATTEMPT_LIMIT})
     */
    public record RecipientTimeline(List<RecipientState> recipients, List<RecipientAttempt> attempts, List<RecipientEvent> events) {
    }

    /**
     * The recipient rows of a device, or of a user's devices (by {@code external_user_id}, as the
     * recipients were made or as the user's devices are now), their earlier attempts, and their events
     * for this notification. Four statements whatever the audience's size.
     *
     * @throws NotFound the notification is unknown or another app's
     */
    @Transactional(readOnly = true)
    public RecipientTimeline recipient(UUID appId, UUID id, UUID deviceId, String externalUserId) {
        if (!service.exists(appId, id)) throw new NotFound("Notification");
        if (deviceId == null && (externalUserId == null || externalUserId.isBlank())) {
            throw new InvalidInput(List.of(new Violation("device", "give a device id or a user's external_user_id")));
        }
        List<RecipientState> rows = reports.recipients(appId, id, deviceId, deviceId == null ? externalUserId : null);
        List<UUID> devices = rows.stream().map(RecipientState::deviceId).toList();
        List<RecipientAttempt> attempts = devices.isEmpty() ? List.of() : reports.recipientAttempts(appId, id, devices);
        List<RecipientEvent> events = devices.isEmpty() ? List.of() : reports.recipientEvents(appId, id, devices);
        return new RecipientTimeline(rows, attempts, events);
    }
}
