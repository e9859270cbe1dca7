package dev.pushservice.journeys;

import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.lifecycle.LifecycleEventRepository.SubjectFact;
import dev.pushservice.notifications.NotificationService;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.webhooks.WebhookService;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Runs one batch of due journey executions ({@link #runBatch}): claims them with
 * {@code FOR UPDATE SKIP LOCKED}, runs each one's nodes until it waits or ends, and writes what the
 * nodes did (notifications, webhook deliveries, goals) and every execution's new state, all in ONE
 * transaction. A crash or a database error therefore loses the whole batch's steps and effects
 * together: the executions are claimed again and run again from where they were, and nothing a
 * step did is repeated (no push sent twice, no webhook queued twice).
 *
 * <p>Set-based per batch and node: executions standing at the same node (same journey, version and
 * node id) are handled together, so a batch costs a few statements per node reached, never one
 * per execution. In-memory nodes ({@code wait}, {@code wait_until}, {@code split}, {@code goal},
 * {@code exit}) are followed first until every execution stands at a node with effects or stopped;
 * then each effect node runs once for its group:
 * <ul>
 *   <li>{@code branch}: the filter, compiled by {@link FilterCompiler}, is evaluated in one
 *       statement for the group's users: {@code yes} when any enabled, non-invalidated device of the
 *       user matches now;</li>
 *   <li>{@code push}: ONE notification for the group's users ({@link NotificationService#createForUsers}),
 *       recipients materialized in this transaction; reads show it with target
 *       {@code {"type":"journey","journey_id","version","node_id"}};</li>
 *   <li>{@code webhook}: one signed delivery of kind {@value #WEBHOOK_KIND} per execution, queued in
 *       one statement ({@link WebhookService#queueDirect}); a deleted or disabled endpoint is
 *       skipped, the execution continues and {@code last_error} says why.</li>
 * </ul>
 *
 * <p>Execution outcomes: {@code waiting} with {@code due_at} at a {@code wait}/{@code wait_until};
 * {@code completed} at an {@code exit} or a {@code goal} without {@code next}; {@code failed} with
 * {@code last_error} for what will not get better by retrying: the user was deleted
 * ({@value #USER_DELETED}), the version's definition cannot be read ({@value #DEFINITION_UNREADABLE}),
 * a branch filter cannot be compiled ({@code branch_filter_invalid}), or more than
 * {@value #MAX_NODES_PER_BATCH} nodes ran without reaching a wait ({@value #LOOP_WITHOUT_WAIT}: a
 * cycle through a past {@code wait_until}, say). Thread-safe; several threads (and instances) may run
 * batches at once: they claim disjoint rows.
 *
 * <p>Lifecycle facts: a batch records {@code journey.goal.reached} (once per execution and goal node,
 * as {@code journey_goals} records it), {@code journey.execution.completed} and
 * {@code journey.execution.failed} for its executions with ONE statement
 * ({@link LifecycleEventRepository#recordSubscribed}) in its transaction, so they commit exactly when
 * the states they describe do and vanish with a rolled-back batch. ({@code started} is written where
 * executions are created, V33; {@code cancelled} by the archive, {@link JourneyRepository#cancelExecutions}.)
 */
@Service
class JourneyRunner {

    private static final Logger log = LoggerFactory.getLogger(JourneyRunner.class);

    static final String WEBHOOK_KIND = "journey.webhook";
    static final String USER_DELETED = "user_deleted";
    static final String DEFINITION_UNREADABLE = "definition_unreadable";
    static final String LOOP_WITHOUT_WAIT = "loop_without_wait";
    /** A definition has at most 100 nodes; a path without a wait visits each at most once. */
    static final int MAX_NODES_PER_BATCH = 100;
    /** The lifecycle facts a batch may record. */
    private static final Set<Kind> WORKER_KINDS = Set.of(Kind.JOURNEY_GOAL_REACHED, Kind.JOURNEY_EXECUTION_COMPLETED,
            Kind.JOURNEY_EXECUTION_FAILED);

    /** Node types as metrics and logs name them. */
    enum NodeType {
        WAIT, WAIT_UNTIL, BRANCH, SPLIT, PUSH, WEBHOOK, GOAL, EXIT;

        String value() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        static NodeType of(JourneyNode node) {
            return switch (node) {
                case JourneyNode.Wait w -> WAIT;
                case JourneyNode.WaitUntil w -> WAIT_UNTIL;
                case JourneyNode.Branch b -> BRANCH;
                case JourneyNode.Split s -> SPLIT;
                case JourneyNode.Push p -> PUSH;
                case JourneyNode.Webhook w -> WEBHOOK;
                case JourneyNode.Goal g -> GOAL;
                case JourneyNode.Exit e -> EXIT;
            };
        }
    }

    private final JourneyExecutionRepository executions;
    private final NotificationService notifications;
    private final WebhookService webhooks;
    private final LifecycleEventRepository lifecycle;
    private final FilterCompiler compiler;
    private final TransactionTemplate transactions;
    private final Clock clock;
    private final JsonMapper json;
    private final Map<JourneyExecutionRepository.VersionKey, JourneyDefinition> definitions = new ConcurrentHashMap<>();
    private final Map<NodeType, Counter> nodesRun = new EnumMap<>(NodeType.class);
    private final Map<String, Counter> ended = new HashMap<>();
    private final Timer batchTimer;

    JourneyRunner(JourneyExecutionRepository executions, NotificationService notifications, WebhookService webhooks,
                  LifecycleEventRepository lifecycle, FilterCompiler compiler, TransactionTemplate transactions, Clock clock,
                  JsonMapper json, MeterRegistry registry) {
        this.executions = executions;
        this.notifications = notifications;
        this.webhooks = webhooks;
        this.lifecycle = lifecycle;
        this.compiler = compiler;
        this.transactions = transactions;
        this.clock = clock;
        this.json = json;
        for (NodeType type : NodeType.values()) {
            nodesRun.put(type, Counter.builder("push.journeys.nodes")
                    .description("Journey nodes run by executions, per node type")
                    .tag("type", type.value()).register(registry));
        }
        for (String status : List.of("waiting", "completed", "failed")) {
            ended.put(status, Counter.builder("push.journeys.batch.outcomes")
                    .description("Executions leaving a batch, per state they are left in")
                    .tag("status", status).register(registry));
        }
        batchTimer = Timer.builder("push.journeys.batch.duration")
                .description("One batch of journey executions: claim, nodes, writes and commit")
                .publishPercentileHistogram().register(registry);
    }

    /** What one batch did. */
    record BatchResult(int claimed, int nodes, int waiting, int completed, int failed, int notifications,
                       int webhookDeliveries, long millis) {
        static final BatchResult EMPTY = new BatchResult(0, 0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * A batch failed and was rolled back whole; {@code executions} are the ones it had claimed (they
     * are due again at once). The worker uses them to find an execution that fails every time.
     */
    static final class BatchFailed extends RuntimeException {
        final List<UUID> executions;

        BatchFailed(List<UUID> executions, RuntimeException cause) {
            super(cause.toString(), cause);
            this.executions = List.copyOf(executions);
        }
    }

    /**
     * Claims and runs up to {@code limit} due executions in one transaction; a failure rolls the
     * whole batch back (its executions are claimed again by a later batch) and is thrown as
     * {@link BatchFailed}.
     */
    BatchResult runBatch(int limit) {
        long started = System.nanoTime();
        List<UUID> claimedIds = new ArrayList<>();
        Batch batch;
        try {
            batch = transactions.execute(status -> {
                Batch b = new Batch(clock.instant().truncatedTo(ChronoUnit.MICROS));
                List<JourneyExecutionRepository.Claimed> claimed = executions.claim(b.now, limit);
                claimed.forEach(c -> claimedIds.add(c.id()));
                b.run(claimed);
                return b;
            });
        } catch (RuntimeException e) {
            throw new BatchFailed(claimedIds, e);
        }
        if (batch == null || batch.claimed == 0) return BatchResult.EMPTY;
        long nanos = System.nanoTime() - started;
        batchTimer.record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        batch.counts.forEach((type, n) -> nodesRun.get(type).increment(n));
        ended.get("waiting").increment(batch.waiting);
        ended.get("completed").increment(batch.completed);
        ended.get("failed").increment(batch.failed);
        BatchResult result = new BatchResult(batch.claimed, batch.nodes, batch.waiting, batch.completed, batch.failed,
                batch.notificationsCreated, batch.deliveriesQueued, nanos / 1_000_000);
        log.info("Journeys: {} execution(s) ran {} node(s) {} in {} ms: {} waiting, {} completed, {} failed; "
                        + "{} notification(s), {} webhook delivery(ies)", result.claimed(), result.nodes(), batch.countsText(),
                result.millis(), result.waiting(), result.completed(), result.failed(), result.notifications(),
                result.webhookDeliveries());
        return result;
    }

    /**
     * Ends one execution as {@code failed} with {@code error}, in a transaction of its own, if it is
     * still active or waiting: for an execution whose step failed alone again and again (a fault that
     * will not go away), so it stops holding back the executions claimed with it.
     */
    void failAlone(UUID execution, String error) {
        Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS);
        Boolean failed = transactions.execute(status -> executions.failOne(execution, error, now).map(e -> {
            Map<String, Object> data = facts(e.journeyId(), e.version(), e.id(), e.userId(), e.externalUserId(), e.nodeId());
            data.put("reason", error);
            lifecycle.recordSubscribed(List.of(new SubjectFact(e.appId(), Kind.JOURNEY_EXECUTION_FAILED, e.id(), data)), now);
            return true;
        }).orElse(false));
        if (Boolean.TRUE.equals(failed)) {
            ended.get("failed").increment();
            log.warn("Journey execution {} failed: its step failed alone {} times ({})", execution,
                    JourneyWorker.ATTEMPTS_ALONE, error);
        }
    }

    /**
     * The {@code data} every journey fact starts with (docs/api-decisions.md "Journey lifecycle events");
     * mutable and ordered, values may be null.
     */
    private static Map<String, Object> facts(UUID journeyId, int version, UUID executionId, UUID userId,
                                             String externalUserId, String nodeId) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("journey_id", journeyId);
        data.put("version", version);
        data.put("execution_id", executionId);
        data.put("user_id", userId);
        data.put("external_user_id", externalUserId);
        data.put("node_id", nodeId);
        return data;
    }

    /** The definition an execution runs, from the cache or read with the batch's others. */
    private Map<JourneyExecutionRepository.VersionKey, JourneyDefinition> definitionsFor(
            List<JourneyExecutionRepository.Claimed> claimed) {
        Map<JourneyExecutionRepository.VersionKey, JourneyDefinition> out = new HashMap<>();
        Set<JourneyExecutionRepository.VersionKey> missing = new LinkedHashSet<>();
        for (var c : claimed) {
            var key = new JourneyExecutionRepository.VersionKey(c.journeyId(), c.version());
            JourneyDefinition d = definitions.get(key);
            if (d != null) out.put(key, d);
            else missing.add(key);
        }
        executions.definitions(missing).forEach((key, text) -> {
            try {
                JourneyDefinition d = JourneyDefinitions.read(json.readTree(text));
                definitions.put(key, d); // versions are immutable: cached for good
                out.put(key, d);
            } catch (RuntimeException e) {
                log.warn("Journey {} version {}: stored definition unreadable ({}); its executions fail",
                        key.journeyId(), key.version(), e.getClass().getSimpleName());
            }
        });
        return out;
    }

    /** One execution while its batch runs. */
    private static final class Run {
        final JourneyExecutionRepository.Claimed row;
        final JourneyDefinition definition;
        String node;
        int step;
        int visits;
        String error;

        Run(JourneyExecutionRepository.Claimed row, JourneyDefinition definition) {
            this.row = row;
            this.definition = definition;
            this.node = row.nodeId();
            this.step = row.step();
        }

        JourneyNode current() {
            return definition.node(node);
        }

        GroupKey group() {
            return new GroupKey(row.appId(), row.journeyId(), row.version(), node);
        }

        /** A fact about this execution at its current node. */
        SubjectFact fact(Kind kind, String key, String value) {
            Map<String, Object> data = facts(row.journeyId(), row.version(), row.id(), row.userId(), row.externalUserId(), node);
            if (key != null) data.put(key, value);
            return new SubjectFact(row.appId(), kind, row.id(), data);
        }
    }

    private record GroupKey(UUID appId, UUID journeyId, int version, String nodeId) {
    }

    /** The state of one batch inside its transaction. */
    private final class Batch {
        final Instant now;
        int claimed;
        int nodes;
        int waiting;
        int completed;
        int failed;
        int notificationsCreated;
        int deliveriesQueued;
        final Map<NodeType, Integer> counts = new EnumMap<>(NodeType.class);
        final List<JourneyExecutionRepository.Outcome> outcomes = new ArrayList<>();
        final List<JourneyExecutionRepository.Goal> goals = new ArrayList<>();
        /** {@code journey.goal.reached} of each of {@link #goals}, at the same index (null: its app does not listen). */
        final List<SubjectFact> goalFacts = new ArrayList<>();
        /**
         * The batch's apps with a webhook subscribed to a journey kind: facts are built only for their
         * executions (most apps have none, and a batch then sends no facts at all).
         */
        Set<UUID> listening = Set.of();
        /** {@code journey.execution.completed} and {@code failed}, in the order the executions ended. */
        final List<SubjectFact> endFacts = new ArrayList<>();

        Batch(Instant now) {
            this.now = now;
        }

        String countsText() {
            StringBuilder s = new StringBuilder("(");
            counts.forEach((t, n) -> s.append(s.length() > 1 ? ", " : "").append(t.value()).append(' ').append(n));
            return s.append(')').toString();
        }

        void run(List<JourneyExecutionRepository.Claimed> rows) {
            claimed = rows.size();
            if (rows.isEmpty()) return;
            Map<JourneyExecutionRepository.VersionKey, JourneyDefinition> defs = definitionsFor(rows);
            Set<UUID> apps = new HashSet<>();
            rows.forEach(row -> apps.add(row.appId()));
            listening = lifecycle.appsSubscribed(apps, WORKER_KINDS);
            List<Run> active = new ArrayList<>();
            for (var row : rows) {
                JourneyDefinition d = defs.get(new JourneyExecutionRepository.VersionKey(row.journeyId(), row.version()));
                Run r = new Run(row, d);
                if (!row.userExists()) fail(r, USER_DELETED);
                else if (d == null || row.nodeId() == null || !d.nodes().containsKey(row.nodeId())) fail(r, DEFINITION_UNREADABLE);
                else active.add(r);
            }
            while (!active.isEmpty()) {
                List<Run> atEffects = followInMemory(active);
                if (atEffects.isEmpty()) break;
                active = runEffects(atEffects);
            }
            Set<JourneyExecutionRepository.Goal> recorded = new HashSet<>(executions.insertGoals(goals, now));
            List<SubjectFact> facts = new ArrayList<>(goalFacts.size() + endFacts.size());
            // a goal's fact only when its row is new (an execution reaches a goal node once), before the ends:
            // an execution's goal.reached comes before its completed
            for (int i = 0; i < goals.size(); i++) {
                if (recorded.remove(goals.get(i)) && goalFacts.get(i) != null) facts.add(goalFacts.get(i));
            }
            facts.addAll(endFacts);
            lifecycle.recordSubscribed(facts, now);
            executions.update(outcomes, now);
        }

        /** Follows in-memory nodes until each run stands at a branch, push or webhook node, or stopped. */
        private List<Run> followInMemory(List<Run> runs) {
            List<Run> atEffects = new ArrayList<>();
            for (Run r : runs) {
                while (true) {
                    JourneyNode node = r.current();
                    if (node instanceof JourneyNode.Branch || node instanceof JourneyNode.Push
                            || node instanceof JourneyNode.Webhook) {
                        atEffects.add(r);
                        break;
                    }
                    if (!ran(r, node)) break;
                    boolean goesOn = switch (node) {
                        case JourneyNode.Wait w -> waitUntil(r, now.plusSeconds(w.seconds()), w.next());
                        case JourneyNode.WaitUntil w -> w.at().isAfter(now) ? waitUntil(r, w.at(), w.next()) : move(r, w.next());
                        case JourneyNode.Split s -> move(r, s.branches().get(bucketIndex(s, r)).next());
                        case JourneyNode.Goal g -> {
                            goals.add(new JourneyExecutionRepository.Goal(r.row.id(), r.node, r.row.appId(), r.row.journeyId()));
                            goalFacts.add(fact(r, Kind.JOURNEY_GOAL_REACHED, "goal", g.name()));
                            yield g.next() == null ? complete(r) : move(r, g.next());
                        }
                        case JourneyNode.Exit e -> complete(r);
                        default -> throw new IllegalStateException("not an in-memory node: " + node);
                    };
                    if (!goesOn) break;
                }
            }
            return atEffects;
        }

        /** Runs each effect node once for the runs standing at it; returns the runs that go on. */
        private List<Run> runEffects(List<Run> runs) {
            Map<GroupKey, List<Run>> groups = new LinkedHashMap<>();
            for (Run r : runs) groups.computeIfAbsent(r.group(), k -> new ArrayList<>()).add(r);
            List<Run> next = new ArrayList<>();
            groups.forEach((key, group) -> {
                JourneyNode node = group.getFirst().current();
                List<Run> counted = new ArrayList<>();
                for (Run r : group) if (ran(r, node)) counted.add(r);
                if (counted.isEmpty()) return;
                switch (node) {
                    case JourneyNode.Branch b -> branch(key, b, counted, next);
                    case JourneyNode.Push p -> push(key, p, counted, next);
                    case JourneyNode.Webhook w -> webhook(key, w, counted, next);
                    default -> throw new IllegalStateException("not an effect node: " + node);
                }
            });
            return next;
        }

        private void branch(GroupKey key, JourneyNode.Branch b, List<Run> group, List<Run> next) {
            FilterCompiler.Compiled compiled;
            try {
                compiled = compiler.compile(key.appId(), b.filter(), "jb");
            } catch (RuntimeException e) {
                // a filter the compiler refuses (checked when the version was written) will not get better
                group.forEach(r -> fail(r, "branch_filter_invalid"));
                return;
            }
            Set<UUID> users = new LinkedHashSet<>();
            group.forEach(r -> users.add(r.row.userId()));
            Set<UUID> yes = executions.usersMatching(key.appId(), compiled, users);
            for (Run r : group) {
                if (move(r, yes.contains(r.row.userId()) ? b.yes() : b.no())) next.add(r);
            }
        }

        private void push(GroupKey key, JourneyNode.Push p, List<Run> group, List<Run> next) {
            Set<UUID> users = new LinkedHashSet<>();
            group.forEach(r -> users.add(r.row.userId()));
            ObjectNode target = JsonNodeFactory.instance.objectNode().put("type", "journey")
                    .put("journey_id", key.journeyId().toString()).put("version", key.version()).put("node_id", key.nodeId());
            notifications.createForUsers(key.appId(), p.content(), p.priority(), p.interruptionLevel(), users, target);
            notificationsCreated++;
            for (Run r : group) if (move(r, p.next())) next.add(r);
        }

        private void webhook(GroupKey key, JourneyNode.Webhook w, List<Run> group, List<Run> next) {
            List<JsonNode> data = new ArrayList<>(group.size());
            for (Run r : group) {
                data.add(JsonNodeFactory.instance.objectNode()
                        .put("journey_id", key.journeyId().toString()).put("version", key.version())
                        .put("execution_id", r.row.id().toString()).put("node_id", key.nodeId())
                        .put("user_id", r.row.userId().toString()).put("external_user_id", r.row.externalUserId())
                        .put("occurred_at", now.toString()));
            }
            WebhookService.DirectOutcome outcome = webhooks.queueDirect(key.appId(), w.webhookId(), WEBHOOK_KIND, data);
            String note = switch (outcome) {
                case QUEUED -> null;
                case NOT_FOUND -> "webhook_skipped: webhook " + w.webhookId() + " no longer exists (node " + key.nodeId() + ")";
                case DISABLED -> "webhook_skipped: webhook " + w.webhookId() + " is disabled (node " + key.nodeId() + ")";
            };
            if (outcome == WebhookService.DirectOutcome.QUEUED) deliveriesQueued += data.size();
            for (Run r : group) {
                if (note != null) r.error = note;
                if (move(r, w.next())) next.add(r);
            }
        }

        /** A fact about {@code r} at its current node; null when its app has no webhook to receive it. */
        private SubjectFact fact(Run r, Kind kind, String key, String value) {
            return listening.contains(r.row.appId()) ? r.fact(kind, key, value) : null;
        }

        /** Counts a node run by {@code r}; false (and the run failed) past the per-batch cap. */
        private boolean ran(Run r, JourneyNode node) {
            if (r.visits >= MAX_NODES_PER_BATCH) {
                fail(r, LOOP_WITHOUT_WAIT);
                return false;
            }
            r.visits++;
            r.step++;
            nodes++;
            counts.merge(NodeType.of(node), 1, Integer::sum);
            return true;
        }

        /** Moves to {@code next}; always true (the run goes on). */
        private boolean move(Run r, String next) {
            r.node = next;
            return true;
        }

        private boolean waitUntil(Run r, Instant due, String next) {
            outcomes.add(new JourneyExecutionRepository.Outcome(r.row.id(), "waiting", next, r.step, due, null, r.error));
            waiting++;
            return false;
        }

        private boolean complete(Run r) {
            outcomes.add(new JourneyExecutionRepository.Outcome(r.row.id(), "completed", null, r.step, null, now, r.error));
            SubjectFact fact = fact(r, Kind.JOURNEY_EXECUTION_COMPLETED, null, null);
            if (fact != null) endFacts.add(fact);
            completed++;
            return false;
        }

        private void fail(Run r, String error) {
            outcomes.add(new JourneyExecutionRepository.Outcome(r.row.id(), "failed", r.node, r.step, null, now, error));
            SubjectFact fact = fact(r, Kind.JOURNEY_EXECUTION_FAILED, "reason", error);
            if (fact != null) endFacts.add(fact);
            failed++;
        }
    }

    /**
     * The branch a user takes at a split: a stable bucket 0..99 from SHA-256 of (user, journey,
     * node), mapped over the cumulative weights. The same user always takes the same branch of a
     * given split node, in every execution and every version that keeps the node's id and weights.
     */
    static int bucketIndex(JourneyNode.Split split, UUID userId, UUID journeyId, String nodeId) {
        int bucket = bucket(userId, journeyId, nodeId);
        int cumulative = 0;
        List<JourneyNode.SplitBranch> branches = split.branches();
        for (int i = 0; i < branches.size(); i++) {
            cumulative += branches.get(i).weight();
            if (bucket < cumulative) return i;
        }
        return branches.size() - 1;
    }

    private static int bucketIndex(JourneyNode.Split split, Run r) {
        return bucketIndex(split, r.row.userId(), r.row.journeyId(), r.node);
    }

    static int bucket(UUID userId, UUID journeyId, String nodeId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest((userId + ":" + journeyId + ":" + nodeId).getBytes(StandardCharsets.UTF_8));
            return (int) Long.remainderUnsigned(ByteBuffer.wrap(digest).getLong(), 100);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
