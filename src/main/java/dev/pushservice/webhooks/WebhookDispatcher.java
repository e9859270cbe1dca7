package dev.pushservice.webhooks;

import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import dev.pushservice.platform.crypto.SecretBox;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The webhook worker (role {@code worker}): one thread that, every poll interval and whenever an
 * attempt finishes, relays new lifecycle facts into {@code webhook_deliveries}
 * ({@link WebhookRepository#relay}) and claims due deliveries ({@link WebhookRepository#claim}); each
 * claimed attempt runs on its own virtual thread through {@link WebhookSender}.
 *
 * <p>The relay skips no committed fact and relays none twice, whatever the commit order (it follows
 * transactions, not ids: {@link WebhookRepository#relay}); the claim takes endpoints and apps in
 * rounds from where the last claim stopped ({@link WebhookRepository#claim}), so every endpoint
 * with due work progresses, not the same few every pass.
 *
 * <p>Isolation: at most {@link WebhookProperties#perEndpointConcurrency()} attempts per endpoint (one
 * while the endpoint's attempts are failing) and {@link WebhookProperties#maxInFlight()} in all are
 * in flight from one instance; the claim skips an endpoint whose slots are full, so a slow or dead
 * endpoint holds only its own slots (each for at most the timeout) and never delays another
 * endpoint, the API or notification delivery (own threads, own HTTP client, a short transaction per
 * claim and per batch of outcomes on this loop thread only: an attempt never holds a connection).
 *
 * <p>Outcomes ({@link Schedule}): 2xx succeeds; 410 fails the delivery and disables the endpoint;
 * anything else (3xx included: redirects are not followed, 429, 5xx, other 4xx, timeouts, refused
 * addresses) is retried on the schedule, or later when the endpoint's {@code Retry-After} on a 429
 * or 5xx asks for longer (never sooner); after the last attempt the delivery is failed. An endpoint
 * whose attempts have all failed for {@link WebhookProperties#disableAfter()} is disabled with the
 * reason on its read.
 */
@Component
class WebhookDispatcher implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(WebhookDispatcher.class);
    /** Facts relayed per pass, about (a transaction's facts are never split: see the relay). */
    static final int RELAY_BATCH = 5000;
    /** Apps whose round-robin position the claim remembers (see {@link #next}). */
    private static final int ROTATION_APPS = 10_000;

    private final WebhookRepository repository;
    private final TransactionTemplate transaction;
    /** Read committed whatever the database's default: the relay's second statement needs a snapshot of its own. */
    private final TransactionTemplate relayTransaction;
    private final ObjectProvider<SecretBox> secretBox;
    private SecretBox secrets;
    private final WebhookProperties properties;
    private final Clock clock;
    private final boolean enabled;
    private final Map<UUID, AtomicInteger> inFlight = new ConcurrentHashMap<>();
    private final Semaphore capacity;
    private final java.util.concurrent.ConcurrentLinkedQueue<Finished> finished = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final Object wake = new Object();
    /** The claim's round-robin position; read and written by the loop thread only. */
    private WebhookRepository.Rotation rotation = WebhookRepository.Rotation.EMPTY;
    private volatile boolean running;
    private Thread loop;
    private ExecutorService attempts;
    private WebhookSender sender;

    /** The secret box is taken only when the worker starts: the admin CLI (no worker role) never builds one. */
    WebhookDispatcher(WebhookRepository repository, TransactionTemplate transaction, ObjectProvider<SecretBox> secretBox,
                      WebhookProperties properties, PushProperties push, Clock clock) {
        this.repository = repository;
        this.transaction = transaction;
        this.relayTransaction = new TransactionTemplate(transaction.getTransactionManager());
        this.relayTransaction.setIsolationLevel(org.springframework.transaction.TransactionDefinition.ISOLATION_READ_COMMITTED);
        this.secretBox = secretBox;
        this.properties = properties;
        this.clock = clock;
        this.enabled = push.hasRole(Role.WORKER);
        this.capacity = new Semaphore(properties.maxInFlight());
    }

    @Override
    public void start() {
        if (!enabled || running) return;
        secrets = secretBox.getObject();
        sender = new WebhookSender(properties, clock);
        attempts = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("webhook-attempt-", 0).factory());
        running = true;
        loop = Thread.ofPlatform().name("webhook-dispatcher").daemon().start(this::run);
    }

    /** A finished attempt waiting to be recorded by the loop, with its webhook and what it comes to. */
    private record Finished(UUID webhookId, WebhookRepository.Attempt attempt, String disableReason) {
    }

    private void run() {
        long lastRelay = 0;
        while (running) {
            try {
                int recorded = recordFinished();
                boolean more = false;
                if (System.nanoTime() - lastRelay >= properties.pollInterval().toNanos()) {
                    more = relay();
                    lastRelay = more ? 0 : System.nanoTime();
                }
                int claimed = claimAndSend();
                if (recorded == 0 && !more && claimed == 0) {
                    synchronized (wake) {
                        if (finished.isEmpty()) wake.wait(properties.pollInterval().toMillis());
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                log.warn("Webhook dispatch pass failed; retrying in {}: {}", properties.pollInterval(), e.toString());
                sleep(properties.pollInterval());
            }
        }
        recordFinished();
    }

    /**
     * One relay pass in its own transaction: the lock on the relay's row first, then the pass as a
     * second statement (its snapshot must be taken after the lock: {@link WebhookRepository#lockRelay}).
     * While another worker relays, this one skips the pass.
     *
     * @return whether more facts are ready now (the next pass should not wait)
     */
    private boolean relay() {
        WebhookRepository.Relayed relayed = relayTransaction.execute(s ->
                repository.lockRelay() ? repository.relay(RELAY_BATCH, clock.instant()) : null);
        return relayed != null && relayed.more();
    }

    /**
     * Records every finished attempt in one transaction: one set-based update of the deliveries, one
     * for the webhooks that had a success, and per failing webhook its streak (and disabling). A
     * finished attempt frees its slots only once recorded, so the claim never sees it twice.
     */
    private int recordFinished() {
        List<Finished> batch = new ArrayList<>();
        Finished f;
        while ((f = finished.poll()) != null) batch.add(f);
        if (batch.isEmpty()) return 0;
        try {
            transaction.executeWithoutResult(s -> {
                repository.recordAttempts(batch.stream().map(Finished::attempt).toList());
                java.util.Set<UUID> succeeded = new java.util.HashSet<>();
                Map<UUID, Finished> failed = new java.util.LinkedHashMap<>();
                for (Finished x : batch) {
                    if (x.attempt().succeeded()) succeeded.add(x.webhookId());
                    else if (x.disableReason() != null || !failed.containsKey(x.webhookId())) failed.put(x.webhookId(), x);
                }
                repository.endFailureStreaks(succeeded);
                Instant now = clock.instant();
                failed.forEach((webhook, x) -> {
                    if (succeeded.contains(webhook)) return;
                    if (x.disableReason() != null) {
                        repository.disable(webhook, x.disableReason(), now);
                        return;
                    }
                    Instant since = repository.failing(webhook, now);
                    if (!since.plus(properties.disableAfter()).isAfter(now)) {
                        repository.disable(webhook, "every attempt has failed since " + since + " (longer than "
                                + properties.disableAfter() + ")", now);
                    }
                });
            });
        } catch (RuntimeException e) {
            // not recorded: each delivery runs again once its lease has passed (at-least-once)
            log.warn("Recording {} webhook attempts failed; they run again after their lease: {}", batch.size(), e.toString());
        } finally {
            for (Finished x : batch) {
                inFlight.get(x.webhookId()).decrementAndGet();
                capacity.release();
            }
        }
        return batch.size();
    }

    private int claimAndSend() {
        int free = capacity.availablePermits();
        if (free == 0) return 0;
        Map<UUID, Integer> busy = new java.util.HashMap<>();
        inFlight.forEach((id, n) -> {
            if (n.get() > 0) busy.put(id, n.get());
        });
        Instant now = clock.instant();
        Instant lease = now.plus(properties.timeout()).plus(properties.timeout()).plusSeconds(30);
        WebhookRepository.Rotation from = rotation;
        List<WebhookRepository.Claimed> claimed = transaction.execute(s ->
                repository.claim(busy, from, properties.perEndpointConcurrency(), free, now, lease));
        if (!claimed.isEmpty()) rotation = next(rotation, claimed);
        for (WebhookRepository.Claimed c : claimed) {
            capacity.acquireUninterruptibly();
            inFlight.computeIfAbsent(c.webhookId(), k -> new AtomicInteger()).incrementAndGet();
            attempts.execute(() -> {
                Finished done;
                try {
                    done = attempt(c);
                } catch (RuntimeException e) {
                    log.warn("Webhook attempt {} failed unexpectedly; it runs again after its lease: {}", c.deliveryId(), e.toString());
                    done = null;
                }
                if (done == null) {
                    inFlight.get(c.webhookId()).decrementAndGet();
                    capacity.release();
                    return;
                }
                finished.add(done);
                synchronized (wake) {
                    wake.notifyAll();
                }
            });
        }
        return claimed.size();
    }

    /** Where the next claim's rotation starts: after the last endpoint served per app and the last app. */
    private static WebhookRepository.Rotation next(WebhookRepository.Rotation from, List<WebhookRepository.Claimed> claimed) {
        // an app without due work keeps its place; past ROTATION_APPS apps the places start over (the
        // map is sent with every claim), which costs an app at most one round's position
        Map<UUID, UUID> last = from.lastEndpointOfApp().size() >= ROTATION_APPS ? new java.util.HashMap<>()
                : new java.util.HashMap<>(from.lastEndpointOfApp());
        for (WebhookRepository.Claimed c : claimed) last.put(c.appId(), c.webhookId());
        return new WebhookRepository.Rotation(Map.copyOf(last), claimed.getLast().appId());
    }

    private Finished attempt(WebhookRepository.Claimed c) {
        List<String> keys = new ArrayList<>(2);
        String context = WebhookService.secretContext(c.webhookId());
        keys.add(new String(secrets.open(c.secret(), context), StandardCharsets.UTF_8));
        if (c.previousSecret() != null && c.previousSecretUntil() != null && clock.instant().isBefore(c.previousSecretUntil())) {
            keys.add(new String(secrets.open(c.previousSecret(), context), StandardCharsets.UTF_8));
        }
        WebhookSender.Answer answer = sender.send(c.url(), c.deliveryId(), c.body(), keys);
        Instant now = clock.instant();
        Schedule.Outcome outcome = Schedule.judge(answer, c.attempts(), now);
        return new Finished(c.webhookId(), new WebhookRepository.Attempt(c.deliveryId(), outcome.succeeded(),
                answer.status() == 0 ? null : answer.status(), answer.error() != null ? answer.error() : outcome.error(),
                answer.latencyMillis(), outcome.nextAttemptAt(), now), outcome.disableReason());
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void stop() {
        if (!running) return;
        running = false;
        try {
            // attempts in flight finish (each within the timeout); one cut short runs again after its lease
            attempts.shutdown();
            attempts.awaitTermination(properties.timeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
            synchronized (wake) {
                wake.notifyAll();
            }
            loop.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        recordFinished();
        sender.close();
    }

    /** Attempts this instance has in flight now (claimed and not yet recorded), all endpoints. */
    int inFlight() {
        return properties.maxInFlight() - capacity.availablePermits();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Stops before the database pool closes and after the web server. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}
