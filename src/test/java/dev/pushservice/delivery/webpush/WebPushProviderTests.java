package dev.pushservice.delivery.webpush;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver.Answer;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver.Received;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver.Subscriber;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.support.TestNames;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** The Web Push provider against a real local push service that decrypts and checks VAPID. */
class WebPushProviderTests {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final UUID APP = UUID.randomUUID();
    private static final WebPushProperties LOCAL = WebPushProperties.defaults()
            .withAllowInsecureEndpoints(true).withSubject("mailto:ops@example.com");

    private final VapidKeys keys = VapidKeys.generate();
    private final CredentialSource<VapidKeys> credentials = app -> app.equals(APP)
            ? Optional.of(new CredentialSource.Versioned<>(keys, 1)) : Optional.empty();
    private LocalWebPushReceiver receiver;
    private WebPushProvider provider;

    @BeforeEach
    void start() throws Exception {
        receiver = LocalWebPushReceiver.start();
        provider = WebPushProvider.builder(credentials).properties(LOCAL).build();
    }

    @AfterEach
    void stop() {
        provider.close();
        receiver.close();
    }

    @Test
    void acceptedPushDecryptsToWhatWasSent() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        ObjectNode overrides = JSON.createObjectNode();
        overrides.putObject("web").put("icon", "https://cdn.example/icon.png").put("require_interaction", true);
        UUID notificationId = UUID.randomUUID();
        UUID deviceId = UUID.randomUUID();
        PushMessage message = new PushMessage(APP, notificationId, deviceId, Platform.WEB, subscriber.json(),
                "Your order shipped", "Arrives Tuesday – track it ✓", "https://cdn.example/box.png",
                "https://shop.example/orders/42", Map.of("order_id", "42", "items", List.of(1, 2)), 3600, "order-42",
                "default", 3, "ORDER", List.of(new PushMessage.Action("track", "Track", "https://cdn.example/t.png"),
                        new PushMessage.Action("dismiss", "Dismiss", null)),
                false, overrides, Priority.HIGH, InterruptionLevel.ACTIVE);

        DeliveryResult result = send(message);

        assertThat(result).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(((DeliveryResult.Accepted) result).providerId()).startsWith(receiver.origin() + "/message/");
        assertThat(receiver.problems()).isEmpty();
        List<Received> got = receiver.received(subscriber.id());
        assertThat(got).hasSize(1);
        Received push = got.getFirst();
        assertThat(push.vapidPublicKey()).isEqualTo(keys.publicKeyBase64Url());
        assertThat(push.claims().path("aud").asString()).isEqualTo(receiver.origin());
        assertThat(push.claims().path("sub").asString()).isEqualTo("mailto:ops@example.com");
        assertThat(push.header("Content-Type")).isEqualTo("application/octet-stream");

        JsonNode payload = JSON.readTree(push.plaintextString());
        assertThat(payload.path("v").asInt()).as("the payload format's version (docs/web-sdk.md)").isEqualTo(1);
        assertThat(payload.path("notification_id").asString()).isEqualTo(notificationId.toString());
        assertThat(payload.path("device_id").asString()).as("the worker reports events for it").isEqualTo(deviceId.toString());
        assertThat(payload.path("title").asString()).isEqualTo("Your order shipped");
        assertThat(payload.path("body").asString()).isEqualTo("Arrives Tuesday – track it ✓");
        assertThat(payload.path("image").asString()).isEqualTo("https://cdn.example/box.png");
        assertThat(payload.path("url").asString()).isEqualTo("https://shop.example/orders/42");
        assertThat(payload.path("tag").asString()).isEqualTo("order-42");
        assertThat(payload.path("interruption_level").asString()).isEqualTo("active");
        assertThat(payload.path("data").path("order_id").asString()).isEqualTo("42");
        assertThat(payload.path("data").path("items").get(1).asInt()).isEqualTo(2);
        assertThat(payload.path("actions")).hasSize(2);
        assertThat(payload.path("actions").get(0).path("action").asString()).isEqualTo("track");
        assertThat(payload.path("actions").get(0).path("title").asString()).isEqualTo("Track");
        assertThat(payload.path("actions").get(0).path("icon").asString()).isEqualTo("https://cdn.example/t.png");
        assertThat(payload.path("actions").get(1).has("icon")).isFalse();
        assertThat(payload.path("icon").asString()).isEqualTo("https://cdn.example/icon.png");
        assertThat(payload.path("require_interaction").asBoolean()).isTrue();
        assertThat(payload.has("sound")).isFalse();
        assertThat(payload.has("badge")).isFalse();
    }

    /**
     * The web SDK's worker is tested with sdk/web/test/payload-v1.json as the service's payload: a
     * push with every field and every web override decrypts to exactly that fixture's keys (its
     * actions' too), so the worker's tests read what the service sends.
     */
    @Test
    void everyKeyOfAFullPayloadIsInTheWebSdkFixture() throws Exception {
        JsonNode fixture = JSON.readTree(java.nio.file.Files.readString(java.nio.file.Path.of("sdk/web/test/payload-v1.json")));
        Subscriber subscriber = receiver.subscribe();
        ObjectNode overrides = JSON.createObjectNode();
        overrides.putObject("web").put("icon", "https://cdn.example/icon.png").put("badge", "https://cdn.example/badge.png")
                .put("require_interaction", true).put("renotify", true).put("silent", false);
        PushMessage message = new PushMessage(APP, UUID.randomUUID(), UUID.randomUUID(), Platform.WEB, subscriber.json(),
                "T", "B", "https://cdn.example/box.png", "https://shop.example/orders/42", Map.of("order_id", "42"), 60, "order-42",
                "default", 3, "ORDER", List.of(new PushMessage.Action("track", "Track", "https://cdn.example/t.png")),
                true, overrides, Priority.NORMAL, InterruptionLevel.ACTIVE);
        assertThat(send(message)).isInstanceOf(DeliveryResult.Accepted.class);
        JsonNode payload = JSON.readTree(receiver.received(subscriber.id()).getFirst().plaintextString());
        assertThat(payload.propertyNames()).containsExactlyInAnyOrderElementsOf(fixture.propertyNames());
        assertThat(payload.path("actions").get(0).propertyNames())
                .containsExactlyInAnyOrderElementsOf(fixture.path("actions").get(0).propertyNames());
        assertThat(payload.path("v")).isEqualTo(fixture.path("v"));
    }

    @Test
    void headersFollowTheInterruptionLevelTable() throws Exception {
        record Case(InterruptionLevel level, Priority priority, String urgency) {
        }
        List<Case> cases = List.of(
                new Case(InterruptionLevel.PASSIVE, Priority.TRANSACTIONAL, "low"),
                new Case(InterruptionLevel.TIME_SENSITIVE, Priority.BULK, "high"),
                new Case(InterruptionLevel.CRITICAL, Priority.NORMAL, "high"),
                new Case(InterruptionLevel.ACTIVE, Priority.TRANSACTIONAL, "high"),
                new Case(InterruptionLevel.ACTIVE, Priority.HIGH, "high"),
                new Case(InterruptionLevel.ACTIVE, Priority.NORMAL, "normal"),
                new Case(InterruptionLevel.ACTIVE, Priority.BULK, "low"));
        for (Case c : cases) {
            Subscriber subscriber = receiver.subscribe();
            assertThat(send(message(subscriber, c.level(), c.priority(), null, null)))
                    .isInstanceOf(DeliveryResult.Accepted.class);
            Received push = receiver.received(subscriber.id()).getFirst();
            assertThat(push.header("Urgency")).as(c.toString()).isEqualTo(c.urgency());
            assertThat(push.header("TTL")).as("default TTL: 28 days").isEqualTo("2419200");
            assertThat(push.header("Topic")).isNull();
        }
        assertThat(receiver.problems()).isEmpty();
    }

    @Test
    void ttlAndTopicComeFromTheMessage() throws Exception {
        Subscriber a = receiver.subscribe();
        send(message(a, InterruptionLevel.ACTIVE, Priority.NORMAL, 0, "score-update_1"));
        Received plain = receiver.received(a.id()).getFirst();
        assertThat(plain.header("TTL")).isEqualTo("0");
        assertThat(plain.header("Topic")).isEqualTo("score-update_1");

        Subscriber b = receiver.subscribe();
        String collapseId = "match:2024/final — score";
        send(message(b, InterruptionLevel.ACTIVE, Priority.NORMAL, 60, collapseId));
        send(message(b, InterruptionLevel.ACTIVE, Priority.NORMAL, 60, collapseId));
        List<Received> hashed = receiver.received(b.id());
        assertThat(hashed).hasSize(2);
        assertThat(hashed.get(0).header("TTL")).isEqualTo("60");
        assertThat(hashed.get(0).header("Topic")).matches("[A-Za-z0-9_-]{32}");
        assertThat(hashed.get(1).header("Topic")).as("equal collapse ids collapse").isEqualTo(hashed.get(0).header("Topic"));
        assertThat(WebPushProvider.topic("x".repeat(33))).hasSize(32).isNotEqualTo("x".repeat(32));
        assertThat(receiver.problems()).isEmpty();
    }

    @Test
    void vapidTokenIsReusedPerOriginAndRenewedForAnotherOrigin() throws Exception {
        Subscriber first = receiver.subscribe();
        Subscriber second = receiver.subscribe();
        send(message(first, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        send(message(second, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        String jwt = receiver.received(first.id()).getFirst().jwt();
        assertThat(receiver.received(second.id()).getFirst().jwt()).isEqualTo(jwt);

        try (LocalWebPushReceiver other = LocalWebPushReceiver.start()) {
            Subscriber elsewhere = other.subscribe();
            assertThat(send(message(elsewhere, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                    .isInstanceOf(DeliveryResult.Accepted.class);
            Received push = other.received(elsewhere.id()).getFirst();
            assertThat(push.jwt()).isNotEqualTo(jwt);
            assertThat(push.claims().path("aud").asString()).isEqualTo(other.origin());
            assertThat(other.problems()).isEmpty();
        }
        long exp = receiver.received(first.id()).getFirst().claims().path("exp").asLong();
        long now = System.currentTimeMillis() / 1000;
        assertThat(exp - now).isBetween(Duration.ofHours(11).toSeconds(), Duration.ofHours(12).toSeconds());
    }

    @Test
    void replacedKeysGetANewToken() throws Exception {
        AtomicReference<CredentialSource.Versioned<VapidKeys>> current =
                new AtomicReference<>(new CredentialSource.Versioned<>(keys, 1));
        try (WebPushProvider rotating = WebPushProvider.builder(app -> Optional.of(current.get())).properties(LOCAL).build()) {
            Subscriber subscriber = receiver.subscribe();
            rotating.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)).get(10, TimeUnit.SECONDS);
            VapidKeys replacement = VapidKeys.generate();
            current.set(new CredentialSource.Versioned<>(replacement, 2));
            rotating.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)).get(10, TimeUnit.SECONDS);
            List<Received> got = receiver.received(subscriber.id());
            assertThat(got.get(0).vapidPublicKey()).isEqualTo(keys.publicKeyBase64Url());
            assertThat(got.get(1).vapidPublicKey()).isEqualTo(replacement.publicKeyBase64Url());
            assertThat(receiver.problems()).isEmpty();
        }
    }

    @Test
    void goneSubscriptionInvalidatesTheToken() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        receiver.unsubscribe(subscriber.id());
        DeliveryResult result = send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isTrue();
            assertThat(r.reason()).isEqualTo(ReasonCode.TOKEN_UNREGISTERED);
            assertThat(r.detail()).isEqualTo("HTTP 410");
        });
    }

    @Test
    void unknownSubscriptionInvalidatesTheToken() throws Exception {
        String unknown = receiver.subscribe().json().replaceAll("/push/[0-9a-f-]+", "/push/" + UUID.randomUUID());
        DeliveryResult result = send(message(unknown, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isTrue();
            assertThat(r.reason()).isEqualTo(ReasonCode.TOKEN_UNREGISTERED);
            assertThat(r.detail()).startsWith("HTTP 404");
        });
    }

    @Test
    void tooManyRequestsIsTransientWithTheRetryAfter() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        receiver.answer(subscriber.id(), Answer.retryAfter(429, "120"));
        DeliveryResult result = send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
            assertThat(f.retryAfter()).isEqualTo(Duration.ofSeconds(120));
            assertThat(f.reason()).isEqualTo(ReasonCode.RATE_LIMITED);
            assertThat(f.detail()).startsWith("HTTP 429");
        });
    }

    @Test
    void serverErrorIsTransientAndHonoursAnHttpDateRetryAfter() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        String inTwoMinutes = java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME
                .format(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC).plusSeconds(120));
        receiver.answer(subscriber.id(), Answer.retryAfter(503, inTwoMinutes));
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Failed.class,
                        f -> {
                            assertThat(f.retryAfter()).isBetween(Duration.ofSeconds(100), Duration.ofSeconds(120));
                            assertThat(f.reason()).isEqualTo(ReasonCode.PROVIDER_UNAVAILABLE);
                        });
        receiver.answer(subscriber.id(), Answer.status(500));
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
                    assertThat(f.retryAfter()).isNull();
                    assertThat(f.reason()).isEqualTo(ReasonCode.PROVIDER_UNAVAILABLE);
                    assertThat(f.detail()).startsWith("HTTP 500");
                });
    }

    @Test
    void payloadTooLargeAtThePushServiceIsPermanentButKeepsTheToken() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        receiver.answer(subscriber.id(), Answer.status(413));
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                    assertThat(r.tokenInvalid()).isFalse();
                    assertThat(r.reason()).isEqualTo(ReasonCode.PAYLOAD_TOO_LARGE);
                    assertThat(r.detail()).startsWith("HTTP 413");
                });
    }

    @Test
    void forbiddenIsPermanentButKeepsTheTokenAndExplainsWhy() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        receiver.answer(subscriber.id(), new Answer(403, null,
                "{\"reason\":\"VAPID credentials mismatch for " + subscriber.endpoint() + "\"}"));
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                    assertThat(r.tokenInvalid()).isFalse();
                    assertThat(r.reason()).isEqualTo(ReasonCode.SENDER_MISMATCH);
                    assertThat(r.detail()).contains("403").contains("VAPID credentials mismatch")
                            .doesNotContain(subscriber.id());
                });
    }

    @Test
    void oversizePayloadIsRejectedBeforeSending() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        PushMessage big = new PushMessage(APP, UUID.randomUUID(), UUID.randomUUID(), Platform.WEB, subscriber.json(),
                "t", "b".repeat(4000), null, null, null, null, null, null, null, null, null, false, null, null, null);
        assertThat(send(big)).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isFalse();
            assertThat(r.reason()).isEqualTo(ReasonCode.PAYLOAD_TOO_LARGE);
            assertThat(r.detail()).contains("3993");
        });
        assertThat(receiver.requestCount()).isZero();
    }

    @Test
    void insecureEndpointIsRefusedUnlessTheSettingAllowsIt() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        try (WebPushProvider strict = WebPushProvider.builder(credentials).properties(WebPushProperties.defaults()).build()) {
            DeliveryResult result = strict.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null))
                    .get(10, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                assertThat(r.reason()).isEqualTo(ReasonCode.ENDPOINT_NOT_ALLOWED);
                assertThat(r.detail()).contains("https").contains("allow-insecure-endpoints");
                assertThat(r.tokenInvalid()).as("a policy refusal keeps the device").isFalse();
            });
        }
        assertThat(receiver.requestCount()).isZero();
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOf(DeliveryResult.Accepted.class);
    }

    /**
     * An {@code https} endpoint whose name looks public but resolves (through {@link TestNames}) to a
     * loopback address, alone or among public ones, is refused where the connection would be made:
     * permanent, the device invalidated though the recipient is not {@code invalid_token}, and not one
     * connection reaches the receiver listening there.
     */
    @ParameterizedTest
    @CsvSource({"rebound-v4, 127.0.0.1", "rebound-v6, ::1", "rebound-mixed, 93.184.216.34 127.0.0.1"})
    void anEndpointNameResolvingToLoopbackIsRefusedBeforeAnyConnection(String label, String addresses) throws Exception {
        String name = label + "-" + UUID.randomUUID() + ".webpush.test";
        TestNames.point(name, addresses.split(" "));
        String token = receiver.subscribeTls().json().replace("https://127.0.0.1:", "https://" + name + ":");
        try (WebPushProvider strict = WebPushProvider.builder(credentials)
                .properties(WebPushProperties.defaults().withSubject("mailto:ops@example.com"))
                .trustedCertificates(List.of(LocalWebPushReceiver.trustedCertificate())).build()) {
            for (Priority lane : List.of(Priority.TRANSACTIONAL, Priority.BULK)) {
                DeliveryResult result = strict.send(message(token, InterruptionLevel.ACTIVE, lane, null, null))
                        .get(10, TimeUnit.SECONDS);
                assertThat(result).as(lane.value()).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                    assertThat(r.reason()).isEqualTo(ReasonCode.ENDPOINT_ADDRESS_REFUSED);
                    assertThat(r.reason().code()).isEqualTo("endpoint_address_refused");
                    assertThat(r.invalidatesDevice()).as("the device is never sent to again").isTrue();
                    assertThat(r.tokenInvalid()).as("no provider said the token is dead").isFalse();
                    assertThat(r.detail()).doesNotContain(name).doesNotContain("/push/");
                });
            }
        }
        assertThat(receiver.connectionCount()).as("connections that reached the loopback receiver").isZero();
        assertThat(receiver.requestCount()).isZero();
    }

    /** The same kind of name with the local-testing setting reaches the receiver: the refusal above is the address rule, not a failed lookup. */
    @Test
    void anEndpointNameResolvingToLoopbackIsReachedWhenInsecureEndpointsAreAllowed() throws Exception {
        String name = "rebound-allowed-" + UUID.randomUUID() + ".webpush.test";
        TestNames.point(name, "127.0.0.1");
        String token = receiver.subscribe().json().replace("http://127.0.0.1:", "http://" + name + ":");
        DeliveryResult result = send(message(token, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        assertThat(receiver.connectionCount()).isPositive();
        assertThat(receiver.requestCount()).isEqualTo(1);
        // the receiver answered (its VAPID audience check sees the name, not 127.0.0.1): not our refusal
        if (result instanceof DeliveryResult.Rejected r) assertThat(r.reason()).isNotEqualTo(ReasonCode.ENDPOINT_ADDRESS_REFUSED);
    }

    /**
     * Endpoints stored before the address rule (or while the local-testing setting was on) whose host is
     * a forbidden literal are refused before sending with the same code: nothing is connected to.
     */
    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[64:ff9b::7f00:1]", "localhost"})
    void aForbiddenLiteralIsRefusedBeforeSending(String host) throws Exception {
        String token = receiver.subscribeTls().json().replace("https://127.0.0.1:", "https://" + host + ":");
        try (WebPushProvider strict = WebPushProvider.builder(credentials).properties(WebPushProperties.defaults())
                .trustedCertificates(List.of(LocalWebPushReceiver.trustedCertificate())).build()) {
            DeliveryResult result = strict.send(message(token, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null))
                    .get(10, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                assertThat(r.reason()).isEqualTo(ReasonCode.ENDPOINT_ADDRESS_REFUSED);
                assertThat(r.invalidatesDevice()).isTrue();
            });
        }
        assertThat(receiver.connectionCount()).isZero();
    }

    @Test
    void badSubscriptionJsonIsRejectedWithAClearReason() throws Exception {
        DeliveryResult result = send(message("{\"endpoint\": 42}", InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.reason()).isEqualTo(ReasonCode.TOKEN_INVALID);
            assertThat(r.detail()).isEqualTo("web push subscription has no \"endpoint\" string");
            assertThat(r.tokenInvalid()).isTrue();
        });
        String noAuth = receiver.subscribe().json().replaceAll("\"auth\":\"[^\"]*\"", "\"auth\":\"AAAA\"");
        assertThat(send(message(noAuth, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Rejected.class,
                        r -> assertThat(r.detail()).contains("keys.auth must be 16 bytes"));
        assertThat(receiver.requestCount()).isZero();
    }

    @Test
    void appWithoutVapidKeysIsRejectedWithoutInvalidating() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        PushMessage m = new PushMessage(UUID.randomUUID(), UUID.randomUUID(), UUID.randomUUID(), Platform.WEB,
                subscriber.json(), "t", "b", null, null, null, null, null, null, null, null, null, false, null, null, null);
        assertThat(send(m)).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.reason()).isEqualTo(ReasonCode.CREDENTIALS_MISSING);
            assertThat(r.detail()).contains("no VAPID key pair");
            assertThat(r.tokenInvalid()).isFalse();
        });
    }

    @Test
    void unreachablePushServiceIsTransient() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        String token = receiver.subscribe().json().replace(":" + receiver.port() + "/", ":" + closedPort + "/");
        assertThat(send(message(token, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
                    assertThat(f.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED);
                    assertThat(f.detail()).doesNotContain(String.valueOf(closedPort));
                });
    }

    @Test
    void aMessageForAnotherPlatformIsMisuse() {
        PushMessage ios = new PushMessage(APP, UUID.randomUUID(), UUID.randomUUID(), Platform.IOS, "abcd", "t", "b",
                null, null, null, null, null, null, null, null, null, false, null, null, null);
        assertThatThrownBy(() -> provider.send(ios).get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void sendWaitsForASlotWhenMaxInFlightAreAwaitingAnswers() throws Exception {
        // The waiting caller is a common-pool task on purpose: with HttpClient.sendAsync (which completes
        // on the common pool, one worker on a 2-core machine) this deadlocked.
        try (WebPushProvider bounded = WebPushProvider.builder(credentials).properties(LOCAL.withMaxInFlight(2)).build()) {
            Subscriber subscriber = receiver.subscribe();
            receiver.hold();
            CompletableFuture<DeliveryResult> one = bounded.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
            CompletableFuture<DeliveryResult> two = bounded.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
            CompletableFuture<CompletableFuture<DeliveryResult>> third = CompletableFuture.supplyAsync(
                    () -> bounded.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)));

            awaitRequests(2);
            assertThat(bounded.inFlight()).isEqualTo(2);
            // something must NOT happen: real time passes and the third send still waits for a slot
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !third.isDone());
            assertThat(receiver.requestCount()).isEqualTo(2);

            receiver.release();
            assertThat(one.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
            assertThat(two.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
            assertThat(third.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
            assertThat(receiver.acceptedCount()).isEqualTo(3);
        }
    }

    @Test
    void cleartextEndpointsAreSentOverHttp2ByPriorKnowledgeOnOneConnection() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        List<CompletableFuture<DeliveryResult>> sent = new java.util.ArrayList<>();
        for (int i = 0; i < 50; i++) {
            sent.add(provider.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)));
        }
        for (CompletableFuture<DeliveryResult> f : sent) {
            assertThat(f.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
        }
        assertThat(receiver.requestCount("h2c")).isEqualTo(50);
        assertThat(receiver.connectionCount()).as("50 requests multiplexed on one connection").isEqualTo(1);
        assertThat(receiver.received(subscriber.id())).allSatisfy(r -> assertThat(r.plaintext()).isNotNull());
        assertThat(receiver.problems()).isEmpty();
    }

    @Test
    void httpsEndpointsNegotiateHttp2WithAlpn() throws Exception {
        try (WebPushProvider tls = WebPushProvider.builder(credentials).properties(LOCAL)
                .trustedCertificates(List.of(LocalWebPushReceiver.trustedCertificate())).build()) {
            Subscriber subscriber = receiver.subscribeTls();
            DeliveryResult result = tls.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.HIGH, 60, "t1"))
                    .get(10, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Accepted.class,
                    a -> assertThat(a.providerId()).startsWith(receiver.tlsOrigin() + "/message/"));
            Received push = receiver.received(subscriber.id()).getFirst();
            assertThat(push.protocol()).isEqualTo("h2");
            assertThat(push.claims().path("aud").asString()).isEqualTo(receiver.tlsOrigin());
            assertThat(push.header("Urgency")).isEqualTo("high");
            assertThat(push.header("TTL")).isEqualTo("60");
            assertThat(push.header("Topic")).isEqualTo("t1");
            assertThat(JSON.readTree(push.plaintextString()).path("title").asString()).isEqualTo("Hello");
            assertThat(receiver.problems()).isEmpty();
        }
    }

    @Test
    void untrustedCertificateIsATransportFailure() throws Exception {
        Subscriber subscriber = receiver.subscribeTls();
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOfSatisfying(DeliveryResult.Failed.class,
                        f -> {
                            assertThat(f.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED);
                            assertThat(f.detail()).contains("TLS");
                        });
        assertThat(receiver.requestCount()).isZero();
    }

    @Test
    void anHttp1OnlyPushServiceIsSpokenToInHttp1() throws Exception {
        try (LocalWebPushReceiver old = LocalWebPushReceiver.startHttp1Only();
             WebPushProvider tls = WebPushProvider.builder(credentials).properties(LOCAL)
                     .trustedCertificates(List.of(LocalWebPushReceiver.trustedCertificate())).build()) {
            Subscriber cleartext = old.subscribe();
            Subscriber secure = old.subscribeTls();
            for (int i = 0; i < 3; i++) {
                assertThat(tls.send(message(cleartext, InterruptionLevel.ACTIVE, Priority.NORMAL, null, "c")).get(10, TimeUnit.SECONDS))
                        .isInstanceOf(DeliveryResult.Accepted.class);
                assertThat(tls.send(message(secure, InterruptionLevel.ACTIVE, Priority.NORMAL, null, "s")).get(10, TimeUnit.SECONDS))
                        .isInstanceOf(DeliveryResult.Accepted.class);
            }
            assertThat(old.requestCount("http/1.1")).isEqualTo(6);
            assertThat(old.received(cleartext.id())).hasSize(3).allSatisfy(r -> {
                assertThat(r.plaintext()).isNotNull();
                assertThat(r.header("Topic")).isEqualTo("c");
            });
            assertThat(old.received(secure.id())).hasSize(3)
                    .allSatisfy(r -> assertThat(r.claims().path("aud").asString()).isEqualTo(old.tlsOrigin()));
            assertThat(old.problems()).isEmpty();
        }
    }

    @Test
    void moreRequestsThanTheServerAllowsStreamsOpenAnotherConnection() throws Exception {
        try (LocalWebPushReceiver receiver = LocalWebPushReceiver.startAllowingStreams(10);
             WebPushProvider bounded = WebPushProvider.builder(credentials).properties(LOCAL.withMaxInFlight(100)).build()) {
            Subscriber subscriber = receiver.subscribe();
            receiver.hold();
            List<CompletableFuture<DeliveryResult>> sent = new java.util.ArrayList<>();
            for (int i = 0; i < 25; i++) {
                sent.add(bounded.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)));
            }
            await().atMost(Duration.ofSeconds(10)).until(receiver::requestCount, n -> n == 25);
            assertThat(receiver.connectionCount()).as("10 streams per connection: 3 connections for 25").isEqualTo(3);
            assertThat(bounded.inFlight()).isEqualTo(25);

            receiver.release();
            for (CompletableFuture<DeliveryResult> f : sent) {
                assertThat(f.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
            }
            assertThat(bounded.inFlight()).isZero();
            assertThat(receiver.problems()).isEmpty();
        }
    }

    @Test
    void anUnansweredRequestTimesOutAndTheConnectionStaysUsable() throws Exception {
        WebPushProperties quick = new WebPushProperties("mailto:ops@example.com", true, 10, null,
                Duration.ofMillis(500), null);
        try (WebPushProvider impatient = WebPushProvider.builder(credentials).properties(quick).build()) {
            Subscriber subscriber = receiver.subscribe();
            receiver.hold();
            DeliveryResult result = impatient.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null))
                    .get(10, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class,
                    f -> assertThat(f.reason()).isEqualTo(ReasonCode.TIMEOUT));
            assertThat(impatient.inFlight()).isZero();

            receiver.release();
            assertThat(impatient.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null))
                    .get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
            assertThat(receiver.connectionCount()).as("the stream was reset, the connection kept").isEqualTo(1);
        }
    }

    @Test
    void aGoawayLetsRequestsInFlightFinishAndNewOnesTakeANewConnection() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOf(DeliveryResult.Accepted.class);
        receiver.hold();
        CompletableFuture<DeliveryResult> inFlight = provider.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        awaitRequests(2);

        receiver.closeConnections(); // GOAWAY; returns once the client has read it, the held stream still open
        CompletableFuture<DeliveryResult> after = provider.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null));
        awaitRequests(3);
        assertThat(receiver.connectionCount()).as("the request after the GOAWAY went to a new connection").isEqualTo(2);
        receiver.release();
        assertThat(inFlight.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(after.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(receiver.problems()).isEmpty();
    }

    @Test
    void aDroppedConnectionFailsItsRequestsAsTransientAndTheNextSendReconnects() throws Exception {
        Subscriber subscriber = receiver.subscribe();
        receiver.hold();
        List<CompletableFuture<DeliveryResult>> sent = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sent.add(provider.send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)));
        }
        awaitRequests(3);
        receiver.dropConnections();
        for (CompletableFuture<DeliveryResult> f : sent) {
            assertThat(f.get(10, TimeUnit.SECONDS)).isInstanceOfSatisfying(DeliveryResult.Failed.class,
                    r -> {
                        assertThat(r.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED);
                        assertThat(r.detail()).doesNotContain(subscriber.id());
                    });
        }
        assertThat(provider.inFlight()).isZero();
        receiver.release();
        receiver.reset();
        assertThat(send(message(subscriber, InterruptionLevel.ACTIVE, Priority.NORMAL, null, null)))
                .isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(receiver.connectionCount()).isEqualTo(2);
    }

    private void awaitRequests(long n) {
        await().atMost(Duration.ofSeconds(10)).until(receiver::requestCount, count -> count == n);
    }

    @Test
    void receiverRefusesAForgedVapidTokenAndAnUndecryptableBody() throws Exception {
        // Guards the checks the other tests rely on: the receiver must not accept just anything.
        Subscriber subscriber = receiver.subscribe();
        WebPushSubscription subscription = WebPushSubscription.parse(subscriber.json(), true);
        String genuine = new VapidTokens(java.time.Clock.systemUTC(), "mailto:ops@example.com")
                .authorization(APP, 1, keys, receiver.origin());
        String forged = genuine.replace(keys.publicKeyBase64Url(), VapidKeys.generate().publicKeyBase64Url());
        byte[] body = WebPushEncryption.encrypt("{}".getBytes(), subscription);

        assertThat(post(subscriber, forged, body)).isEqualTo(403);
        assertThat(post(subscriber, genuine, new byte[120])).isEqualTo(400);
        assertThat(post(subscriber, genuine, body)).isEqualTo(201);
        String wrongAudience = new VapidTokens(java.time.Clock.systemUTC(), "mailto:ops@example.com")
                .authorization(APP, 1, keys, "https://push.example");
        assertThat(post(subscriber, wrongAudience, body)).isEqualTo(403);
        assertThat(receiver.problems()).hasSize(3);
    }

    private int post(Subscriber subscriber, String authorization, byte[] body) throws Exception {
        try (var client = java.net.http.HttpClient.newHttpClient()) {
            return client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(subscriber.endpoint()))
                    .header("Authorization", authorization).header("TTL", "60").header("Content-Encoding", "aes128gcm")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
        }
    }

    private DeliveryResult send(PushMessage message) throws Exception {
        return provider.send(message).get(10, TimeUnit.SECONDS);
    }

    private static PushMessage message(Subscriber subscriber, InterruptionLevel level, Priority priority, Integer ttl,
            String collapseId) {
        return message(subscriber.json(), level, priority, ttl, collapseId);
    }

    private static PushMessage message(String token, InterruptionLevel level, Priority priority, Integer ttl,
            String collapseId) {
        return new PushMessage(APP, UUID.randomUUID(), UUID.randomUUID(), Platform.WEB, token, "Hello", "World",
                null, null, null, ttl, collapseId, null, null, null, null, false, null, priority, level);
    }
}
