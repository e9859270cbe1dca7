package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import com.eatthepath.pushy.apns.server.RejectedNotificationException;
import com.eatthepath.pushy.apns.server.RejectionReason;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.DroppingProxy;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Provider faults met end to end, against real protocol peers: an APNs peer behind a relay the test
 * takes down and brings back (as a peer killed and restarted), an APNs peer answering 503, and the
 * local FCM server answering 429 without {@code Retry-After}. Short settings make "longer than the
 * maximum attempts" a few seconds: 2 attempts, backoff up to 200 ms, a 1 s request timeout, the
 * breaker opening after 3 failures and probing every 200 ms to 1 s.
 */
class ProviderOutageTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration WAIT = Duration.ofSeconds(90);
    /** What a peer that is down makes a send fail with (and its circuit's reason). */
    private static final List<String> OUTAGE_CODES = List.of("connection_failed", "timeout", "provider_unavailable");
    private static final ApnsTestPeer APNS;
    private static final DroppingProxy RELAY;
    private static final LocalFcmServer FCM;
    private static final Path CA;
    /** Requests the APNs peer received, per device token. */
    private static final ConcurrentHashMap<String, AtomicInteger> APNS_RECEIVED = new ConcurrentHashMap<>();
    private static volatile PushNotificationHandler apnsAnswer = (headers, payload) -> { };

    static {
        try {
            APNS = ApnsTestPeer.startAcceptingSilently();
            APNS.answer((PushNotificationHandler) (headers, payload) -> {
                APNS_RECEIVED.computeIfAbsent(ApnsTestPeer.deviceToken(headers), t -> new AtomicInteger()).incrementAndGet();
                apnsAnswer.handlePushNotification(headers, payload);
            });
            RELAY = new DroppingProxy(APNS.port());
            CA = ApnsTestPeer.writeCa(Files.createTempDirectory("provider-outage-tests"));
            FCM = new LocalFcmServer(0).start();
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void peers(DynamicPropertyRegistry registry) {
        registry.add("push.apns.host", () -> "localhost");
        registry.add("push.apns.port", RELAY::port);
        registry.add("push.apns.trusted-ca-file", CA::toString);
        registry.add("push.apns.request-timeout", () -> "1s");
        registry.add("push.apns.connect-timeout", () -> "500ms");
        registry.add("push.fcm.base-url", () -> FCM.baseUrl().toString());
        registry.add("push.delivery.max-attempts", () -> "2");
        registry.add("push.delivery.initial-backoff", () -> "50ms");
        registry.add("push.delivery.max-backoff", () -> "200ms");
        registry.add("push.delivery.breaker.failure-threshold", () -> "3");
        registry.add("push.delivery.breaker.probe-interval", () -> "200ms");
        registry.add("push.delivery.breaker.max-probe-interval", () -> "1s");
        registry.add("push.delivery.breaker.priority-rate", () -> "4");
        registry.add("push.notifications.reconcile-interval", () -> "1s");
        // a small in-flight window, so "how many requests before the sends stop" is not all of them
        registry.add("push.delivery.lanes.normal.in-flight", () -> "4");
    }

    @Autowired
    JdbcClient jdbc;

    @Autowired
    TestClock clock;

    @AfterEach
    void restore() throws Exception {
        RELAY.up();
        apnsAnswer = (headers, payload) -> { };
        clock.reset();
    }

    /**
     * The APNs peer goes away (connections cut, new ones refused) for far longer than two attempts
     * with their backoff, then comes back: every recipient ends accepted, none failed or
     * dead-lettered, and the open circuit was on /health, /status and the metric meanwhile.
     */
    @Test
    void anApnsOutageLongerThanTheAttemptsIsWaitedOutAndEveryRecipientEndsAccepted() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String token = apnsToken();
            tokens.add(token);
            register(app, "ios", token);
        }
        RELAY.down();
        String id = send(app, "{\"title\":\"Down\",\"body\":\"and up\",\"ttl\":3600,\"target\":{\"type\":\"all\"}}");

        // the circuit opens and recipients wait (without a breaker they run out of attempts: then the
        // notification ends, and the assertions below say how)
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") != null || terminal(app, id));
        JsonNode circuit = circuitOf(app, "ios");
        String status = api.get("/status", null).body();
        String metrics = api.get("/actuator/prometheus", null).body();
        // down for many times two attempts with their backoff (0.4 s)
        Thread.sleep(4_000);
        RELAY.up();

        JsonNode done = finished(app, id);
        JsonNode rows = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
        assertThat(rows).hasSize(20);
        assertThat(rows).allSatisfy(r -> assertThat(r.path("status").asString()).as(r.toString()).isEqualTo("accepted"));
        assertThat(done.path("status").asString()).isEqualTo("completed");
        assertThat(tokens).allSatisfy(t -> assertThat(APNS_RECEIVED).containsKey(t));
        assertThat(jdbc.sql("select count(*) from dead_letter_jobs where task_instance like :n")
                .param("n", "notification " + id + "%").query(Long.class).single()).isZero();

        assertThat(circuit).as("the open circuit on /health").isNotNull();
        assertThat(circuit.path("state").asString()).isIn("open", "probing");
        assertThat(circuit.path("reason").asString()).isIn("connection_failed", "timeout");
        assertThat(status).contains("Providers").contains(app.appId().toString());
        assertThat(gauge(metrics, "push_provider_circuits_open", "ios")).isGreaterThanOrEqualTo(1);
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") == null);
    }

    /**
     * While an app's APNs circuit is open its waiting recipients are not claimed: across several poll
     * and probe intervals their rows are not written (no lease taken, no attempt counted, nothing
     * deferred), but for the one recipient each probe claims. Before the claim left open circuits out,
     * every recipient was claimed and put back once per probe interval. When the peer returns, the
     * closing circuit wakes the lanes and every recipient is accepted.
     */
    @Test
    void whileAnApnsCircuitIsOpenItsWaitingRecipientsAreNotClaimed() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            String token = apnsToken();
            tokens.add(token);
            register(app, "ios", token);
        }
        RELAY.down();
        String id = send(app, "{\"title\":\"Down\",\"body\":\"wait\",\"ttl\":3600,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") != null);
        // every recipient has its row (those handed over get theirs as they are put back) and what was in
        // flight when the circuit opened has come back
        await().atMost(WAIT).until(() -> rowStates(id).size() == 40);
        Thread.sleep(1_500);

        Map<UUID, String> before = rowStates(id);
        double probes = counter(api.get("/actuator/prometheus", null).body(), "push_provider_circuit_probes_total", "ios");
        Thread.sleep(4_000); // four poll intervals; the probe interval grows from 200 ms to 1 s meanwhile
        Map<UUID, String> after = rowStates(id);
        double probed = counter(api.get("/actuator/prometheus", null).body(), "push_provider_circuit_probes_total", "ios") - probes;
        long touched = before.keySet().stream().filter(d -> !before.get(d).equals(after.get(d))).count();

        assertThat(circuitOf(app, "ios")).as("still open").isNotNull();
        // + 2: a probe claimed just before the first look may be recorded after it, and one claimed as the
        // probe may find the previous probe still out (it is then put back)
        assertThat((double) touched).as("rows written while the circuit was open: the probes' only")
                .isLessThanOrEqualTo(probed + 2);
        assertThat(touched).as("far fewer than the 40 waiting recipients").isLessThan(10);

        RELAY.up();
        JsonNode done = finished(app, id);
        assertThat(done.path("status").asString()).isEqualTo("completed");
        assertThat(api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data"))
                .hasSize(40).allSatisfy(r -> assertThat(r.path("status").asString()).isEqualTo("accepted"));
        assertThat(tokens).allSatisfy(t -> assertThat(APNS_RECEIVED).containsKey(t));
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") == null);
    }

    /** Per device, what a claim or a record changes in its recipient row of {@code notificationId}. */
    private Map<UUID, String> rowStates(String notificationId) {
        Map<UUID, String> states = new java.util.HashMap<>();
        jdbc.sql("""
                        select device_id, concat_ws('|', status, attempts, next_attempt_at, updated_at, last_error)
                        from notification_recipients where notification_id = :n
                        union all -- accepted at their first attempt after a hand-over: batch members (V58)
                        select m.device_id, concat_ws('|', 'accepted', 1, b.recorded_at, b.recorded_at, null)
                        from notification_recipient_batches b cross join lateral unnest(b.device_ids) as m(device_id)
                        where b.notification_id = :n""")
                .param("n", UUID.fromString(notificationId))
                .query((java.sql.ResultSet rs) -> {
                    states.put(rs.getObject(1, UUID.class), rs.getString(2));
                });
        return states;
    }

    /**
     * An APNs peer that answers every request 503: once the circuit is open, the only requests that
     * reach it are the probes, however many recipients wait; when it answers again they all go.
     */
    @Test
    void whileACircuitIsOpenOnlyProbesReachTheProvider() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            String token = apnsToken();
            tokens.add(token);
            register(app, "ios", token);
        }
        apnsAnswer = (headers, payload) -> {
            throw new RejectedNotificationException(RejectionReason.SERVICE_UNAVAILABLE);
        };
        String id = send(app, "{\"title\":\"Busy\",\"body\":\"503\",\"ttl\":3600,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") != null);
        Thread.sleep(1_500); // the answers to what was in flight when it opened come back

        double probes = counter(api.get("/actuator/prometheus", null).body(), "push_provider_circuit_probes_total", "ios");
        long received = received(tokens);
        Thread.sleep(3_000);
        long receivedWhileOpen = received(tokens) - received;
        double probed = counter(api.get("/actuator/prometheus", null).body(), "push_provider_circuit_probes_total", "ios") - probes;

        assertThat(probed).as("probes while open").isGreaterThanOrEqualTo(1);
        // + 1: a probe let out just before the first count may reach the peer just after it
        assertThat((double) receivedWhileOpen).as("requests at the peer while open: the probes only")
                .isLessThanOrEqualTo(probed + 1);
        assertThat(receivedWhileOpen).as("far fewer than one per waiting recipient").isLessThan(tokens.size());

        apnsAnswer = (headers, payload) -> { };
        JsonNode done = finished(app, id);
        assertThat(done.path("status").asString()).isEqualTo("completed");
        JsonNode rows = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
        assertThat(rows).hasSize(30).allSatisfy(r -> assertThat(r.path("status").asString()).isEqualTo("accepted"));
    }

    /**
     * FCM answers 429 QUOTA_EXCEEDED without Retry-After: the project (the app's FCM credential) pauses
     * for at least 60 s, its recipients and those of a later notification alike, each scheduled no
     * earlier than 60 s after the 429 (read from the database, not timed). Once the clock is past the
     * pause and FCM answers again, they are all accepted.
     */
    @Test
    void a429WithoutRetryAfterPausesTheFcmProjectForAtLeastSixtySeconds() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String token = "fcm-" + UUID.randomUUID();
            tokens.add(token);
            FCM.replyFor(token, LocalFcmServer.Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "quota exceeded"));
            register(app, "android", token);
        }
        Instant before = clock.instant();
        String first = send(app, "{\"title\":\"Quota\",\"body\":\"429\",\"ttl\":86400,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> circuitOf(app, "android") != null);
        await().atMost(WAIT).until(() -> pendingRows(first).size() == 5
                && pendingRows(first).stream().allMatch(r -> r.lastError() != null));
        long requestsAtPause = FCM.sendsAnswered();

        String later = send(app, "{\"title\":\"Later\",\"body\":\"same project\",\"ttl\":86400,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> pendingRows(later).size() == 5
                && pendingRows(later).stream().allMatch(r -> "rate_limited".equals(r.lastError())));

        Instant floor = before.plusSeconds(60);
        for (String id : List.of(first, later)) {
            assertThat(pendingRows(id)).allSatisfy(r -> {
                assertThat(r.lastError()).isEqualTo("rate_limited");
                assertThat(r.nextAttemptAt()).as("scheduled at least 60 s after the 429").isAfterOrEqualTo(floor);
            });
        }
        assertThat(pendingRows(later)).as("the later notification never spent an attempt")
                .allSatisfy(r -> assertThat(r.attempts()).isZero());
        assertThat(FCM.sendsAnswered()).as("no request to FCM while paused").isEqualTo(requestsAtPause);

        for (String token : tokens) FCM.replyFor(token, LocalFcmServer.Reply.ok());
        clock.advance(Duration.ofMinutes(3));
        for (String id : List.of(first, later)) {
            assertThat(finished(app, id).path("status").asString()).isEqualTo("completed");
            assertThat(api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data"))
                    .hasSize(5).allSatisfy(r -> assertThat(r.path("status").asString()).isEqualTo("accepted"));
        }
    }

    /**
     * While a 429 without Retry-After pauses the app's FCM project for 60 s, transactional sends to that
     * project still go, at the priority rate (4 a second here), and the bulk's recipients keep waiting
     * without a request. A 429 to a transactional send reschedules that recipient alone, at least 60 s
     * later, and leaves the project's pause as it was. Before, a transactional send waited the whole pause.
     */
    @Test
    void transactionalSendsPassAnFcmRateLimitPauseAtThePriorityRateWhileTheBulkWaits() throws Exception {
        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 5; i++) {
            String token = "fcm-bulk-" + UUID.randomUUID();
            FCM.replyFor(token, LocalFcmServer.Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "quota exceeded"));
            register(app, "android", token);
        }
        String bulk = send(app, "{\"title\":\"Campaign\",\"body\":\"bulk\",\"priority\":\"bulk\",\"ttl\":86400,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> circuitOf(app, "android") != null);
        await().atMost(WAIT).until(() -> pendingRows(bulk).size() == 5
                && pendingRows(bulk).stream().allMatch(r -> "rate_limited".equals(r.lastError())));
        Instant pauseEnd = Instant.parse(circuitOf(app, "android").path("retry_at").asString());
        assertThat(pauseEnd).isAfter(clock.instant().plusSeconds(30));
        List<Pending> bulkWaiting = pendingRows(bulk);
        long requestsAtPause = FCM.sendsAnswered();

        // one transactional send: accepted at once, not after the pause
        register(app, "android", "fcm-otp-" + UUID.randomUUID(), "otp-user");
        long started = System.nanoTime();
        String otp = send(app, "{\"title\":\"Code\",\"body\":\"123456\",\"priority\":\"transactional\","
                + "\"target\":{\"type\":\"user\",\"external_user_id\":\"otp-user\"}}");
        assertThat(finished(app, otp, Duration.ofSeconds(20)).path("status").asString()).isEqualTo("completed");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("a transactional send during the pause")
                .isLessThan(Duration.ofSeconds(15));
        assertThat(recipientsOf(app, otp)).singleElement()
                .satisfies(r -> assertThat(r.path("status").asString()).isEqualTo("accepted"));

        // a transactional send answered 429: that recipient backs off 60 s on its own; the pause is unchanged
        String limited = "fcm-otp-limited-" + UUID.randomUUID();
        FCM.replyFor(limited, LocalFcmServer.Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "quota exceeded"));
        register(app, "android", limited, "limited-user");
        Instant sentAt = clock.instant();
        String refused = send(app, "{\"title\":\"Code\",\"body\":\"654321\",\"priority\":\"transactional\",\"ttl\":86400,"
                + "\"target\":{\"type\":\"user\",\"external_user_id\":\"limited-user\"}}");
        await().atMost(Duration.ofSeconds(20)).until(() -> pendingRows(refused).size() == 1
                && "rate_limited".equals(pendingRows(refused).getFirst().lastError()));
        assertThat(pendingRows(refused).getFirst().nextAttemptAt()).as("its own backoff: at least 60 s")
                .isAfterOrEqualTo(sentAt.plusSeconds(60));
        assertThat(Instant.parse(circuitOf(app, "android").path("retry_at").asString()))
                .as("the project's pause, neither extended nor doubled").isEqualTo(pauseEnd);

        // twelve transactional recipients at once: at most 4 a second (a second's worth at once)
        for (int i = 0; i < 12; i++) register(app, "android", "fcm-batch-" + UUID.randomUUID(), "batch-user");
        String batch = send(app, "{\"title\":\"Alert\",\"body\":\"to twelve\",\"priority\":\"transactional\","
                + "\"target\":{\"type\":\"user\",\"external_user_id\":\"batch-user\"}}");
        assertThat(finished(app, batch, Duration.ofSeconds(30)).path("status").asString()).isEqualTo("completed");
        List<Instant> accepted = jdbc.sql("""
                        select updated_at from notification_recipient_states where notification_id = :n and status = 'accepted'
                        order by updated_at""")
                .param("n", UUID.fromString(batch)).query((rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant()).list();
        assertThat(accepted).hasSize(12);
        assertThat(Duration.between(accepted.getFirst(), accepted.getLast()))
                .as("12 sends at 4 a second, 4 at once: the last at least 2 s after the first (1 s of slack)")
                .isGreaterThanOrEqualTo(Duration.ofSeconds(1));

        // the bulk waited throughout: its rows untouched, FCM asked for nothing but the 14 transactional sends
        assertThat(pendingRows(bulk)).containsExactlyInAnyOrderElementsOf(bulkWaiting);
        assertThat(FCM.sendsAnswered() - requestsAtPause).isEqualTo(14);
        assertThat(circuitOf(app, "android")).as("still paused").isNotNull();
    }

    /**
     * The APNs peer stays down past a short TTL: the iOS recipients waiting behind the open circuit end
     * {@code expired} (keeping their provider failure as {@code last_error}, or {@code ttl_expired} when never tried)
     * within a few reconciler intervals (1 s here) of their TTL, and
     * the notification completes with exact counts (its Android recipient accepted). Before, nothing
     * claimed them while the circuit was open but a probe now and then (about one a second here: a minute
     * for these 60): they stayed pending past their TTL and the notification processing.
     */
    @Test
    void recipientsWaitingBehindAnOpenCircuitExpireWithinAReconcilerIntervalOfTheirTtl() throws Exception {
        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 60; i++) register(app, "ios", apnsToken());
        register(app, "android", "fcm-" + UUID.randomUUID());
        RELAY.down();
        String id = send(app, "{\"title\":\"Soon\",\"body\":\"or never\",\"ttl\":60,\"target\":{\"type\":\"all\"}}");
        await().atMost(WAIT).until(() -> circuitOf(app, "ios") != null);
        await().atMost(WAIT).until(() -> {
            Map<UUID, String> rows = rowStates(id);
            return rows.size() == 61 && rows.values().stream().filter(r -> r.startsWith("accepted|")).count() == 1
                    && rows.values().stream().filter(r -> r.startsWith("pending|")).count() == 60;
        });
        assertThat(api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()).isEqualTo("processing");
        Map<UUID, String> failedBefore = new java.util.HashMap<>(); // device -> its failure while it waited
        jdbc.sql("select device_id, last_error from notification_recipients where notification_id = :n and last_error is not null")
                .param("n", UUID.fromString(id))
                .query((java.sql.ResultSet rs) -> {
                    failedBefore.put(rs.getObject(1, UUID.class), rs.getString(2));
                });
        assertThat(failedBefore.values()).as("the sends before the circuit opened failed").isNotEmpty()
                .allSatisfy(e -> assertThat(e).isIn(OUTAGE_CODES));

        clock.advance(Duration.ofSeconds(61)); // past the TTL; the peer is still down
        long past = System.nanoTime();
        JsonNode done = finished(app, id, Duration.ofSeconds(20));
        Duration took = Duration.ofNanos(System.nanoTime() - past);

        assertThat(done.path("status").asString()).isEqualTo("completed");
        assertThat(done.path("accepted_count").asLong()).isEqualTo(1);
        assertThat(done.path("failed_count").asLong()).as("expired counts as failed").isEqualTo(60);
        JsonNode rows = recipientsOf(app, id);
        assertThat(rows).hasSize(61);
        // an expired recipient keeps the failure that held it back; one never tried says ttl_expired (a probe may
        // still have tried it after the read above: then it has the outage's code)
        assertThat(rows).filteredOn(r -> r.path("platform").asString().equals("ios")).hasSize(60).allSatisfy(r -> {
            assertThat(r.path("status").asString()).isEqualTo("expired");
            String error = r.path("last_error").asString();
            if (failedBefore.containsKey(UUID.fromString(r.path("device_id").asString()))) {
                assertThat(error).as("kept its provider failure").isIn(OUTAGE_CODES);
            } else {
                assertThat(error).isIn("ttl_expired", "connection_failed", "timeout", "provider_unavailable");
            }
        });
        assertThat(took).as("within a few reconciler intervals of the TTL").isLessThan(Duration.ofSeconds(20));
        assertThat(circuitOf(app, "ios")).as("the peer is still down").isNotNull();
    }

    private JsonNode recipientsOf(TestApp app, String id) {
        return api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
    }

    /**
     * APNs refuses the app's signing key (InvalidProviderToken, as for a revoked .p8 key): the rest of
     * a 40-device send ends credentials_invalid after no more requests than the in-flight window, the
     * settings read says so (APNs' reason, when), and setting new credentials clears it and sends again.
     */
    @Test
    void aRefusedApnsKeyEndsTheRestOfTheSendAtOnceUntilTheCredentialsChange() throws Exception {
        TestApp app = newApp();
        credentials(app);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            String token = apnsToken();
            tokens.add(token);
            register(app, "ios", token);
        }
        apnsAnswer = (headers, payload) -> {
            throw new RejectedNotificationException(RejectionReason.INVALID_PROVIDER_TOKEN);
        };
        String id = send(app, "{\"title\":\"Revoked\",\"body\":\"key\",\"target\":{\"type\":\"all\"}}");
        finished(app, id);

        JsonNode rows = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
        assertThat(rows).hasSize(40).allSatisfy(r -> {
            assertThat(r.path("status").asString()).isEqualTo("failed");
            assertThat(r.path("last_error").asString()).isEqualTo("credentials_invalid");
        });
        assertThat(received(tokens)).as("requests APNs received for the 40 recipients (in-flight window: 4)")
                .isLessThanOrEqualTo(8);

        await().atMost(WAIT).until(() -> !api.get("/v1/app/settings", app.serverKey()).json().path("apns").path("invalid").isMissingNode());
        JsonNode invalid = api.get("/v1/app/settings", app.serverKey()).json().path("apns").path("invalid");
        assertThat(invalid.path("reason").asString()).contains("InvalidProviderToken");
        assertThat(Instant.parse(invalid.path("detected_at").asString())).isBeforeOrEqualTo(clock.instant());

        apnsAnswer = (headers, payload) -> { };
        credentials(app); // a new key: a new credential version
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("apns").has("invalid")).isFalse();
        String again = send(app, "{\"title\":\"New key\",\"body\":\"works\",\"target\":{\"type\":\"all\"}}");
        finished(app, again);
        assertThat(api.get("/v1/notifications/" + again + "/recipients?limit=100", app.serverKey()).json().path("data"))
                .hasSize(40).allSatisfy(r -> assertThat(r.path("status").asString()).isEqualTo("accepted"));
    }

    /**
     * FCM refuses the app's service account (401 UNAUTHENTICATED, as for a deleted key): the rest of a
     * 40-device send ends credentials_invalid after no more requests than the in-flight window, and the
     * settings read says so.
     */
    @Test
    void aRefusedFcmServiceAccountEndsTheRestOfTheSendAtOnce() throws Exception {
        TestApp app = newApp();
        credentials(app);
        for (int i = 0; i < 40; i++) {
            String token = "fcm-" + UUID.randomUUID();
            FCM.replyFor(token, LocalFcmServer.Reply.error(401, "UNAUTHENTICATED", null,
                    "Request had invalid authentication credentials."));
            register(app, "android", token);
        }
        long before = FCM.sendsAnswered();
        String id = send(app, "{\"title\":\"Revoked\",\"body\":\"service account\",\"target\":{\"type\":\"all\"}}");
        finished(app, id);

        assertThat(api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data"))
                .hasSize(40).allSatisfy(r -> {
                    assertThat(r.path("status").asString()).isEqualTo("failed");
                    assertThat(r.path("last_error").asString()).isEqualTo("credentials_invalid");
                });
        assertThat(FCM.sendsAnswered() - before).as("requests FCM answered for the 40 recipients (in-flight window: 4)")
                .isLessThanOrEqualTo(8);
        await().atMost(WAIT).until(() -> !api.get("/v1/app/settings", app.serverKey()).json().path("fcm").path("invalid").isMissingNode());
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("fcm").path("invalid").path("reason").asString())
                .contains("UNAUTHENTICATED");
    }

    /**
     * One registered token belongs to another Firebase project (SENDER_ID_MISMATCH): that recipient
     * fails sender_mismatch, but the app's credentials are not marked refused and its other devices
     * keep receiving, in this send and the next. A token is chosen by whoever registers it with the
     * public key: it must not be able to stop the app's sends.
     */
    @Test
    void aTokenOfAnotherFirebaseProjectStopsNoOtherRecipient() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String foreign = "fcm-foreign-" + UUID.randomUUID();
        FCM.replyFor(foreign, LocalFcmServer.Reply.error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch"));
        register(app, "android", foreign);
        for (int i = 0; i < 20; i++) register(app, "android", "fcm-" + UUID.randomUUID());

        for (String title : List.of("First", "Second")) {
            String id = send(app, "{\"title\":\"" + title + "\",\"body\":\"to all\",\"target\":{\"type\":\"all\"}}");
            finished(app, id);
            JsonNode rows = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
            assertThat(rows).hasSize(21);
            assertThat(rows).filteredOn(r -> r.path("status").asString().equals("accepted")).hasSize(20);
            assertThat(rows).filteredOn(r -> r.path("status").asString().equals("failed"))
                    .singleElement().satisfies(r -> assertThat(r.path("last_error").asString()).isEqualTo("sender_mismatch"));
        }
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("fcm").has("invalid")).isFalse();
    }

    /**
     * The credentials check asks each provider without showing anything to a person: ok for good
     * credentials; APNs refusing the key and an FCM service account its token endpoint does not know are
     * invalid with the provider's reason; an app without credentials is not_configured.
     */
    @Test
    void theCredentialsCheckAnswersOkForGoodCredentialsAndTheReasonForBadOnes() throws Exception {
        TestApp good = newApp();
        credentials(good);
        JsonNode ok = check(good);
        assertThat(ok.path("apns").path("status").asString()).as(ok.toString()).isEqualTo("ok");
        assertThat(ok.path("fcm").path("status").asString()).as(ok.toString()).isEqualTo("ok");
        assertThat(ok.path("webpush").path("status").asString()).as(ok.toString()).isEqualTo("ok");

        TestApp none = newApp();
        JsonNode unset = check(none);
        assertThat(unset.path("apns").path("status").asString()).isEqualTo("not_configured");
        assertThat(unset.path("fcm").path("status").asString()).isEqualTo("not_configured");

        TestApp bad = newApp();
        LocalServiceAccount unknown = LocalServiceAccount.generate("not-registered-" + bad.appId());
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        TestApi.Response set = api.patch("/v1/app/settings", bad.serverKey(),
                "{\"apns\":{\"bundle_id\":\"dev.pushservice.test\",\"environment\":\"sandbox\",\"token\":{"
                        + "\"key_id\":\"REVOKED123\",\"team_id\":\"LOCALTEAM1\",\"signing_key\":" + JSON.writeValueAsString(pem) + "}},"
                        + "\"fcm\":{\"service_account\":" + unknown.json(FCM.tokenUri()) + "}}");
        assertThat(set.status()).as(set.toString()).isEqualTo(200);
        apnsAnswer = (headers, payload) -> {
            throw new RejectedNotificationException(RejectionReason.INVALID_PROVIDER_TOKEN);
        };
        JsonNode refused = check(bad);
        assertThat(refused.path("apns").path("status").asString()).as(refused.toString()).isEqualTo("invalid");
        assertThat(refused.path("apns").path("reason").asString()).contains("InvalidProviderToken");
        assertThat(refused.path("fcm").path("status").asString()).as(refused.toString()).isEqualTo("invalid");
        assertThat(refused.path("fcm").path("reason").asString()).isNotBlank();
        assertThat(refused.toString()).doesNotContain("PRIVATE KEY");
    }

    private JsonNode check(TestApp app) {
        TestApi.Response r = api.send(api.request("/v1/app/settings/check", app.serverKey())
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    // ---- helpers -------------------------------------------------------------------------------

    record Pending(int attempts, String lastError, Instant nextAttemptAt) {
    }

    private List<Pending> pendingRows(String notificationId) {
        return jdbc.sql("""
                        select attempts, last_error, next_attempt_at from notification_recipients
                        where notification_id = :n and status = 'pending'""")
                .param("n", UUID.fromString(notificationId))
                .query((rs, n) -> new Pending(rs.getInt(1), rs.getString(2),
                        rs.getObject(3, OffsetDateTime.class).toInstant()))
                .list();
    }

    private static long received(List<String> tokens) {
        long n = 0;
        for (String t : tokens) {
            AtomicInteger c = APNS_RECEIVED.get(t);
            if (c != null) n += c.get();
        }
        return n;
    }

    /** The app's circuit of {@code platform} as /health shows it, or null while it is closed. */
    private JsonNode circuitOf(TestApp app, String platform) {
        TestApi.Response r = api.get("/health", null);
        for (JsonNode c : r.json().path("provider_circuits")) {
            if (c.path("app_id").asString().equals(app.appId().toString()) && c.path("platform").asString().equals(platform)) {
                return c;
            }
        }
        return null;
    }

    private static double gauge(String metrics, String name, String platform) {
        return counter(metrics, name, platform);
    }

    private static double counter(String metrics, String name, String platform) {
        Matcher m = Pattern.compile("(?m)^" + name + "\\{[^}]*platform=\"" + platform + "\"[^}]*} (\\S+)").matcher(metrics);
        double sum = 0;
        while (m.find()) sum += Double.parseDouble(m.group(1));
        return sum;
    }

    private boolean terminal(TestApp app, String id) {
        return List.of("completed", "failed", "cancelled").contains(
                api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString());
    }

    private JsonNode finished(TestApp app, String id) {
        return finished(app, id, WAIT);
    }

    private JsonNode finished(TestApp app, String id, Duration within) {
        await().atMost(within).pollInterval(Duration.ofMillis(100)).until(() ->
                List.of("completed", "failed", "cancelled").contains(
                        api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()));
        return api.get("/v1/notifications/" + id, app.serverKey()).json();
    }

    private static String apnsToken() {
        byte[] b = new byte[32];
        ThreadLocalRandom.current().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private void credentials(TestApp app) throws Exception {
        LocalServiceAccount account = LocalServiceAccount.registeredWith(FCM, "outage-" + app.appId());
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        String body = "{\"apns\":{\"bundle_id\":\"dev.pushservice.test\",\"environment\":\"sandbox\",\"token\":{"
                + "\"key_id\":\"LOCAL12345\",\"team_id\":\"LOCALTEAM1\",\"signing_key\":" + JSON.writeValueAsString(pem) + "}},"
                + "\"fcm\":{\"service_account\":" + account.json(FCM.tokenUri()) + "}}";
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    private void register(TestApp app, String platform, String token) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"" + platform + "\",\"push_token\":" + JSON.writeValueAsString(token) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
    }

    private void register(TestApp app, String platform, String token, String externalUserId) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"" + platform + "\",\"push_token\":" + JSON.writeValueAsString(token)
                        + ",\"external_user_id\":" + JSON.writeValueAsString(externalUserId) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
    }

    private String send(TestApp app, String body) {
        TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }
}
