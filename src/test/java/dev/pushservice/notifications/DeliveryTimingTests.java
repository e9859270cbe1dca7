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
import dev.pushservice.support.TestClock;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneOffsetTransition;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Delivery controls that decide when each recipient is sent (throttling, quiet hours, local
 * delivery time, TTL), end to end through the API, the fan-out, the lanes and the local provider
 * peers, with the application's clock moved by the test.
 *
 * <p>Every test first moves the clock at least a day past real time: recipients due in this
 * context's future are invisible to the lanes of the other test contexts (their clocks are real),
 * which share the database. Lanes find recipients that come due by polling (1 s), so after each
 * move the test waits for the peers.
 */
class DeliveryTimingTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Longer than a lane's poll interval: what has not arrived by then was not sent. */
    private static final Duration SETTLE = Duration.ofMillis(2_500);
    private static final ApnsTestPeer APNS;
    private static final LocalFcmServer FCM;
    private static final LocalWebPushReceiver WEB;
    private static final Path CA;
    /** What APNs received, by device token: headers and payload. */
    private static final Map<String, List<Map<String, String>>> APNS_HEADERS = new ConcurrentHashMap<>();

    static {
        try {
            APNS = ApnsTestPeer.startAcceptingSilently();
            APNS.answer((PushNotificationHandler) (headers, payload) -> {
                String path = headers.path().toString();
                Map<String, String> h = new HashMap<>();
                headers.forEach(e -> h.put(e.getKey().toString(), e.getValue().toString()));
                h.put(":body", payload.toString(StandardCharsets.UTF_8));
                APNS_HEADERS.computeIfAbsent(path.substring(path.lastIndexOf('/') + 1),
                        t -> Collections.synchronizedList(new ArrayList<>())).add(h);
            });
            CA = ApnsTestPeer.writeCa(Files.createTempDirectory("timing-tests"));
            FCM = new LocalFcmServer(0).start();
            WEB = LocalWebPushReceiver.start();
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void peers(DynamicPropertyRegistry registry) {
        registry.add("push.apns.host", () -> "localhost");
        registry.add("push.apns.port", APNS::port);
        registry.add("push.apns.trusted-ca-file", CA::toString);
        registry.add("push.fcm.base-url", () -> FCM.baseUrl().toString());
        registry.add("push.webpush.allow-insecure-endpoints", () -> "true");
    }

    @Autowired
    TestClock clock;

    @AfterEach
    void resetClock() {
        clock.reset();
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private void settings(TestApp app, String body) {
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    private void credentials(TestApp app) throws Exception {
        LocalServiceAccount account = LocalServiceAccount.registeredWith(FCM, "timing-" + app.appId());
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        settings(app, "{\"apns\":{\"bundle_id\":\"dev.pushservice.test\",\"environment\":\"sandbox\",\"token\":{"
                + "\"key_id\":\"LOCAL12345\",\"team_id\":\"LOCALTEAM1\",\"signing_key\":" + JSON.writeValueAsString(pem) + "}},"
                + "\"fcm\":{\"service_account\":" + account.json(FCM.tokenUri()) + "}}");
    }

    private UUID register(TestApp app, String platform, String token, String extra) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"" + platform + "\",\"push_token\":" + JSON.writeValueAsString(token) + extra + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("device_id").asString());
    }

    private String send(TestApp app, String body) {
        HttpRequest.Builder b = api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(body));
        TestApi.Response r = api.send(b);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    private JsonNode summary(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    /** The summary once every recipient is materialized. */
    private JsonNode materialized(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50))
                .until(() -> !summary(app, id).path("recipient_count").isNull());
        return summary(app, id);
    }

    private JsonNode finished(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() ->
                List.of("completed", "failed", "cancelled").contains(summary(app, id).path("status").asString()));
        return summary(app, id);
    }

    private Map<UUID, JsonNode> recipients(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        Map<UUID, JsonNode> byDevice = new HashMap<>();
        r.json().path("data").forEach(n -> byDevice.put(UUID.fromString(n.path("device_id").asString()), n));
        return byDevice;
    }

    private static Instant instant(JsonNode node, String field) {
        return Instant.parse(node.path(field).asString());
    }

    /** Moves the application's clock forward to {@code at}. */
    private void moveTo(Instant at) {
        Duration by = Duration.between(clock.instant(), at);
        assertThat(by.isNegative()).as("the test clock only moves forward, to " + at).isFalse();
        clock.advance(by);
    }

    /** An instant at least a day after real time at {@code hh:mm} UTC. */
    private Instant tomorrowAt(int hour, int minute) {
        return clock.instant().plus(Duration.ofDays(1)).truncatedTo(ChronoUnit.DAYS).plus(Duration.ofDays(1))
                .plus(Duration.ofHours(hour)).plus(Duration.ofMinutes(minute));
    }

    private static int apnsCount(String token) {
        List<Map<String, String>> got = APNS_HEADERS.get(token);
        return got == null ? 0 : got.size();
    }

    private static void settle() throws InterruptedException {
        Thread.sleep(SETTLE.toMillis());
    }

    // ---- throttling ------------------------------------------------------------------------------

    @Test
    void aThrottleSpreadsFanOutsOverTimeAndTwoNotificationsShareTheAppsRate() throws Exception {
        TestApp app = newApp();
        credentials(app);
        settings(app, "{\"throttle_per_minute\":2}");
        List<String> first = new ArrayList<>();
        List<String> second = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            String token = TestTokens.fcm();
            first.add(token);
            register(app, "android", token, ",\"external_user_id\":\"a" + i + "\",\"tags\":{\"batch\":\"a\"}");
        }
        for (int i = 0; i < 6; i++) {
            String token = TestTokens.fcm();
            second.add(token);
            register(app, "android", token, ",\"external_user_id\":\"b" + i + "\",\"tags\":{\"batch\":\"b\"}");
        }
        Instant start = tomorrowAt(10, 0);
        moveTo(start);

        String a = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"tag\",\"key\":\"batch\",\"value\":\"a\"}}");
        JsonNode aSummary = materialized(app, a);
        String b = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"tag\",\"key\":\"batch\",\"value\":\"b\"}}");
        JsonNode bSummary = materialized(app, b);
        String urgent = send(app, "{\"title\":\"code\",\"body\":\"123456\",\"priority\":\"transactional\","
                + "\"target\":{\"type\":\"tag\",\"key\":\"batch\",\"value\":\"b\"}}");

        List<Instant> aSlots = recipients(app, a).values().stream().map(r -> instant(r, "due_at")).sorted().toList();
        List<Instant> bSlots = recipients(app, b).values().stream().map(r -> instant(r, "due_at")).sorted().toList();
        assertThat(aSlots).hasSize(12);
        assertThat(bSlots).hasSize(6);
        // 2 a minute: one slot every 30 s, the first at the next slot after the notification's send time
        assertThat(Duration.between(start, aSlots.getFirst())).isBetween(Duration.ZERO, Duration.ofSeconds(30));
        for (int i = 1; i < aSlots.size(); i++) {
            assertThat(Duration.between(aSlots.get(i - 1), aSlots.get(i))).isEqualTo(Duration.ofSeconds(30));
        }
        // the second notification's slots follow the first's: the app's rate is shared
        assertThat(Duration.between(aSlots.getLast(), bSlots.getFirst())).isEqualTo(Duration.ofSeconds(30));
        for (int i = 1; i < bSlots.size(); i++) {
            assertThat(Duration.between(bSlots.get(i - 1), bSlots.get(i))).isEqualTo(Duration.ofSeconds(30));
        }
        assertThat(instant(aSummary, "expected_completion_at")).isEqualTo(aSlots.getLast());
        assertThat(instant(bSummary, "expected_completion_at")).isEqualTo(bSlots.getLast());

        // transactional pushes are exempt: sent at once, while the throttled ones wait for their slots
        await().atMost(WAIT).until(() -> second.stream().allMatch(t -> FCM.receivedFor(t).size() == 1));
        assertThat(finished(app, urgent).path("accepted_count").asLong()).isEqualTo(6);
        assertThat(recipients(app, urgent).values()).allSatisfy(r ->
                assertThat(instant(r, "due_at")).isBefore(aSlots.get(1)));

        // half-way through the first notification's slots: exactly the first six have gone out
        moveTo(aSlots.get(5).plusMillis(500));
        await().atMost(WAIT).until(() -> first.stream().filter(t -> !FCM.receivedFor(t).isEmpty()).count() == 6);
        settle();
        assertThat(first.stream().filter(t -> !FCM.receivedFor(t).isEmpty()).count()).as("none before its slot").isEqualTo(6);
        assertThat(summary(app, a).path("status").asString()).isEqualTo("processing");
        assertThat(second.stream().allMatch(t -> FCM.receivedFor(t).size() == 1)).as("b still waits").isTrue();

        moveTo(bSlots.getLast().plusSeconds(1));
        assertThat(finished(app, a).path("accepted_count").asLong()).isEqualTo(12);
        JsonNode done = finished(app, b);
        assertThat(done.path("accepted_count").asLong()).isEqualTo(6);
        assertThat(done.path("expected_completion_at").isNull()).as("terminal: nothing is expected").isTrue();
        assertThat(second).allSatisfy(t -> assertThat(FCM.receivedFor(t)).hasSize(2));
    }

    // ---- quiet hours -----------------------------------------------------------------------------

    @Test
    void quietHoursHoldPushesUntilTheWindowEndsInEachRecipientsZone() throws Exception {
        TestApp app = newApp();
        credentials(app);
        settings(app, "{\"timezone\":\"Europe/London\",\"quiet_hours\":{\"start\":\"22:00\",\"end\":\"07:00\"}}");
        String berlin = TestTokens.fcm();
        String newYork = TestTokens.fcm();
        String tokyo = TestTokens.fcm();
        String kolkataUser = TestTokens.fcm();
        String noZone = TestTokens.fcm();
        UUID berlinId = register(app, "android", berlin, ",\"timezone\":\"Europe/Berlin\"");
        UUID newYorkId = register(app, "android", newYork, ",\"timezone\":\"America/New_York\"");
        UUID tokyoId = register(app, "android", tokyo, ",\"timezone\":\"Asia/Tokyo\"");
        UUID kolkataId = register(app, "android", kolkataUser, ",\"external_user_id\":\"priya\"");
        assertThat(api.patch("/v1/users/priya", app.serverKey(), "{\"timezone\":\"Asia/Kolkata\"}").status()).isEqualTo(200);
        UUID noZoneId = register(app, "android", noZone, "");

        // 03:30 UTC: 04:30 in Berlin and London (after midnight, in the window), 22:30 in New York (before
        // midnight, in the window), 12:30 in Tokyo and 09:00 in Kolkata (outside)
        Instant at = tomorrowAt(3, 30);
        moveTo(at);
        String held = send(app, "{\"title\":\"sale\",\"body\":\"now\",\"target\":{\"type\":\"all\"}}");
        Instant sent = instant(summary(app, held), "queued_at");
        String shortLived = send(app, "{\"title\":\"flash\",\"body\":\"1h\",\"target\":{\"type\":\"all\"},\"ttl\":3600}");
        String urgent = send(app, "{\"title\":\"code\",\"body\":\"1\",\"target\":{\"type\":\"all\"},\"priority\":\"transactional\"}");

        materialized(app, held);
        Map<UUID, JsonNode> rows = recipients(app, held);
        Instant berlinMorning = at.plus(Duration.ofMinutes(150)); // 07:00 CET = 06:00 UTC
        Instant londonMorning = at.plus(Duration.ofMinutes(210)); // 07:00 GMT = 07:00 UTC
        Instant newYorkMorning = at.plus(Duration.ofMinutes(510)); // 07:00 EST = 12:00 UTC
        assertThat(instant(rows.get(berlinId), "due_at")).isEqualTo(berlinMorning);
        assertThat(instant(rows.get(noZoneId), "due_at")).as("the app's zone").isEqualTo(londonMorning);
        assertThat(instant(rows.get(newYorkId), "due_at")).isEqualTo(newYorkMorning);
        assertThat(instant(rows.get(tokyoId), "due_at")).isEqualTo(sent);
        assertThat(instant(rows.get(kolkataId), "due_at")).as("the user's zone").isEqualTo(sent);
        assertThat(instant(materialized(app, held), "expected_completion_at")).isEqualTo(newYorkMorning);

        // a TTL that would run out during the hold: those recipients expire at once, never sent
        materialized(app, shortLived);
        Map<UUID, JsonNode> flash = recipients(app, shortLived);
        for (UUID heldDevice : List.of(berlinId, noZoneId, newYorkId)) {
            assertThat(flash.get(heldDevice).path("status").asString()).isEqualTo("expired");
            assertThat(flash.get(heldDevice).path("last_error").asString()).isEqualTo("ttl_expired_quiet_hours");
        }

        // outside the window and transactional: at once
        await().atMost(WAIT).until(() -> FCM.receivedFor(tokyo).size() == 3 && FCM.receivedFor(kolkataUser).size() == 3);
        assertThat(finished(app, urgent).path("accepted_count").asLong()).isEqualTo(5);
        assertThat(finished(app, shortLived).path("counts").path("expired").asLong()).isEqualTo(3);
        settle();
        assertThat(FCM.receivedFor(berlin)).as("only the transactional push").hasSize(1);
        assertThat(FCM.receivedFor(newYork)).hasSize(1);

        moveTo(berlinMorning.plusSeconds(1));
        await().atMost(WAIT).until(() -> FCM.receivedFor(berlin).size() == 2);
        settle();
        assertThat(FCM.receivedFor(noZone)).hasSize(1);
        assertThat(FCM.receivedFor(newYork)).hasSize(1);

        moveTo(londonMorning.plusSeconds(1));
        await().atMost(WAIT).until(() -> FCM.receivedFor(noZone).size() == 2);
        settle();
        assertThat(FCM.receivedFor(newYork)).hasSize(1);
        assertThat(summary(app, held).path("status").asString()).isEqualTo("processing");

        moveTo(newYorkMorning.plusSeconds(1));
        await().atMost(WAIT).until(() -> FCM.receivedFor(newYork).size() == 2);
        assertThat(finished(app, held).path("accepted_count").asLong()).isEqualTo(5);
    }

    // ---- local delivery time ---------------------------------------------------------------------

    /** One DST change the test sends across: the local time asked for and the instant it must go out. */
    private record DstCase(String zone, String localTime, Instant expected, Instant secondOccurrence, Instant transition) {
    }

    /**
     * The next spring-forward gap and fall-back overlap of {@code zone} a day or more from now,
     * with a local time inside each: 30 minutes into the skipped or repeated hour.
     */
    private List<DstCase> dstCases(String zone, Instant from) {
        List<DstCase> cases = new ArrayList<>();
        ZoneId id = ZoneId.of(zone);
        boolean gap = false;
        boolean overlap = false;
        Instant t = from;
        while (!(gap && overlap)) {
            ZoneOffsetTransition next = id.getRules().nextTransition(t);
            t = next.getInstant();
            if (next.isGap() && !gap) {
                gap = true;
                LocalDateTime local = next.getDateTimeBefore().plusMinutes(30); // e.g. 02:30, which does not exist
                // the first valid instant after the gap is the transition itself (03:00 local), not 03:30
                cases.add(new DstCase(zone, hhmm(local), next.getInstant(), null, next.getInstant()));
            } else if (next.isOverlap() && !overlap) {
                overlap = true;
                LocalDateTime local = next.getDateTimeAfter().plusMinutes(30); // e.g. 01:30, which happens twice
                Instant earlier = local.toInstant(next.getOffsetBefore());
                Instant later = local.toInstant(next.getOffsetAfter());
                cases.add(new DstCase(zone, hhmm(local), earlier, later, next.getInstant()));
            }
        }
        return cases;
    }

    private static String hhmm(LocalDateTime local) {
        return String.format("%02d:%02d", local.getHour(), local.getMinute());
    }

    @Test
    void localDeliveryTimeCrossesDstGapsAndOverlapsInBothHemispheres() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String newYork = TestTokens.apns();
        String sydney = TestTokens.fcm();
        register(app, "ios", newYork, ",\"timezone\":\"America/New_York\",\"external_user_id\":\"ny\",\"tags\":{\"city\":\"ny\"}");
        register(app, "android", sydney, ",\"timezone\":\"Australia/Sydney\",\"external_user_id\":\"syd\",\"tags\":{\"city\":\"syd\"}");
        Instant from = tomorrowAt(0, 0);
        List<DstCase> cases = new ArrayList<>(dstCases("America/New_York", from));
        cases.addAll(dstCases("Australia/Sydney", from));
        cases.sort((x, y) -> x.transition().compareTo(y.transition()));
        assertThat(cases).hasSize(4);

        for (DstCase c : cases) {
            String city = c.zone().equals("America/New_York") ? "ny" : "syd";
            int before = city.equals("ny") ? apnsCount(newYork) : FCM.receivedFor(sydney).size();
            moveTo(c.transition().minus(Duration.ofHours(12)));
            String id = send(app, "{\"title\":\"good morning\",\"body\":\"b\",\"local_delivery_time\":\"" + c.localTime()
                    + "\",\"ttl\":600,\"target\":{\"type\":\"tag\",\"key\":\"city\",\"value\":\"" + city + "\"}}");
            materialized(app, id);
            JsonNode recipient = recipients(app, id).values().iterator().next();
            assertThat(instant(recipient, "due_at")).as(c.toString()).isEqualTo(c.expected());
            assertThat(instant(recipient, "expires_at")).as("the TTL counts from the recipient's own time")
                    .isEqualTo(c.expected().plusSeconds(600));

            moveTo(c.expected().minusSeconds(5));
            settle();
            int sentBefore = city.equals("ny") ? apnsCount(newYork) : FCM.receivedFor(sydney).size();
            assertThat(sentBefore).as("not before its local time: " + c).isEqualTo(before);

            moveTo(c.expected().plusSeconds(1));
            JsonNode done = finished(app, id);
            assertThat(done.path("accepted_count").asLong()).as(c.toString()).isEqualTo(1);
            if (c.secondOccurrence() != null) {
                moveTo(c.secondOccurrence().plusSeconds(1));
                settle();
            }
            int after = city.equals("ny") ? apnsCount(newYork) : FCM.receivedFor(sydney).size();
            assertThat(after).as("sent once: " + c).isEqualTo(before + 1);
        }
    }

    // ---- TTL -------------------------------------------------------------------------------------

    @Test
    void theTtlLeftIsWhatEachProviderGetsAndAnExpiredRecipientIsNeverSentLate() throws Exception {
        TestApp app = newApp();
        credentials(app);
        String ios = TestTokens.apns();
        String android = TestTokens.fcm();
        LocalWebPushReceiver.Subscriber browser = WEB.subscribe();
        register(app, "ios", ios, ",\"timezone\":\"UTC\"");
        register(app, "android", android, ",\"timezone\":\"UTC\"");
        register(app, "web", browser.json(), ",\"timezone\":\"UTC\"");
        // not a day ahead as elsewhere: the browser's push service checks the VAPID token's expiry
        // (12 h after the app's clock) against real time. Due in two minutes, done in seconds after the move.
        Instant due = clock.instant().plus(Duration.ofMinutes(2)).truncatedTo(ChronoUnit.MINUTES);
        String local = String.format("\"local_delivery_time\":\"%s\"", due.toString().substring(11, 16));
        String hour = send(app, "{\"title\":\"a\",\"body\":\"b\"," + local + ",\"ttl\":3600,\"target\":{\"type\":\"all\"}}");
        String tenMinutes = send(app, "{\"title\":\"a\",\"body\":\"b\"," + local + ",\"ttl\":600,\"target\":{\"type\":\"all\"}}");
        assertThat(recipientsWhenMaterialized(app, hour)).allSatisfy(r -> {
            assertThat(instant(r, "due_at")).isEqualTo(due);
            assertThat(instant(r, "expires_at")).isEqualTo(due.plusSeconds(3600));
        });

        // a quarter of an hour late (a long pause): the hour's TTL has 45 minutes left, the ten minutes' ran out
        moveTo(due.plus(Duration.ofMinutes(15)));
        assertThat(finished(app, hour).path("accepted_count").asLong()).as(() -> recipients(app, hour).toString()).isEqualTo(3);
        JsonNode expired = finished(app, tenMinutes);
        assertThat(expired.path("accepted_count").asLong()).isZero();
        assertThat(recipients(app, tenMinutes).values()).allSatisfy(r -> {
            assertThat(r.path("status").asString()).isEqualTo("expired");
            assertThat(r.path("last_error").asString()).isEqualTo("ttl_expired");
        });

        long left = 45 * 60;
        Map<String, String> apns = APNS_HEADERS.get(ios).getFirst();
        assertThat(APNS_HEADERS.get(ios)).as("never sent late").hasSize(1);
        long expires = due.plusSeconds(3600).getEpochSecond();
        assertThat(Long.parseLong(apns.get("apns-expiration"))).isBetween(expires - 2, expires);
        assertThat(FCM.receivedFor(android)).hasSize(1);
        String fcmTtl = FCM.receivedFor(android).getFirst().message().path("android").path("ttl").asString();
        assertThat(Long.parseLong(fcmTtl.substring(0, fcmTtl.length() - 1))).isBetween(left - 2, left);
        await().atMost(WAIT).until(() -> !WEB.received(browser.id()).isEmpty());
        assertThat(WEB.received(browser.id())).hasSize(1);
        assertThat(Long.parseLong(WEB.received(browser.id()).getFirst().header("ttl"))).isBetween(left - 2, left);
    }

    private List<JsonNode> recipientsWhenMaterialized(TestApp app, String id) {
        materialized(app, id);
        return List.copyOf(recipients(app, id).values());
    }

    // ---- settings --------------------------------------------------------------------------------

    @Test
    void badTimingSettingsAre422sNamingTheFieldAndChangeNothing() {
        TestApp app = newApp();
        settings(app, "{\"quiet_hours\":{\"start\":\"21:30\",\"end\":\"06:45\"},\"throttle_per_minute\":1200}");
        String before = api.get("/v1/app/settings", app.serverKey()).json().toString();
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("quiet_hours").toString())
                .isEqualTo("{\"start\":\"21:30\",\"end\":\"06:45\"}");

        Map<String, String> bad = new java.util.LinkedHashMap<>();
        bad.put("{\"quiet_hours\":{\"start\":\"24:00\",\"end\":\"07:00\"}}", "quiet_hours.start");
        bad.put("{\"quiet_hours\":{\"start\":\"22:00\"}}", "quiet_hours.end");
        bad.put("{\"quiet_hours\":{\"start\":\"7:00\",\"end\":\"09:00\"}}", "quiet_hours.start");
        bad.put("{\"quiet_hours\":{\"start\":\"22:00\",\"end\":\"22:00\"}}", "quiet_hours.end");
        bad.put("{\"quiet_hours\":\"22:00-07:00\"}", "quiet_hours");
        bad.put("{\"quiet_hours\":{\"start\":2200,\"end\":\"07:00\"}}", "quiet_hours.start");
        bad.put("{\"throttle_per_minute\":0}", "throttle_per_minute");
        bad.put("{\"throttle_per_minute\":\"60\"}", "throttle_per_minute");
        bad.put("{\"throttle_per_minute\":60.5}", "throttle_per_minute");
        bad.put("{\"throttle_per_minute\":6000001}", "throttle_per_minute");
        bad.put("{\"name\":\"renamed\",\"throttle_per_minute\":-1}", "throttle_per_minute");
        bad.forEach((body, field) -> {
            TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), body);
            assertThat(r.status()).as(body + " → " + r).isEqualTo(422);
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(body).containsExactly(field);
        });
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().toString()).as("nothing changed").isEqualTo(before);

        TestApi.Response local = api.send(api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"local_delivery_time\":\"24:00\"}")));
        assertThat(local.status()).isEqualTo(422);
        assertThat(local.json().path("error").path("details").findValuesAsString("field")).containsExactly("local_delivery_time");

        settings(app, "{\"quiet_hours\":null,\"throttle_per_minute\":null}");
        JsonNode cleared = api.get("/v1/app/settings", app.serverKey()).json();
        assertThat(cleared.path("quiet_hours").isNull()).isTrue();
        assertThat(cleared.path("throttle_per_minute").isNull()).isTrue();
    }
}
