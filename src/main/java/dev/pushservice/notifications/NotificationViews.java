package dev.pushservice.notifications;

import dev.pushservice.events.EventReads;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * Notifications as the API and the dashboard show them: one, a page of the app's, a page of one's
 * recipients, its lifecycle facts. Counts come from the stored summary of a notification that is
 * final, else from the live counts ({@link NotificationReadRepository#counts}), one statement for a
 * whole page. Writes nothing. Thread-safe.
 */
@Service
public class NotificationViews {

    /** Recipient states, in the order a view shows them. */
    static final List<String> RECIPIENT_STATES =
            List.of("pending", "sending", "accepted", "failed", "invalid_token", "cancelled", "expired", "skipped_frequency_cap");

    private final NotificationRepository notifications;
    private final NotificationReadRepository reads;
    private final EventReads events;

    NotificationViews(NotificationRepository notifications, NotificationReadRepository reads, EventReads events) {
        this.notifications = notifications;
        this.reads = reads;
        this.events = events;
    }

    NotificationView get(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.find(appId, id).orElseThrow(() -> new NotFound("Notification"));
        List<NotificationReadRepository.Count> counts = row.summary() != null ? fromSummary(id, row.summary())
                : reads.counts(appId, List.of(id));
        return view(row, counts);
    }

    public Page<NotificationView> list(UUID appId, PageRequest page) {
        List<NotificationRepository.Row> rows = reads.list(appId, page);
        List<UUID> live = rows.stream().filter(r -> r.summary() == null).map(NotificationRepository.Row::id).toList();
        Map<UUID, List<NotificationReadRepository.Count>> counts = new HashMap<>();
        for (NotificationReadRepository.Count c : reads.counts(appId, live)) {
            counts.computeIfAbsent(c.notificationId(), k -> new ArrayList<>()).add(c);
        }
        List<NotificationView> views = rows.stream()
                .map(r -> view(r, r.summary() != null ? fromSummary(r.id(), r.summary()) : counts.getOrDefault(r.id(), List.of())))
                .toList();
        return Page.of(views, page);
    }

    /**
     * A page of the notification's recipients: by {@code cursor} (null: none) from the position it
     * names, else by {@code page} up to {@link RecipientPage#MAX_OFFSET_ROWS} rows deep. Either way the
     * page says where the next one starts ({@code next_cursor}).
     *
     * @throws InvalidInput a cursor this service did not make, a cursor with a page beyond the first,
     *         or a page deeper than offset paging reads
     */
    RecipientPage recipients(UUID appId, UUID id, PageRequest page, String cursor) {
        NotificationReadRepository.ListPosition after = null;
        if (cursor != null) {
            after = RecipientPage.after(cursor);
            if (after == null) throw InvalidInput.of("cursor", "must be a next_cursor of this list, unchanged");
            if (page.page() > 1) throw InvalidInput.of("page", "give either page or cursor, not both");
        } else if ((long) page.page() * page.limit() > RecipientPage.MAX_OFFSET_ROWS) {
            throw InvalidInput.of("page", "page × limit must be at most " + RecipientPage.MAX_OFFSET_ROWS
                    + "; read deeper pages with cursor (the pagination's next_cursor)");
        }
        if (!notifications.exists(appId, id)) throw new NotFound("Notification");
        List<NotificationReadRepository.Recipient> rows = after != null
                ? reads.recipientsAfter(appId, id, after, page.fetchSize())
                : reads.recipients(appId, id, page);
        boolean more = rows.size() > page.limit();
        if (more) rows = rows.subList(0, page.limit());
        List<NotificationView.RecipientView> data = rows.stream()
                .map(r -> new NotificationView.RecipientView(r.deviceId(), r.platform(), r.externalUserId(), r.status(),
                        r.attempts(), r.lastError(), r.updatedAt(), r.dueAt(), r.expiresAt()))
                .toList();
        String next = more ? RecipientPage.cursor(rows.getLast()) : null;
        return new RecipientPage(data, new RecipientPage.Pagination(page.page(), page.limit(), more, next));
    }

    Page<EventReads.EventView> events(UUID appId, UUID id, PageRequest page) {
        if (!notifications.exists(appId, id)) throw new NotFound("Notification");
        return events.forNotification(appId, id, page);
    }

    private static List<NotificationReadRepository.Count> fromSummary(UUID id, JsonNode summary) {
        List<NotificationReadRepository.Count> counts = new ArrayList<>();
        for (JsonNode c : summary) {
            counts.add(new NotificationReadRepository.Count(id, c.path("platform").stringValue(), c.path("status").stringValue(),
                    c.path("count").longValue()));
        }
        return counts;
    }

    private static NotificationView view(NotificationRepository.Row r, List<NotificationReadRepository.Count> counts) {
        Map<String, Long> byStatus = new LinkedHashMap<>();
        RECIPIENT_STATES.forEach(s -> byStatus.put(s, 0L));
        Map<String, long[]> byPlatform = new LinkedHashMap<>();
        for (String p : List.of("ios", "android", "web")) byPlatform.put(p, new long[3]);
        for (NotificationReadRepository.Count c : counts) {
            byStatus.merge(c.status(), c.count(), Long::sum);
            long[] p = byPlatform.computeIfAbsent(c.platform(), k -> new long[3]);
            p[0] += c.count();
            if (c.status().equals("accepted")) p[1] += c.count();
            if (NotificationPages.FAILED_STATES.contains(c.status())) p[2] += c.count();
        }
        Map<String, NotificationView.PlatformCounts> platforms = new LinkedHashMap<>();
        byPlatform.forEach((k, v) -> platforms.put(k, new NotificationView.PlatformCounts(v[0], v[1], v[2])));
        long failed = NotificationPages.FAILED_STATES.stream().mapToLong(s -> byStatus.getOrDefault(s, 0L)).sum();
        JsonNode audience = r.audience();
        JsonNode target = audience.path("target");
        JsonNode segment = audience.get("segment");
        return new NotificationView(r.id(), r.name(), r.status(), r.priority(), r.interruptionLevel(), target,
                segment == null ? null : refs(JsonNodeFactory.instance.arrayNode().add(segment)).getFirst(),
                refs(audience.path("included")), refs(audience.path("excluded")),
                r.templateId() == null ? null : new NotificationView.TemplateRef(r.templateId(), r.templateVersion()),
                r.content(), r.ttl(), r.localDeliveryTime(), r.frequencyCapOverride(), r.scheduledAt(), r.createdAt(),
                r.queuedAt(), r.processingAt(), r.finishedAt(), r.updatedAt(), r.recipientCount(),
                byStatus.get("accepted"), failed, byStatus, platforms, r.terminal() ? null : r.lastDueAt());
    }

    private static List<NotificationView.SegmentRef> refs(JsonNode list) {
        List<NotificationView.SegmentRef> refs = new ArrayList<>();
        for (JsonNode s : list) {
            refs.add(new NotificationView.SegmentRef(UUID.fromString(s.path("segment_id").stringValue()), s.path("version").intValue()));
        }
        return refs;
    }
}
