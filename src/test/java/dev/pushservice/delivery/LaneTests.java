package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.InterruptionLevel;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.platform.rules.Platform;
import dev.pushservice.templates.CompiledContent;
import dev.pushservice.templates.Renderer;
import dev.pushservice.templates.TemplateContent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The lanes on their own: an in-memory {@link DeliveryStore} and a scripted provider whose answers
 * arrive on another thread, as a provider's do on its Netty I/O threads. What the lanes promise:
 * their own capacity (a saturated bulk lane never holds up a transactional send), each result
 * recorded as the right outcome, retries per {@link RetryBackoff}, nothing of a cancelled
 * notification handed over.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LaneTests {

    private final InMemoryStore store = new InMemoryStore();
    private final ScriptedProvider provider = new ScriptedProvider();
    private final Set<UUID> cancelled = ConcurrentHashMap.newKeySet();
    private final List<Lane> lanes = new ArrayList<>();

    @AfterEach
    void stop() {
        provider.answerAll(new DeliveryResult.Accepted(null));
        lanes.forEach(l -> l.stop(Duration.ofSeconds(5)));
        provider.io.shutdownNow();
    }

    private DeliveryProperties properties(int bulkInFlight, int maxAttempts) {
        Map<Priority, DeliveryProperties.Lane> budgets = new EnumMap<>(Priority.class);
        budgets.put(Priority.BULK, new DeliveryProperties.Lane(bulkInFlight));
        return new DeliveryProperties(100, Duration.ofMillis(50), Duration.ofMinutes(2), maxAttempts,
                Duration.ofMillis(20), Duration.ofMillis(40), 2, budgets, null);
    }

    private Lane lane(Priority priority, DeliveryProperties properties) {
        Lane lane = new Lane(priority, store, Map.of(Platform.ANDROID, provider),
                c -> store.blueprint(c.appId(), c.notificationId()), cancelled::contains,
                properties, Clock.systemUTC(), new DeliveryMetrics(new SimpleMeterRegistry()));
        lanes.add(lane);
        lane.start();
        return lane;
    }

    @Test
    void aSaturatedBulkLaneNeverHoldsUpATransactionalSend() {
        DeliveryProperties properties = properties(50, 8);
        UUID bulk = store.notification(Priority.BULK);
        for (int i = 0; i < 2_000; i++) store.pending(bulk, Priority.BULK, "bulk-" + i);
        provider.holdTokensStartingWith("bulk-"); // the bulk provider answers nothing: its lane fills up
        Lane bulkLane = lane(Priority.BULK, properties);
        Lane transactionalLane = lane(Priority.TRANSACTIONAL, properties);

        await().atMost(Duration.ofSeconds(10)).until(() -> bulkLane.inFlight(Platform.ANDROID) == 50);
        UUID urgent = store.notification(Priority.TRANSACTIONAL);
        UUID recipient = store.pending(urgent, Priority.TRANSACTIONAL, "urgent-1");
        transactionalLane.signal();

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(recipient) instanceof DeliveryStore.Accepted);
        assertThat(bulkLane.inFlight(Platform.ANDROID)).as("bulk never takes more than its budget").isEqualTo(50);
        assertThat(provider.handedOver("bulk-")).isEqualTo(50);
        assertThat(store.outcomes.stream().filter(o -> o.recipient().notificationId().equals(bulk))).isEmpty();

        provider.answerAll(new DeliveryResult.Accepted("ok"));
        await().atMost(Duration.ofSeconds(30)).until(() -> store.countOutcomes(bulk) == 2_000);
        assertThat(store.outcomes).allMatch(o -> o instanceof DeliveryStore.Accepted);
        assertThat(provider.maxConcurrent("bulk-")).isLessThanOrEqualTo(50);
    }

    /**
     * The claimer finds a platform's budget spent, then looks at the other platforms; answers that free
     * that budget meanwhile (here: while it waits for a connection to claim another platform) must wake
     * it, or it sleeps a whole poll interval with work due and budget free.
     */
    @Test
    void answersThatFreeBudgetWhileTheClaimerLooksElsewhereWakeIt() throws InterruptedException {
        DeliveryProperties properties = new DeliveryProperties(100, Duration.ofSeconds(30), Duration.ofMinutes(2), 8,
                Duration.ofMillis(20), Duration.ofMillis(40), 2, Map.of(Priority.BULK, new DeliveryProperties.Lane(8)), null);
        UUID n = store.notification(Priority.BULK);
        for (int i = 0; i < 20; i++) store.pending(n, Priority.BULK, "held-" + i);
        provider.holdTokensStartingWith("held-");
        Lane lane = lane(Priority.BULK, properties);
        await().atMost(Duration.ofSeconds(10)).until(() -> lane.inFlight(Platform.ANDROID) == 8);

        Gate gate = new Gate();
        store.beforeClaim.put(Platform.WEB, gate::pass);
        lane.signal(); // a pass over every platform: Android's budget is spent, Web's claim waits at the gate
        assertThat(gate.entered.await(10, TimeUnit.SECONDS)).as("the claimer reached Web's claim").isTrue();
        provider.answerAll(new DeliveryResult.Accepted("ok"));
        await().atMost(Duration.ofSeconds(10)).until(() -> lane.inFlight(Platform.ANDROID) == 0);
        gate.open.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> store.countOutcomes(n) == 20);
    }

    /**
     * Work committed while the claimer is inside a claim of another platform, waiting there on
     * something that parks its thread (a pooled connection, a lock): that wait must not swallow the
     * wake-up, or the work waits for the next poll.
     */
    @Test
    void workSignalledWhileTheClaimerWaitsInsideTheStoreIsClaimedBeforeThePoll() throws InterruptedException {
        DeliveryProperties properties = new DeliveryProperties(100, Duration.ofSeconds(30), Duration.ofMinutes(2), 8,
                Duration.ofMillis(20), Duration.ofMillis(40), 2, Map.of(Priority.BULK, new DeliveryProperties.Lane(8)), null);
        UUID n = store.notification(Priority.BULK);
        Gate gate = new Gate();
        store.beforeClaim.put(Platform.WEB, gate::pass);
        Lane lane = lane(Priority.BULK, properties); // its first pass over the platforms waits at Web's claim
        assertThat(gate.entered.await(10, TimeUnit.SECONDS)).as("the claimer reached Web's claim").isTrue();

        UUID late = store.pending(n, Priority.BULK, "late-1"); // Android: already looked at in this pass
        lane.signal();
        gate.open.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(late) instanceof DeliveryStore.Accepted);
    }

    /**
     * While one platform keeps the lane busy, every answer that frees budget wakes the claimer; a
     * platform whose last claim found nothing is not claimed again on those wake-ups, only at the next
     * poll or when work is committed ({@link Lane#signal()}).
     */
    @Test
    void aPlatformWithNothingDueIsClaimedAgainOnlyAtThePollOrWhenWorkIsAdded() {
        // a poll interval longer than the test: only wake-ups make progress, and none may be lost
        DeliveryProperties properties = new DeliveryProperties(100, Duration.ofSeconds(60), Duration.ofMinutes(2), 8,
                Duration.ofMillis(20), Duration.ofMillis(40), 2, Map.of(Priority.BULK, new DeliveryProperties.Lane(8)), null);
        UUID n = store.notification(Priority.BULK);
        for (int i = 0; i < 500; i++) store.pending(n, Priority.BULK, "busy-" + i);
        Lane lane = lane(Priority.BULK, properties);

        await().atMost(Duration.ofSeconds(30)).until(() -> store.countOutcomes(n) == 500);
        int android = store.claims.get(Platform.ANDROID).get();
        assertThat(android).as("claims of the busy platform (8 in flight: one per few answers)").isGreaterThan(50);
        assertThat(store.claims.get(Platform.IOS).get()).as("claims of a platform with nothing due").isEqualTo(1);
        assertThat(store.claims.get(Platform.WEB).get()).isEqualTo(1);

        lane.signal();
        await().atMost(Duration.ofSeconds(10)).until(() -> store.claims.get(Platform.IOS).get() == 2);
        assertThat(store.claims.get(Platform.WEB).get()).as("committed work: every platform is looked at again").isEqualTo(2);
    }

    /**
     * Recipients a fan-out hands over (inserted sending, no claim) hold room the lane reserved for
     * them, go to the provider before anything of their platform is claimed, never beyond the
     * in-flight budget, give their room back as they go, and are still sent by a paused lane (as
     * claimed ones are); what is pending waits for the claim.
     */
    @Test
    void handedRecipientsGoFirstWithinTheBudgetAndGiveTheirRoomBack() {
        Lane lane = lane(Priority.BULK, properties(8, 8));
        lane.paused(true);
        UUID n = store.notification(Priority.BULK);
        UUID waitingForAClaim = store.pending(n, Priority.BULK, "pending-1");
        provider.holdTokensStartingWith("handed-");

        assertThat(lane.reserve(Platform.ANDROID, 100)).as("room: twice the lane's in-flight budget").isEqualTo(16);
        assertThat(lane.reserve(Platform.ANDROID, 1)).as("no room left").isZero();
        lane.handOver(store.handed(n, "handed-", 16));
        await().atMost(Duration.ofSeconds(10)).until(() -> provider.handedOver("handed-") == 8);
        await().atMost(Duration.ofSeconds(10)).until(() -> lane.room(Platform.ANDROID) == 8);
        assertThat(lane.inFlight(Platform.ANDROID)).isEqualTo(8);
        assertThat(provider.handedOver("handed-")).as("the budget is spent: the other 8 wait, holding their room")
                .isEqualTo(8);

        provider.answerAll(new DeliveryResult.Accepted("ok"));
        await().atMost(Duration.ofSeconds(10)).until(() -> store.countOutcomes(n) == 16);
        assertThat(provider.maxConcurrent("handed-")).as("never beyond the budget").isLessThanOrEqualTo(8);
        assertThat(lane.room(Platform.ANDROID)).isEqualTo(16);
        assertThat(store.outcome(waitingForAClaim)).as("paused: nothing is claimed").isNull();

        lane.paused(false);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(waitingForAClaim) instanceof DeliveryStore.Accepted);
    }

    /**
     * A transactional send handed over (created for one device: its recipient goes straight to the
     * lane) while the lane's claimer is inside a database call that does not return (a claim of another
     * platform that takes seconds on a busy database, issue 25's provider-storm drill): it is sent and
     * recorded all the same, without waiting for the claimer.
     */
    @Test
    void aHandedRecipientIsSentWhileTheClaimerIsStuckInsideTheStore() throws InterruptedException {
        DeliveryProperties properties = new DeliveryProperties(100, Duration.ofSeconds(30), Duration.ofMinutes(2), 8,
                Duration.ofMillis(20), Duration.ofMillis(40), 2, Map.of(), null);
        Gate gate = new Gate();
        store.beforeClaim.put(Platform.WEB, gate::pass);
        Lane lane = lane(Priority.TRANSACTIONAL, properties); // its first pass over the platforms stops at Web's claim
        assertThat(gate.entered.await(10, TimeUnit.SECONDS)).as("the claimer is inside Web's claim").isTrue();

        UUID n = store.notification(Priority.TRANSACTIONAL);
        assertThat(lane.reserve(Platform.ANDROID, 1)).isEqualTo(1);
        List<DeliveryStore.Claimed> handed = store.handed(n, "urgent-", 1);
        lane.handOver(handed);

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(handed.getFirst().deviceId()) instanceof DeliveryStore.Accepted);
        assertThat(gate.open.getCount()).as("the claimer is still inside the store").isEqualTo(1);
        assertThat(lane.room(Platform.ANDROID)).as("its room is given back").isEqualTo(lane.capacity() * 2);
        gate.open.countDown();
    }

    /**
     * A lane that stops with handed recipients still waiting for budget sends none of them and
     * records nothing for them: they stay sending in the store, as a crash would leave them, and are
     * claimed again when their lease runs out. Those in flight are answered and recorded.
     */
    @Test
    void handedRecipientsStillWaitingWhenTheLaneStopsAreLeftToTheirLease() throws InterruptedException {
        Lane lane = lane(Priority.BULK, properties(8, 8));
        UUID n = store.notification(Priority.BULK);
        provider.holdTokensStartingWith("handed-");
        assertThat(lane.reserve(Platform.ANDROID, 16)).isEqualTo(16);
        List<DeliveryStore.Claimed> handed = store.handed(n, "handed-", 16);
        lane.handOver(handed);
        await().atMost(Duration.ofSeconds(10)).until(() -> lane.inFlight(Platform.ANDROID) == 8);

        Thread answers = Thread.ofPlatform().start(() -> {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300));
            provider.answerAll(new DeliveryResult.Accepted("ok"));
        });
        lane.stop(Duration.ofSeconds(5));
        answers.join();

        assertThat(provider.handedOver("handed-")).as("only what was in flight went out").isEqualTo(8);
        assertThat(store.countOutcomes(n)).as("and only that is recorded").isEqualTo(8);
        assertThat(handed.stream().filter(c -> store.outcome(c.deviceId()) == null))
                .as("the rest stay sending, for a claim once their lease ends").hasSize(8);
        assertThat(lane.room(Platform.ANDROID)).as("their room is given back").isEqualTo(16);
    }

    @Test
    void eachAnswerBecomesItsOutcome() {
        UUID n = store.notification(Priority.NORMAL);
        UUID accepted = store.pending(n, Priority.NORMAL, "accept");
        UUID invalid = store.pending(n, Priority.NORMAL, "invalid");
        UUID refused = store.pending(n, Priority.NORMAL, "refused");
        UUID unconfigured = store.pending(n, Priority.NORMAL, "unconfigured");
        provider.script("accept", t -> new DeliveryResult.Accepted("id-1"));
        provider.script("invalid", t -> new DeliveryResult.Rejected(ReasonCode.TOKEN_UNREGISTERED, "UNREGISTERED"));
        provider.script("refused", t -> new DeliveryResult.Rejected(ReasonCode.PAYLOAD_INVALID, "INVALID_ARGUMENT: bad payload"));
        provider.script("unconfigured", t -> new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, null));

        lane(Priority.NORMAL, properties(0, 8));

        await().atMost(Duration.ofSeconds(10)).until(() -> store.countOutcomes(n) == 4);
        assertThat(store.outcome(accepted)).isEqualTo(new DeliveryStore.Accepted(store.claimed(accepted), "id-1"));
        assertThat(store.outcome(invalid)).isInstanceOfSatisfying(DeliveryStore.Rejected.class,
                r -> assertThat(r.tokenInvalid()).isTrue());
        assertThat(store.outcome(refused)).isInstanceOfSatisfying(DeliveryStore.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isFalse();
            assertThat(r.reason()).isEqualTo("payload_invalid");
        });
        assertThat(store.outcome(unconfigured)).isInstanceOfSatisfying(DeliveryStore.Rejected.class,
                r -> assertThat(r.reason()).isEqualTo(DeliveryReasons.CREDENTIALS_MISSING));
        assertThat(provider.sends.get("refused").get()).as("a rejection is never retried").isEqualTo(1);
    }

    @Test
    void transientFailuresAreRetriedUntilAcceptedHonouringRetryAfter() {
        UUID n = store.notification(Priority.HIGH);
        UUID flaky = store.pending(n, Priority.HIGH, "flaky");
        AtomicInteger calls = new AtomicInteger();
        List<Instant> sentAt = new CopyOnWriteArrayList<>();
        provider.script("flaky", t -> {
            sentAt.add(Instant.now());
            return calls.incrementAndGet() < 3
                    ? new DeliveryResult.Failed(ReasonCode.PROVIDER_UNAVAILABLE, "UNAVAILABLE", Duration.ofMillis(300))
                    : new DeliveryResult.Accepted("finally");
        });

        lane(Priority.HIGH, properties(0, 8));

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(flaky) instanceof DeliveryStore.Accepted);
        assertThat(store.history(flaky)).hasSize(3).first().isInstanceOf(DeliveryStore.Retry.class);
        assertThat(Duration.between(sentAt.get(0), sentAt.get(1))).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(store.claimed(flaky).attempts()).isEqualTo(3);
    }

    @Test
    void aRecipientWhoseSendKeepsFailingOnOurSideIsDeadLetteredAfterTheMaximumAttempts() {
        UUID n = store.notification(Priority.NORMAL);
        UUID broken = store.pending(n, Priority.NORMAL, "broken");
        provider.script("broken", t -> null); // the provider's future fails: our bug, not an outage

        lane(Priority.NORMAL, properties(0, 3));

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(broken) instanceof DeliveryStore.GaveUp);
        assertThat(provider.sends.get("broken").get()).isEqualTo(3);
        assertThat(store.outcome(broken)).isEqualTo(
                new DeliveryStore.GaveUp(store.claimed(broken), DeliveryReasons.PROVIDER_ERROR, RetryBackoff.MAX_ATTEMPTS));
    }

    /**
     * A provider that answers 5xx for longer than the maximum attempts: the outage is waited out (its
     * circuit opens, the recipient waits without spending attempts), never dead-lettered.
     */
    @Test
    void aRecipientWhoseProviderIsDownIsRetriedPastTheMaximumAttemptsUntilItComesBack() {
        UUID n = store.notification(Priority.NORMAL);
        UUID down = store.pending(n, Priority.NORMAL, "down");
        AtomicInteger calls = new AtomicInteger();
        provider.script("down", t -> calls.incrementAndGet() <= 6
                ? new DeliveryResult.Failed(ReasonCode.PROVIDER_UNAVAILABLE, "INTERNAL: HTTP 500")
                : new DeliveryResult.Accepted("back"));

        lane(Priority.NORMAL, properties(0, 3));

        await().atMost(Duration.ofSeconds(20)).until(() -> store.outcome(down) instanceof DeliveryStore.Accepted);
        assertThat(provider.sends.get("down").get()).isEqualTo(7);
        assertThat(store.history(down)).noneMatch(o -> o instanceof DeliveryStore.GaveUp);
    }

    @Test
    void nothingOfACancelledNotificationIsHandedOver() {
        UUID n = store.notification(Priority.NORMAL);
        cancelled.add(n);
        List<UUID> recipients = new ArrayList<>();
        for (int i = 0; i < 20; i++) recipients.add(store.pending(n, Priority.NORMAL, "cancel-" + i));

        lane(Priority.NORMAL, properties(0, 8));

        await().atMost(Duration.ofSeconds(10)).until(() -> store.countOutcomes(n) == 20);
        assertThat(recipients).allMatch(r -> store.outcome(r) instanceof DeliveryStore.Cancelled);
        assertThat(provider.handedOver("cancel-")).isZero();
    }

    /**
     * A cancel that comes while a sender is between its cancel check and its provider having the request
     * waits for that send ({@link Lane#awaitStartedSends}), so nothing of the notification starts after the
     * cancel answered; the recipients after it see the mark and are never handed over.
     */
    @Test
    void aCancelWaitsForTheSendPastItsCheckAndTheRestAreNotHandedOver() throws Exception {
        UUID n = store.notification(Priority.NORMAL);
        UUID first = store.pending(n, Priority.NORMAL, "fenced-0");
        CountDownLatch handingOver = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        provider.beforeSend.put("fenced-0", () -> {
            handingOver.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Lane lane = lane(Priority.NORMAL, properties(0, 8));
        assertThat(handingOver.await(10, TimeUnit.SECONDS)).as("the send passed its check").isTrue();

        cancelled.add(n);
        CompletableFuture<Boolean> cancel = CompletableFuture.supplyAsync(() -> lane.awaitStartedSends(Duration.ofSeconds(30)));
        Thread.sleep(100);
        assertThat(cancel).as("the cancel waits for the request on its way out").isNotDone();
        for (int i = 1; i <= 20; i++) store.pending(n, Priority.NORMAL, "fenced-" + i);
        lane.signal();
        release.countDown();
        assertThat(cancel.get(10, TimeUnit.SECONDS)).isTrue();

        await().atMost(Duration.ofSeconds(10)).until(() -> store.countOutcomes(n) == 21);
        assertThat(store.outcome(first)).isInstanceOf(DeliveryStore.Accepted.class);
        assertThat(provider.handedOver("fenced-")).as("only the send past its check").isEqualTo(1);
    }

    @Test
    void placeholdersAreRenderedPerRecipient() {
        UUID n = store.notification(Priority.NORMAL);
        UUID r = store.pending(n, Priority.NORMAL, "render",
                new Renderer.Values("ada", Map.of("plan", "pro"), null, null));

        lane(Priority.NORMAL, properties(0, 8));

        await().atMost(Duration.ofSeconds(10)).until(() -> store.outcome(r) != null);
        PushMessage sent = provider.messages.get("render");
        assertThat(sent.title()).isEqualTo("Hi ada");
        assertThat(sent.body()).isEqualTo("Your plan: pro");
        assertThat(sent.priority()).isEqualTo(Priority.NORMAL);
    }

    // ---- fakes ----

    /** Holds the claimer's thread where a store waits for a pooled connection: parked until opened. */
    static final class Gate {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        void pass() {
            entered.countDown();
            try {
                open.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Answers on its own thread, like a provider's Netty I/O thread; holds back what it is told to. */
    static final class ScriptedProvider implements PushProvider {
        final ExecutorService io = Executors.newSingleThreadExecutor();
        final Map<String, Function<String, DeliveryResult>> scripts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> sends = new ConcurrentHashMap<>();
        final Map<String, PushMessage> messages = new ConcurrentHashMap<>();
        final List<Map.Entry<String, CompletableFuture<DeliveryResult>>> held = Collections.synchronizedList(new ArrayList<>());
        final Map<String, AtomicInteger> concurrent = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> maxConcurrent = new ConcurrentHashMap<>();
        volatile String holdPrefix;
        /** Runs in {@link #send} before the request is taken (a slow hand-over), by token. */
        final Map<String, Runnable> beforeSend = new ConcurrentHashMap<>();

        @Override
        public ProviderPreview preview(PushMessage message) {
            throw new UnsupportedOperationException("the lane tests never preview");
        }

        @Override
        public Platform platform() {
            return Platform.ANDROID;
        }

        void script(String token, Function<String, DeliveryResult> answer) {
            scripts.put(token, answer);
        }

        void holdTokensStartingWith(String prefix) {
            holdPrefix = prefix;
        }

        void answerAll(DeliveryResult result) {
            List<Map.Entry<String, CompletableFuture<DeliveryResult>>> now;
            synchronized (held) {
                holdPrefix = null;
                now = new ArrayList<>(held);
                held.clear();
            }
            for (var e : now) complete(e.getKey(), e.getValue(), result);
        }

        int handedOver(String prefix) {
            return sends.entrySet().stream().filter(e -> e.getKey().startsWith(prefix))
                    .mapToInt(e -> e.getValue().get()).sum();
        }

        int maxConcurrent(String prefix) {
            AtomicInteger max = maxConcurrent.get(prefix);
            return max == null ? 0 : max.get();
        }

        @Override
        public CompletableFuture<DeliveryResult> send(PushMessage message) {
            String token = message.token();
            Runnable before = beforeSend.get(token);
            if (before != null) before.run();
            sends.computeIfAbsent(token, t -> new AtomicInteger()).incrementAndGet();
            messages.put(token, message);
            String group = token.contains("-") ? token.substring(0, token.indexOf('-') + 1) : token;
            int now = concurrent.computeIfAbsent(group, g -> new AtomicInteger()).incrementAndGet();
            maxConcurrent.computeIfAbsent(group, g -> new AtomicInteger()).accumulateAndGet(now, Math::max);
            CompletableFuture<DeliveryResult> answer = new CompletableFuture<>();
            synchronized (held) {
                String prefix = holdPrefix;
                if (prefix != null && token.startsWith(prefix)) {
                    held.add(Map.entry(group, answer));
                    return answer;
                }
            }
            DeliveryResult result = scripts.getOrDefault(token, t -> new DeliveryResult.Accepted(null)).apply(token);
            if (result == null) { // scripted as a broken contract: the future fails instead of answering
                io.execute(() -> {
                    concurrent.get(group).decrementAndGet();
                    answer.completeExceptionally(new IllegalStateException("broken provider"));
                });
                return answer;
            }
            io.execute(() -> complete(group, answer, result));
            return answer;
        }

        private void complete(String group, CompletableFuture<DeliveryResult> answer, DeliveryResult result) {
            concurrent.get(group).decrementAndGet();
            io.execute(() -> answer.complete(result));
        }
    }

    /** Recipients in memory, claimed and recorded the way the real store does it. */
    static final class InMemoryStore implements DeliveryStore {
        final Map<UUID, Blueprint> blueprints = new ConcurrentHashMap<>();
        final Map<UUID, Row> rows = new ConcurrentHashMap<>();
        final List<Outcome> outcomes = new CopyOnWriteArrayList<>();

        static final class Row {
            final UUID id;
            final UUID notification;
            final Priority lane;
            final String token;
            final Renderer.Values values;
            String state = States.PENDING;
            Instant due = Instant.EPOCH;
            int attempts;
            Claimed claimed;

            Row(UUID id, UUID notification, Priority lane, String token, Renderer.Values values) {
                this.id = id;
                this.notification = notification;
                this.lane = lane;
                this.token = token;
                this.values = values;
            }
        }

        UUID notification(Priority priority) {
            UUID id = UUID.randomUUID();
            CompiledContent content = CompiledContent.compile(
                    new TemplateContent("Hi {{ external_user_id }}", "Your plan: {{ tags.plan }}", null, null, null),
                    (field, problem) -> {
                        throw new AssertionError(field + ": " + problem);
                    });
            blueprints.put(id, new Blueprint(id, UUID.randomUUID(), priority, InterruptionLevel.ACTIVE, content, null,
                    null, null, null, null, null, null, null, null, false, null));
            return id;
        }

        UUID pending(UUID notification, Priority lane, String token) {
            return pending(notification, lane, token, Renderer.Values.NONE);
        }

        UUID pending(UUID notification, Priority lane, String token, Renderer.Values values) {
            UUID id = UUID.randomUUID();
            rows.put(id, new Row(id, notification, lane, token, values));
            return id;
        }

        /** {@code count} recipients inserted sending by a fan-out page for a hand-over: leased, first attempt counted. */
        synchronized List<Claimed> handed(UUID notification, String tokenPrefix, int count) {
            List<Claimed> handed = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Row row = rows.get(pending(notification, Priority.BULK, tokenPrefix + "-" + i));
                row.state = States.SENDING;
                row.due = Instant.now().plus(Duration.ofMinutes(2));
                row.attempts = 1;
                row.claimed = new Claimed(notification, blueprints.get(notification).appId(), row.id, Platform.ANDROID,
                        row.token, 1, row.values);
                handed.add(row.claimed);
            }
            return handed;
        }

        Outcome outcome(UUID recipient) {
            List<Outcome> h = history(recipient);
            return h.isEmpty() ? null : h.getLast();
        }

        List<Outcome> history(UUID recipient) {
            return outcomes.stream().filter(o -> key(o.recipient()).equals(recipient)).toList();
        }

        static UUID key(Claimed c) {
            return c.deviceId();
        }

        Claimed claimed(UUID recipient) {
            synchronized (this) {
                return rows.get(recipient).claimed;
            }
        }

        long countOutcomes(UUID notification) {
            return outcomes.stream().filter(o -> o.recipient().notificationId().equals(notification))
                    .filter(o -> !(o instanceof Retry)).count();
        }

        final Map<Platform, AtomicInteger> claims = new ConcurrentHashMap<>();
        /** Runs once, on the claimer's thread, before the next claim of its platform: a wait for a pooled connection. */
        final Map<Platform, Runnable> beforeClaim = new ConcurrentHashMap<>();

        @Override
        public List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Duration lease, Apps apps) {
            claims.computeIfAbsent(platform, p -> new AtomicInteger()).incrementAndGet();
            Runnable before = beforeClaim.remove(platform);
            if (before != null) before.run();
            return claimDue(lane, platform, limit, now, lease, apps);
        }

        private synchronized List<Claimed> claimDue(Priority lane, Platform platform, int limit, Instant now, Duration lease,
                                                    Apps apps) {
            List<Claimed> claimed = new ArrayList<>();
            for (Row row : rows.values()) {
                if (claimed.size() >= limit) break;
                if (row.lane != lane || platform != Platform.ANDROID) continue;
                if (!apps.includes(blueprints.get(row.notification).appId())) continue;
                boolean due = !row.due.isAfter(now);
                if (!due || !(row.state.equals(States.PENDING) || row.state.equals(States.SENDING))) continue;
                row.state = States.SENDING;
                row.due = now.plus(lease);
                row.attempts++;
                row.claimed = new Claimed(row.notification, blueprints.get(row.notification).appId(),
                        row.id, Platform.ANDROID, row.token, row.attempts, row.values);
                claimed.add(row.claimed);
            }
            return claimed;
        }

        @Override
        public Optional<Blueprint> blueprint(UUID appId, UUID notificationId) {
            return Optional.ofNullable(blueprints.get(notificationId));
        }

        @Override
        public synchronized void record(List<Outcome> batch, Instant now) {
            for (Outcome o : batch) {
                Row row = rows.get(key(o.recipient()));
                switch (o) {
                    case Retry r -> {
                        row.state = States.PENDING;
                        row.due = r.at();
                    }
                    case Deferred d -> {
                        row.state = States.PENDING;
                        row.due = d.at();
                        row.attempts--;
                    }
                    case Accepted a -> row.state = States.ACCEPTED;
                    case Rejected r -> row.state = r.tokenInvalid() ? States.INVALID_TOKEN : States.FAILED;
                    case GaveUp g -> row.state = g.expired() ? States.EXPIRED : States.FAILED;
                    case Cancelled c -> row.state = States.CANCELLED;
                }
                outcomes.add(o);
            }
        }

        /** Notifications cancelled "by another instance": only {@link #cancelledAmong} tells the lane. */
        final java.util.Set<UUID> cancelledNotifications = ConcurrentHashMap.newKeySet();

        @Override
        public java.util.Set<UUID> cancelledAmong(java.util.Set<UUID> notificationIds) {
            java.util.Set<UUID> found = new java.util.HashSet<>(notificationIds);
            found.retainAll(cancelledNotifications);
            return found;
        }

        @Override
        public QueueStats stats(Priority lane, Instant now) {
            return QueueStats.EMPTY;
        }
    }
}
