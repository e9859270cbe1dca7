package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.TaskDescriptor;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.platform.jobs.DeadLetters;
import dev.pushservice.platform.jobs.PermanentJobFailure;
import dev.pushservice.platform.jobs.RetryPolicy;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Fan-out: turns a due notification's audience snapshot into recipient rows, then hands over to
 * delivery ({@link DeliveryHandoff}). Runs as the durable db-scheduler task {@value #TASK_NAME}
 * (one instance per notification, named by its id), enqueued in the transaction that queues the
 * notification: its creation for an immediate one; for a draft, the transaction of
 * {@link DueDrafts} that finds it due by the application clock.
 *
 * <p>Steps, each its own transaction, each safe to repeat after a crash:
 * <ol>
 *   <li>{@code draft} → {@code queued} (due) → {@code processing}, with their lifecycle facts;</li>
 *   <li>pages of {@value #DEFAULT_PAGE_SIZE} recipients, each one {@code INSERT … SELECT} over the
 *       devices in the order of {@code devices_app_created_idx}, resuming from a cursor stored with
 *       the page ({@code ON CONFLICT DO NOTHING} makes a replayed page harmless); each page checks
 *       the notification is still processing under its row lock, so a cancel stops the fan-out and
 *       no recipient is added after it;</li>
 *   <li>the recipient count is set once, delivery is told, and a notification without recipients
 *       completes at once.</li>
 * </ol>
 * Thread-safe; one execution per notification at a time (db-scheduler picks an instance once).
 */
@Component
public class NotificationFanOut {

    static final String TASK_NAME = "notification-fanout";
    static final TaskDescriptor<Data> TASK = TaskDescriptor.of(TASK_NAME, Data.class);
    static final int DEFAULT_PAGE_SIZE = 5000;
    /** Content that reads the recipient's tags or properties gets them frozen per recipient. */
    private static final Pattern USER_PLACEHOLDER = Pattern.compile("\\{\\{[ \\t]*(tags|properties)\\.");

    private static final Logger log = LoggerFactory.getLogger(NotificationFanOut.class);

    /** Task data: JSON in {@code scheduled_tasks}; add fields, never rename or remove them. */
    public record Data(UUID appId, UUID notificationId) {
    }

    private final NotificationRepository notifications;
    private final NotificationService service;
    private final SegmentService segments;
    private final FilterCompiler compiler;
    private final LifecycleEventRepository lifecycle;
    private final ObjectProvider<DeliveryHandoff> handoff;
    private final TransactionTemplate transactions;
    private final JsonMapper json;
    private final Clock clock;
    private final int pageSize;

    NotificationFanOut(NotificationRepository notifications, NotificationService service, SegmentService segments,
                       FilterCompiler compiler, LifecycleEventRepository lifecycle, ObjectProvider<DeliveryHandoff> handoff,
                       TransactionTemplate transactions, JsonMapper json, Clock clock,
                       @Value("${push.notifications.fanout-page-size:" + DEFAULT_PAGE_SIZE + "}") int pageSize) {
        if (pageSize < 1) throw new IllegalArgumentException("push.notifications.fanout-page-size must be at least 1");
        this.notifications = notifications;
        this.service = service;
        this.segments = segments;
        this.compiler = compiler;
        this.lifecycle = lifecycle;
        this.handoff = handoff;
        this.transactions = transactions;
        this.json = json;
        this.clock = clock;
        this.pageSize = pageSize;
    }

    void run(Data data) {
        UUID app = data.appId();
        UUID id = data.notificationId();
        NotificationRepository.Row row = transactions.execute(status -> start(app, id));
        if (row == null) return;
        DeliveryHandoff delivery = handoff.getIfAvailable(() -> DeliveryHandoff.NONE);
        boolean renderValues = USER_PLACEHOLDER.matcher(json.writeValueAsString(row.content())).find();
        if (row.recipientCount() == null) {
            NotificationRepository.AudienceSql audience = audience(app, row.audience());
            long total = 0;
            while (true) {
                NotificationRepository.PageResult page = transactions.execute(status -> {
                    NotificationRepository.Row current = notifications.lock(app, id).orElse(null);
                    if (current == null || !NotificationService.PROCESSING.equals(current.status())) return null;
                    var result = notifications.insertPage(app, id, audience, current.audienceAt(), current.cursorAt(),
                            current.cursorId(), pageSize, renderValues, clock.instant());
                    if (result.lastAt() != null) notifications.saveCursor(app, id, result.lastAt(), result.lastId());
                    if (result.inserted() > 0) delivery.recipientsAdded(app, id, current.priority(), result.inserted());
                    return result;
                });
                if (page == null) {
                    log.info("Notification {}: fan-out stopped, no longer processing", id);
                    return;
                }
                total += page.inserted();
                if (page.selected() < pageSize) break;
            }
            log.debug("Notification {}: {} recipient(s) inserted by this run", id, total);
        }
        Boolean finished = transactions.execute(status -> {
            NotificationRepository.Row current = notifications.lock(app, id).orElse(null);
            if (current == null || !NotificationService.PROCESSING.equals(current.status())) return false;
            var count = notifications.setRecipientCount(app, id, clock.instant());
            if (count.isEmpty()) return false; // a previous run finished materializing
            log.info("Notification {}: {} recipient(s) materialized", id, count.get());
            if (count.get() == 0) service.finishIfDone(app, id);
            delivery.materialized(app, id, current.priority(), count.get());
            return true;
        });
        if (Boolean.TRUE.equals(finished)) log.debug("Notification {}: handed over to delivery", id);
    }

    /** Moves the notification to processing; null when there is nothing to do (cancelled, terminal, gone). */
    private NotificationRepository.Row start(UUID app, UUID id) {
        NotificationRepository.Row row = notifications.lock(app, id).orElse(null);
        if (row == null || row.terminal()) return null;
        Instant now = clock.instant();
        if (NotificationService.DRAFT.equals(row.status())) {
            notifications.setStatus(app, id, NotificationService.QUEUED, "queued_at", now);
            lifecycle.record(app, Kind.NOTIFICATION_QUEUED, id, Map.of("notification_id", id), now);
            log.info("Notification {} due: queued", id);
        }
        if (!NotificationService.PROCESSING.equals(row.status())) {
            notifications.setStatus(app, id, NotificationService.PROCESSING, "processing_at", now);
            lifecycle.record(app, Kind.NOTIFICATION_PROCESSING, id, Map.of("notification_id", id), now);
            log.info("Notification {} processing: materializing recipients", id);
        }
        return notifications.find(app, id).orElseThrow();
    }

    /**
     * The audience as SQL over {@code devices d}: target ∩ (any included segment, when given) −
     * every excluded segment, each segment at the version snapshotted at creation.
     */
    NotificationRepository.AudienceSql audience(UUID app, JsonNode audience) {
        StringBuilder joins = new StringBuilder();
        List<String> predicates = new ArrayList<>();
        Map<String, Object> params = new LinkedHashMap<>();
        JsonNode target = audience.path("target");
        switch (target.path("type").stringValue()) {
            case "all" -> {
            }
            case "device" -> {
                predicates.add("d.id = :t_device");
                params.put("t_device", UUID.fromString(target.path("device_id").stringValue()));
            }
            case "user" -> {
                predicates.add("d.user_id in (select u.id from users u where u.app_id = :app and u.external_user_id = :t_user)");
                params.put("t_user", target.path("external_user_id").stringValue());
            }
            case "tag" -> {
                predicates.add("d.user_id in (select u.id from users u where u.app_id = :app and u.tags @> cast(:t_tag as jsonb))");
                params.put("t_tag", json.writeValueAsString(Map.of(target.path("key").stringValue(), target.path("value").stringValue())));
            }
            case "segment" -> {
                FilterCompiler.Compiled c = compiler.compile(app, version(app, audience.path("segment")).filter(), "ts");
                joins.append(' ').append(c.joins());
                predicates.add("(" + c.predicate() + ")");
                params.putAll(c.params());
            }
            default -> throw new PermanentJobFailure("unknown target type in notification audience");
        }
        List<String> included = new ArrayList<>();
        int i = 0;
        for (JsonNode s : audience.path("included")) {
            FilterCompiler.Compiled c = compiler.compile(app, version(app, s).filter(), "inc" + i++);
            joins.append(' ').append(c.joins());
            included.add("(" + c.predicate() + ")");
            params.putAll(c.params());
        }
        if (!included.isEmpty()) predicates.add("coalesce(" + String.join(" or ", included) + ", false)");
        i = 0;
        for (JsonNode s : audience.path("excluded")) {
            FilterCompiler.Compiled c = compiler.compile(app, version(app, s).filter(), "exc" + i++);
            // inside the subquery "d" is its own devices row: the set of excluded devices, hashed once
            predicates.add("d.id not in (select d.id from devices d " + c.joins()
                    + " where d.app_id = :app and (" + c.predicate() + "))");
            params.putAll(c.params());
        }
        return new NotificationRepository.AudienceSql(joins.toString(),
                predicates.isEmpty() ? "true" : String.join(" and ", predicates), params);
    }

    private SegmentVersion version(UUID app, JsonNode ref) {
        UUID segmentId = UUID.fromString(ref.path("segment_id").stringValue());
        int version = ref.path("version").intValue();
        return segments.version(app, segmentId, version).orElseThrow(() ->
                new PermanentJobFailure("segment " + segmentId + " version " + version + " of the audience snapshot is missing"));
    }

    /** The fan-out task: retried with backoff (a database hiccup), then dead-lettered. */
    @Configuration(proxyBeanMethods = false)
    static class FanOutTaskConfiguration {

        @Bean
        Task<Data> notificationFanOutTask(NotificationFanOut fanOut, DeadLetters deadLetters) {
            return Tasks.oneTime(TASK)
                    .onFailure(deadLetters.handler(new RetryPolicy(8, Duration.ofSeconds(1), Duration.ofMinutes(5))))
                    .execute((instance, context) -> fanOut.run(instance.getData()));
        }
    }
}
