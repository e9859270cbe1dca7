package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * API tests that deliver to the three local protocol peers: Pushy's MockApnsServer over TLS (what it
 * received is kept per device token, payloads and the {@code apns-*} headers), a local FCM v1
 * endpoint with its OAuth token endpoint, and a Web Push receiver that decrypts what it gets. The
 * peers are started once per test JVM and shared by every subclass, with one application
 * configuration, so the subclasses share one application context too. Each test makes its own app
 * ({@link #credentials} points it at the peers).
 */
public abstract class PeerApiTest extends ApiTest {

    protected static final JsonMapper JSON = JsonMapper.builder().build();
    protected static final Duration WAIT = Duration.ofSeconds(30);
    protected static final ApnsTestPeer APNS;
    protected static final LocalFcmServer FCM;
    protected static final LocalWebPushReceiver WEB;
    /** A push service that allows one request per connection at a time (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS 1). */
    protected static final LocalWebPushReceiver WEB_ONE_STREAM;
    protected static final Path CA;
    /** The payloads APNs received, by device token. */
    protected static final Map<String, List<JsonNode>> APNS_RECEIVED = new ConcurrentHashMap<>();
    /** The {@code apns-*} headers APNs received, by device token, in the order of {@link #APNS_RECEIVED}. */
    protected static final Map<String, List<Map<String, String>>> APNS_HEADERS = new ConcurrentHashMap<>();
    /** Device tokens APNs answers {@code 410 Unregistered} for, with the invalidation timestamp it gives. */
    protected static final Map<String, java.time.Instant> APNS_UNREGISTERED = new ConcurrentHashMap<>();

    static {
        try {
            APNS = ApnsTestPeer.startAcceptingSilently();
            APNS.answer((PushNotificationHandler) (headers, payload) -> {
                String token = ApnsTestPeer.deviceToken(headers);
                Map<String, String> kept = new LinkedHashMap<>();
                headers.forEach(h -> {
                    if (h.getKey().toString().startsWith("apns-")) kept.put(h.getKey().toString(), h.getValue().toString());
                });
                synchronized (APNS_RECEIVED) {
                    APNS_RECEIVED.computeIfAbsent(token, t -> Collections.synchronizedList(new ArrayList<>()))
                            .add(JSON.readTree(payload.toString(StandardCharsets.UTF_8)));
                    APNS_HEADERS.computeIfAbsent(token, t -> Collections.synchronizedList(new ArrayList<>())).add(kept);
                }
                java.time.Instant unregisteredAt = APNS_UNREGISTERED.get(token);
                if (unregisteredAt != null) {
                    throw new com.eatthepath.pushy.apns.server.UnregisteredDeviceTokenException(unregisteredAt);
                }
            });
            CA = ApnsTestPeer.writeCa(Files.createTempDirectory("peer-api-tests"));
            FCM = new LocalFcmServer(0).start();
            WEB = LocalWebPushReceiver.start();
            WEB_ONE_STREAM = LocalWebPushReceiver.startAllowingStreams(1);
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void peers(DynamicPropertyRegistry registry) {
        APNS.pointApplicationAt(registry, CA);
        registry.add("push.fcm.base-url", () -> FCM.baseUrl().toString());
        registry.add("push.webpush.allow-insecure-endpoints", () -> "true");
        registry.add("push.delivery.initial-backoff", () -> "50ms");
        registry.add("push.delivery.max-backoff", () -> "200ms");
        registry.add("push.notifications.fanout-page-size", () -> "500");
        // notifications whose finishing was missed are finished within a second or so
        registry.add("push.notifications.reconcile-interval", () -> "1s");
    }

    @org.springframework.beans.factory.annotation.Autowired
    private org.springframework.jdbc.core.simple.JdbcClient countsJdbc;

    /** The apps this test made: their notifications' counts are checked after it. */
    private final List<UUID> apps = Collections.synchronizedList(new ArrayList<>());

    @Override
    protected TestApp newApp() {
        TestApp app = super.newApp();
        apps.add(app.appId());
        return app;
    }

    /**
     * After every test: the counts the database keeps for each notification of the test's apps (V46)
     * are exactly what a {@code GROUP BY} over {@code notification_recipient_states} gives, whatever the
     * test did (retries, hand-overs, cancels, expiry, frequency caps, outcomes recorded twice), and each
     * stored summary is what its rows say.
     */
    @org.junit.jupiter.api.AfterEach
    void countsMatchTheRecipientRows() {
        if (apps.isEmpty()) return;
        List<String> wrong = countMismatches(countsJdbc, List.copyOf(apps));
        apps.clear();
        assertThat(wrong).as("notification counts that differ from their recipient rows").isEmpty();
    }

    /**
     * What differs, in one snapshot, between the kept counts of the notifications of {@code appIds} and
     * their recipient rows (with the recipients handovers list as sending), and between each stored
     * summary and the rows: "kind notification platform status reason count" lines, each with the side
     * it is on ({@code +} kept only, {@code -} rows only). Empty when they agree.
     */
    static List<String> countMismatches(org.springframework.jdbc.core.simple.JdbcClient jdbc, List<UUID> appIds) {
        return jdbc.sql("""
                        -- counts and recipients are read per notification (a lateral by id, kept so by OFFSET 0):
                        -- a join let the planner of a database never analyzed (CI's PostgreSQL runs without
                        -- autovacuum) read every recipient of the test run in each call
                        with ns as (select id, summary from notifications where app_id = any(:apps)),
                        kept as (select 'count' as kind, c.notification_id, c.platform, c.status, c.reason, sum(c.count) as n
                                 from ns cross join lateral (select * from notification_counts x
                                                             where x.notification_id = ns.id offset 0) c
                                 group by 1, 2, 3, 4, 5 having sum(c.count) <> 0
                                 union all
                                 select 'accepted', a.notification_id, null, null, a.second::text, sum(a.count)
                                 from ns cross join lateral (select * from notification_accepted_counts x
                                                             where x.notification_id = ns.id offset 0) a
                                 group by 1, 2, 3, 4, 5 having sum(a.count) <> 0
                                 union all
                                 select 'summary', ns.id, x.platform, x.status, null, x.count
                                 from ns cross join lateral jsonb_to_recordset(ns.summary) as x(platform text, status text, count bigint)
                                 where x.count <> 0),
                        states as materialized (select s.notification_id, s.platform, s.status, s.last_error, s.updated_at,
                                                       ns.summary is not null as summarized
                                                from ns cross join lateral (select * from notification_recipient_states r
                                                                            where r.notification_id = ns.id offset 0) s),
                        rows as (select 'count' as kind, s.notification_id, s.platform, s.status,
                                        case when s.status in ('pending', 'sending') then null else s.last_error end as reason,
                                        count(*) as n
                                 from states s
                                 group by 1, 2, 3, 4, 5
                                 union all
                                 select 'accepted', r.notification_id, null, null,
                                        floor(extract(epoch from r.updated_at))::bigint::text, count(*)
                                 from states r
                                 where r.status = 'accepted'
                                 group by 1, 2, 3, 4, 5
                                 union all
                                 select 'summary', s.notification_id, s.platform, s.status, null, count(*)
                                 from states s
                                 where s.summarized
                                 group by 1, 2, 3, 4, 5)
                        select '+ ' || concat_ws(' ', kind, notification_id, platform, status, reason, n) from
                            (select * from kept except all select * from rows) k
                        union all
                        select '- ' || concat_ws(' ', kind, notification_id, platform, status, reason, n) from
                            (select * from rows except all select * from kept) r""")
                .param("apps", appIds.toArray(UUID[]::new)).query(String.class).list();
    }

    /** Gives {@code app} APNs (bundle {@code dev.pushservice.test}) and FCM credentials of the local peers. */
    protected void credentials(TestApp app) throws Exception {
        LocalServiceAccount account = LocalServiceAccount.registeredWith(FCM, "delivery-" + app.appId());
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        String body = "{\"apns\":{\"bundle_id\":\"dev.pushservice.test\",\"environment\":\"sandbox\",\"token\":{"
                + "\"key_id\":\"LOCAL12345\",\"team_id\":\"LOCALTEAM1\",\"signing_key\":" + JSON.writeValueAsString(pem) + "}},"
                + "\"fcm\":{\"service_account\":" + account.json(FCM.tokenUri()) + "}}";
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    /** Registers a device; {@code extra} is more JSON members, each with a leading comma. */
    protected UUID register(TestApp app, String platform, String token, String extra) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"" + platform + "\",\"push_token\":" + JSON.writeValueAsString(token) + extra + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("device_id").asString());
    }

    protected TestApi.Response create(TestApp app, String idempotencyKey, String body) {
        return api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", idempotencyKey).POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    /** Creates a notification (202) and returns its id. */
    protected String send(TestApp app, String body) {
        TestApi.Response r = create(app, UUID.randomUUID().toString(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    protected JsonNode summary(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    /** Waits until the notification is terminal and returns its summary. */
    protected JsonNode finished(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() ->
                List.of("completed", "failed", "cancelled").contains(summary(app, id).path("status").asString()));
        return summary(app, id);
    }

    /** The first 100 recipient rows, by device id. */
    protected Map<UUID, JsonNode> recipients(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        Map<UUID, JsonNode> byDevice = new HashMap<>();
        r.json().path("data").forEach(n -> byDevice.put(UUID.fromString(n.path("device_id").asString()), n));
        return byDevice;
    }
}
