package dev.pushservice.journeys;

import dev.pushservice.audit.AuditLog;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.webhooks.WebhookService;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Journeys and their immutable versions: create, list, read, change (every change a new version),
 * archive (cancelling running executions), stats. The form of a definition is checked by
 * {@link JourneyDefinitions}; this service checks what needs the database: a segment trigger names an
 * active segment of the app, a webhook node an existing webhook of the app. After a commit that leaves
 * a journey {@code active} it calls {@link JourneyWakeup#wake()}. Thread-safe.
 *
 * <p>States: created {@code draft} or {@code active}; a PATCH may set {@code draft}, {@code active},
 * {@code paused} or {@code archived}. Draft and paused journeys start no executions and hold their
 * running ones where they are; archiving (PATCH or DELETE) cancels active and waiting executions in
 * the same transaction (with their {@code journey.execution.cancelled} facts); executions cancelled
 * so stay cancelled when a PATCH makes the journey {@code active} again (the spec's state table
 * allows a PATCH from any state).
 */
@Service
public class JourneyService {

    /** Execution statuses, in the order stats list them. */
    public static final List<String> EXECUTION_STATUSES = List.of("active", "waiting", "completed", "cancelled", "failed");

    private final JourneyRepository journeys;
    private final SegmentService segments;
    private final WebhookService webhooks;
    private final AuditLog audit;
    private final JourneyWakeup wakeup;
    private final Clock clock;

    JourneyService(JourneyRepository journeys, SegmentService segments, WebhookService webhooks, AuditLog audit,
                   JourneyWakeup wakeup, Clock clock) {
        this.journeys = journeys;
        this.segments = segments;
        this.webhooks = webhooks;
        this.audit = audit;
        this.wakeup = wakeup;
        this.clock = clock;
    }

    /** A validated create body. {@code reentryLimit} is already clamped. */
    public record Create(String name, String status, int reentryLimit, JourneyDefinition definition) {
    }

    /** A validated PATCH body: null fields keep their current value. */
    public record Patch(String name, String status, Integer reentryLimit, JourneyDefinition definition) {
    }

    /** Creates a journey at version 1; 422 naming the path when the definition refers to what the app lacks. */
    @Transactional
    public JourneyView create(UUID appId, Create in) {
        checkReferences(appId, in.definition());
        UUID id = UUID.randomUUID();
        Instant now = clock.instant();
        journeys.insert(appId, id, new JourneyRepository.Current(in.name(), in.status(), in.reentryLimit(),
                in.definition().trigger(), JourneyDefinitions.toJson(in.definition())), now);
        audit.record(appId, "journey.create", "journey", id, List.of("name", "status", "reentry_limit", "definition"));
        if ("active".equals(in.status())) wakeAfterCommit();
        return get(appId, id);
    }

    public Page<JourneyView.Summary> list(UUID appId, PageRequest page) {
        return Page.of(journeys.list(appId, page), page);
    }

    /** The journey at its current version; 404 when unknown or another app's. */
    public JourneyView get(UUID appId, UUID journeyId) {
        return view(journeys.find(appId, journeyId).orElseThrow(() -> new NotFound("Journey")));
    }

    /**
     * Adds a version from the current one with {@code patch} applied (every call adds one, even when
     * nothing changes), from any state, archived included (spec: "any | PATCH with status"). 404 when
     * unknown or another app's. Archiving cancels the
     * active and waiting executions in the same transaction.
     */
    @Transactional
    public JourneyView update(UUID appId, UUID journeyId, Patch patch) {
        JourneyRepository.Row current = journeys.lock(appId, journeyId).orElseThrow(() -> new NotFound("Journey"));
        String status = patch.status() != null ? patch.status() : current.status();
        JourneyDefinition definition = patch.definition() != null ? patch.definition()
                : JourneyDefinitions.read(current.definition());
        // a new definition is checked; so is an old one that is being (re)started
        if (patch.definition() != null || ("active".equals(patch.status()) && !"active".equals(current.status()))) {
            checkReferences(appId, definition);
        }
        Instant now = clock.instant();
        JourneyRepository.Current next = new JourneyRepository.Current(
                patch.name() != null ? patch.name() : current.name(), status,
                patch.reentryLimit() != null ? patch.reentryLimit() : current.reentryLimit(),
                definition.trigger(), JourneyDefinitions.toJson(definition));
        journeys.bumpVersion(appId, journeyId, next, now).orElseThrow();
        if ("archived".equals(status)) journeys.cancelExecutions(appId, journeyId, now);
        List<String> changed = new ArrayList<>();
        if (patch.name() != null) changed.add("name");
        if (patch.status() != null) changed.add("status");
        if (patch.reentryLimit() != null) changed.add("reentry_limit");
        if (patch.definition() != null) changed.add("definition");
        audit.record(appId, "journey.update", "journey", journeyId, changed);
        if ("active".equals(status)) wakeAfterCommit();
        return get(appId, journeyId);
    }

    /**
     * Archives the journey (no new version) and cancels its active and waiting executions in the same
     * transaction; history is kept. Idempotent: an archived journey is answered unchanged. 404 when
     * unknown or another app's.
     */
    @Transactional
    public JourneyView archive(UUID appId, UUID journeyId) {
        journeys.lock(appId, journeyId).orElseThrow(() -> new NotFound("Journey"));
        Instant now = clock.instant();
        if (journeys.archive(appId, journeyId, now)) {
            journeys.cancelExecutions(appId, journeyId, now);
            audit.record(appId, "journey.archive", "journey", journeyId, List.of("status"));
        }
        return get(appId, journeyId);
    }

    /**
     * The totals of the app's journeys {@code journeyIds} (a page of a list), in one statement
     * whatever their number: journeys of another app or without executions get zeros.
     */
    @Transactional(readOnly = true)
    public Map<UUID, JourneyView.ListTotals> listTotals(UUID appId, java.util.Collection<UUID> journeyIds) {
        if (journeyIds.isEmpty()) return Map.of();
        return journeys.listTotals(appId, journeyIds);
    }

    /** Executions per status (every status, zeros included) and goals reached per goal node. */
    @Transactional(readOnly = true)
    public JourneyView.Stats stats(UUID appId, UUID journeyId) {
        JourneyRepository.Row journey = journeys.find(appId, journeyId).orElseThrow(() -> new NotFound("Journey"));
        Map<String, Long> byStatus = journeys.executionTotals(appId, journeyId);
        List<JourneyView.StatusTotal> executions = EXECUTION_STATUSES.stream()
                .map(s -> new JourneyView.StatusTotal(s, byStatus.getOrDefault(s, 0L))).toList();
        // every goal node of the current version (zeros included), then goals of nodes only older versions had
        Map<String, JourneyView.GoalTotal> goals = new LinkedHashMap<>();
        Map<String, Long> reached = journeys.goalTotals(appId, journeyId);
        JourneyDefinitions.read(journey.definition()).nodes().forEach((id, node) -> {
            if (node instanceof JourneyNode.Goal g) {
                goals.put(id, new JourneyView.GoalTotal(id, g.name(), reached.getOrDefault(id, 0L)));
            }
        });
        reached.forEach((id, total) -> goals.putIfAbsent(id, new JourneyView.GoalTotal(id, null, total)));
        return new JourneyView.Stats(journeyId, executions, List.copyOf(goals.values()));
    }

    /** The segment of a segment trigger is an active segment of the app; every webhook node names a webhook of the app. */
    private void checkReferences(UUID appId, JourneyDefinition definition) {
        List<Violation> problems = new ArrayList<>();
        if (definition.trigger() instanceof JourneyTrigger.SegmentEntry s) {
            try {
                segments.activeVersion(appId, s.segmentId(), "definition.trigger.segment_id");
            } catch (InvalidInput e) {
                problems.addAll(e.violations());
            }
        }
        Map<String, UUID> webhookNodes = new LinkedHashMap<>();
        definition.nodes().forEach((id, node) -> {
            if (node instanceof JourneyNode.Webhook w) webhookNodes.put(id, w.webhookId());
        });
        Set<UUID> existing = webhooks.existing(appId, Set.copyOf(webhookNodes.values()));
        webhookNodes.forEach((id, webhookId) -> {
            if (!existing.contains(webhookId)) {
                problems.add(new Violation("definition.nodes." + id + ".webhook_id", "no webhook " + webhookId + " in this app"));
            }
        });
        if (!problems.isEmpty()) throw new InvalidInput(problems);
    }

    private void wakeAfterCommit() {
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCommit() {
                wakeup.wake();
            }
        });
    }

    private static JourneyView view(JourneyRepository.Row r) {
        List<JourneyView.Warning> warnings = JourneyDefinitions.warnings(JourneyDefinitions.read(r.definition())).stream()
                .map(v -> new JourneyView.Warning(v.field(), v.message())).toList();
        return new JourneyView(r.id(), r.name(), r.status(), r.version(), r.reentryLimit(), r.definition(), warnings,
                r.createdAt(), r.updatedAt());
    }
}
