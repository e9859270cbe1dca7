package dev.pushservice.delivery.apns;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.eatthepath.pushy.apns.auth.ApnsVerificationKey;
import com.eatthepath.pushy.apns.server.RejectedNotificationException;
import com.eatthepath.pushy.apns.server.RejectionReason;
import com.eatthepath.pushy.apns.server.UnregisteredDeviceTokenException;
import com.eatthepath.pushy.apns.server.ValidatingPushNotificationHandlerFactory;
import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.support.TestTokens;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.interfaces.ECPublicKey;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@link ApnsProvider} against Pushy's {@code MockApnsServer} over TLS on loopback: what the
 * server receives, and how each of its answers becomes a {@link DeliveryResult}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ApnsProviderTests {

    private static final String BUNDLE = "com.example.pushtest";
    private static final String KEY_ID = "ABC123DEFG";
    private static final String TEAM_ID = "TEAM123456";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();
    private ApnsTestPeer peer;
    private Path caFile;
    private KeyPair signingKeys;
    private final UUID appId = UUID.randomUUID();

    @BeforeEach
    void startPeer() throws Exception {
        peer = closeLater(ApnsTestPeer.start());
        caFile = ApnsTestPeer.writeCa(dir);
        signingKeys = TestCertificates.ec("secp256r1");
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    // ---- results ----

    @Test
    void acceptedPushAnswersWithTheApnsId() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isInstanceOf(DeliveryResult.Accepted.class);
        String apnsId = ((DeliveryResult.Accepted) result).providerId();
        assertThat(UUID.fromString(apnsId)).isNotNull();
        assertThat(peer.next().header("authorization")).startsWith("bearer ");
    }

    @Test
    void tokenAuthIsVerifiedByAServerThatKnowsOnlyThePublicKey() throws Exception {
        String token = TestTokens.apns();
        ApnsVerificationKey verification = new ApnsVerificationKey(KEY_ID, TEAM_ID, (ECPublicKey) signingKeys.getPublic());
        ValidatingPushNotificationHandlerFactory validating = new ValidatingPushNotificationHandlerFactory(
                Map.of(BUNDLE, Set.of(token)), Map.of(), Map.of(KEY_ID, verification), Map.of(verification, Set.of(BUNDLE)));
        peer.answer(validating);
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        assertThat(await(provider.send(alert().token(token).build()))).isInstanceOf(DeliveryResult.Accepted.class);

        // The same server refuses a token signed with a key it does not know: a permanent 403, device kept
        KeyPair other = TestCertificates.ec("secp256r1");
        UUID otherApp = UUID.randomUUID();
        ApnsProvider strangers = provider(peer.properties(caFile, 1, 100, null),
                id -> Optional.of(new CredentialSource.Versioned<>(tokenCredentials(other, BUNDLE), 1)));
        DeliveryResult refused = await(strangers.send(alert().app(otherApp).token(token).build()));
        assertThat(refused).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, "InvalidProviderToken"));
    }

    @Test
    void certificateAuthPresentsTheAppsClientCertificate() throws Exception {
        ApnsTestPeer mutualTls = closeLater(ApnsTestPeer.startWithClientCertificates());
        byte[] p12 = TestCertificates.shared().clientPkcs12("CN=Apple Push Services: " + BUNDLE + ",UID=" + BUNDLE,
                "secret", Instant.now().plus(Duration.ofDays(1)));
        ApnsCredentials credentials = ApnsCredentials.certificate(p12, "secret", BUNDLE, "sandbox", Instant.now());
        ApnsProvider provider = provider(mutualTls.properties(caFile, 1, 100, null),
                id -> Optional.of(new CredentialSource.Versioned<>(credentials, 1)));

        assertThat(await(provider.send(alert().build()))).isInstanceOf(DeliveryResult.Accepted.class);

        ApnsTestPeer.Received received = mutualTls.next();
        assertThat(received.clientCertificate()).contains("CN=Apple Push Services: " + BUNDLE);
        assertThat(received.header("authorization")).isNull();
        assertThat(received.header("apns-topic")).isEqualTo(BUNDLE);
    }

    @Test
    void badDeviceTokenIsAPermanentRejectionThatInvalidatesTheToken() throws Exception {
        peer.answer((headers, payload) -> {
            throw new RejectedNotificationException(RejectionReason.BAD_DEVICE_TOKEN);
        });
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.TOKEN_INVALID, "BadDeviceToken"));
        assertThat(((DeliveryResult.Rejected) result).tokenInvalid()).isTrue();
        assertThat(peer.next()).isNotNull();
        assertThat(peer.receivedCount()).as("sent once, never retried by the provider").isZero();
    }

    @Test
    void unregisteredTokenCarriesApnsInvalidationTime() throws Exception {
        Instant unregisteredAt = Instant.now().minus(Duration.ofHours(3)).truncatedTo(ChronoUnit.MILLIS);
        peer.answer((headers, payload) -> {
            throw new UnregisteredDeviceTokenException(unregisteredAt);
        });
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.TOKEN_UNREGISTERED, "Unregistered", unregisteredAt));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
            "TOO_MANY_REQUESTS, DEVICE_RATE_LIMITED, TooManyRequests",
            "INTERNAL_SERVER_ERROR, PROVIDER_UNAVAILABLE, InternalServerError",
            "SERVICE_UNAVAILABLE, PROVIDER_UNAVAILABLE, ServiceUnavailable",
            "SHUTDOWN, PROVIDER_UNAVAILABLE, Shutdown",
            "IDLE_TIMEOUT, PROVIDER_UNAVAILABLE, IdleTimeout",
            "EXPIRED_PROVIDER_TOKEN, ACCESS_TOKEN_UNAVAILABLE, ExpiredProviderToken",
            "DEVICE_TOKEN_NOT_FOR_TOPIC, TOKEN_INVALID, DeviceTokenNotForTopic",
            "BAD_TOPIC, CREDENTIALS_INVALID, BadTopic",
            "TOPIC_DISALLOWED, CREDENTIALS_INVALID, TopicDisallowed",
            "INVALID_PROVIDER_TOKEN, CREDENTIALS_INVALID, InvalidProviderToken",
            "BAD_CERTIFICATE_ENVIRONMENT, CREDENTIALS_INVALID, BadCertificateEnvironment",
            "PAYLOAD_TOO_LARGE, PAYLOAD_TOO_LARGE, PayloadTooLarge",
            "BAD_COLLAPSE_ID, PAYLOAD_INVALID, BadCollapseId",
            "BAD_EXPIRATION_DATE, PAYLOAD_INVALID, BadExpirationDate",
            "BAD_PATH, PROVIDER_REJECTED, BadPath",
    })
    void apnsAnswersMapToReasonCodes(RejectionReason reason, ReasonCode code, String apnsReason) throws Exception {
        peer.answer((headers, payload) -> {
            throw new RejectedNotificationException(reason);
        });
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().build()));

        if (code.permanent()) {
            assertThat(result).isEqualTo(new DeliveryResult.Rejected(code, apnsReason));
        } else {
            // a refusal the peer answered carries its HTTP status (kept in the recipient's attempt history)
            assertThat(result).usingRecursiveComparison().ignoringFields("httpStatus")
                    .isEqualTo(new DeliveryResult.Failed(code, apnsReason));
            assertThat(((DeliveryResult.Failed) result).httpStatus()).isNotNull();
        }
    }

    @Test
    void connectionDroppedWhileARequestIsInFlightIsATransientFailure() throws Exception {
        DroppingProxy proxy = closeLater(new DroppingProxy(peer.port()));
        CountDownLatch arrived = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        peer.answer((headers, payload) -> {
            arrived.countDown();
            awaitQuietly(release);
        });
        ApnsProvider provider = provider(ApnsTestPeer.properties(proxy.port(), caFile, 1, 100, null));

        CompletableFuture<DeliveryResult> pending = provider.send(alert().build());
        assertThat(arrived.await(10, TimeUnit.SECONDS)).as("request reached the server").isTrue();
        proxy.dropAll();

        DeliveryResult result = await(pending);
        release.countDown();
        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class,
                f -> assertThat(f.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED));
        assertThat(provider.inFlight(appId)).as("slot given back").isZero();
    }

    @Test
    void unreachableServerIsATransientFailure() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        ApnsProvider provider = provider(ApnsTestPeer.properties(closedPort, caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class,
                f -> assertThat(f.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED));
    }

    @Test
    void unansweredRequestTimesOutAsTransientAndFreesItsSlot() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        peer.answer((headers, payload) -> awaitQuietly(release));
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, Duration.ofMillis(300)));

        DeliveryResult result = await(provider.send(alert().build()));
        release.countDown();

        assertThat(result).isEqualTo(new DeliveryResult.Failed(ReasonCode.TIMEOUT, "no answer within 300 ms"));
        assertThat(provider.inFlight(appId)).isZero();
    }

    @Test
    void sendWaitsForASlotWhenMaxInFlightIsReached() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        peer.answer((headers, payload) -> awaitQuietly(release));
        ApnsProvider provider = provider(peer.properties(caFile, 1, 2, null));

        CompletableFuture<DeliveryResult> first = provider.send(alert().build());
        CompletableFuture<DeliveryResult> second = provider.send(alert().build());
        AtomicReference<CompletableFuture<DeliveryResult>> third = new AtomicReference<>();
        Thread sender = Thread.ofVirtual().start(() -> third.set(provider.send(alert().build())));

        waitUntilWaiting(sender);
        assertThat(third.get()).as("third send still blocked on a slot").isNull();
        assertThat(provider.inFlight(appId)).isEqualTo(2);

        release.countDown();
        assertThat(sender.join(Duration.ofSeconds(10))).isTrue();
        assertThat(await(first)).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(await(second)).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(await(third.get())).isInstanceOf(DeliveryResult.Accepted.class);
    }

    @Test
    void appWithoutCredentialsIsRejectedWithoutTouchingTheNetwork() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null), id -> Optional.empty());

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_MISSING, "the app has no APNs credentials"));
        assertThat(peer.receivedCount()).isZero();
    }

    @Test
    void storedCredentialsThatNoLongerPassAreRejectedAsInvalid() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null), id -> {
            throw new CredentialSource.Unusable("the stored APNs credentials no longer pass their checks");
        });

        DeliveryResult result = await(provider.send(alert().build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID,
                "the stored APNs credentials no longer pass their checks"));
        assertThat(peer.receivedCount()).isZero();
    }

    @Test
    void replacedCredentialsTakeEffectOnTheNextSend() throws Exception {
        AtomicReference<CredentialSource.Versioned<ApnsCredentials>> current = new AtomicReference<>(
                new CredentialSource.Versioned<>(tokenCredentials(signingKeys, BUNDLE), 1));
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null), id -> Optional.of(current.get()));

        await(provider.send(alert().build()));
        assertThat(peer.next().header("apns-topic")).isEqualTo(BUNDLE);

        current.set(new CredentialSource.Versioned<>(tokenCredentials(signingKeys, "com.example.renamed"), 2));
        assertThat(await(provider.send(alert().build()))).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(peer.next().header("apns-topic")).isEqualTo("com.example.renamed");
    }

    @Test
    void messageForAnotherPlatformIsMisuse() {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));
        PushMessage android = alert().platform(Platform.ANDROID).build();

        assertThatThrownBy(() -> provider.send(android).get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(IllegalArgumentException.class);
    }

    // ---- payload mapping, checked on what the server received ----

    @Test
    void alertCarriesContentHeadersAndCustomDataBesideAps() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));
        String token = TestTokens.apns();
        Instant before = Instant.now();

        await(provider.send(alert().token(token).sound("chime.caf").badge(3).category("ORDER")
                .ttl(3600).collapseId("order-42").clickUrl("https://example.com/orders/42")
                .data(Map.of("order_id", "42", "amount", 19.5, "aps", "must not override"))
                .actions(List.of(new PushMessage.Action("track", "Track", null))).build()));

        ApnsTestPeer.Received r = peer.next();
        assertThat(r.header(":path")).isEqualTo("/3/device/" + token);
        assertThat(r.header("apns-topic")).isEqualTo(BUNDLE);
        assertThat(r.header("apns-push-type")).isEqualTo("alert");
        assertThat(r.header("apns-priority")).isEqualTo("10");
        assertThat(r.header("apns-collapse-id")).isEqualTo("order-42");
        long expiration = Long.parseLong(r.header("apns-expiration"));
        assertThat(expiration).isBetween(before.getEpochSecond() + 3600, Instant.now().getEpochSecond() + 3600);

        JsonNode aps = r.payload().get("aps");
        assertThat(aps.get("alert")).isEqualTo(JSON.readTree("{\"title\":\"Your order\",\"body\":\"It shipped\"}"));
        assertThat(aps.get("sound").stringValue()).isEqualTo("chime.caf");
        assertThat(aps.get("badge").intValue()).isEqualTo(3);
        assertThat(aps.get("category").stringValue()).isEqualTo("ORDER");
        assertThat(aps.has("mutable-content")).isFalse();
        assertThat(aps.has("content-available")).isFalse();
        assertThat(aps.has("interruption-level")).as("active is APNs' default: not sent").isFalse();
        assertThat(r.payload().get("order_id").stringValue()).isEqualTo("42");
        assertThat(r.payload().get("amount").doubleValue()).isEqualTo(19.5);
        assertThat(r.payload().get("click_url").stringValue()).isEqualTo("https://example.com/orders/42");
        assertThat(r.payload().get("actions")).isEqualTo(JSON.readTree("[{\"id\":\"track\",\"text\":\"Track\"}]"));
    }

    @Test
    void imageMakesTheAlertMutableAndTravelsInCustomData() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        await(provider.send(alert().imageUrl("https://cdn.example.com/a.png").build()));

        JsonNode payload = peer.next().payload();
        assertThat(payload.get("aps").get("mutable-content").intValue()).isEqualTo(1);
        assertThat(payload.get("image_url").stringValue()).isEqualTo("https://cdn.example.com/a.png");
    }

    @Test
    void contentAvailableWithoutTitleOrBodyIsABackgroundPushAtPriorityFive() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        await(provider.send(alert().title(null).body(null).contentAvailable(true).sound("x.caf").badge(1)
                .priority(Priority.TRANSACTIONAL).level(InterruptionLevel.TIME_SENSITIVE)
                .data(Map.of("sync", "inbox")).build()));

        ApnsTestPeer.Received r = peer.next();
        assertThat(r.header("apns-push-type")).isEqualTo("background");
        assertThat(r.header("apns-priority")).as("never 10 for a background push").isEqualTo("5");
        assertThat(r.payload().get("aps")).isEqualTo(JSON.readTree("{\"content-available\":1}"));
        assertThat(r.payload().get("sync").stringValue()).isEqualTo("inbox");
    }

    @Test
    void criticalAlertCarriesTheCriticalSoundDictionaryAtPriorityTen() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        await(provider.send(alert().level(InterruptionLevel.CRITICAL).priority(Priority.BULK).build()));
        await(provider.send(alert().level(InterruptionLevel.CRITICAL).sound("alarm.caf").build()));

        ApnsTestPeer.Received first = peer.next();
        assertThat(first.header("apns-priority")).isEqualTo("10");
        assertThat(first.payload().get("aps").get("interruption-level").stringValue()).isEqualTo("critical");
        assertThat(first.payload().get("aps").get("sound"))
                .isEqualTo(JSON.readTree("{\"critical\":1,\"name\":\"default\",\"volume\":1.0}"));
        assertThat(peer.next().payload().get("aps").get("sound"))
                .isEqualTo(JSON.readTree("{\"critical\":1,\"name\":\"alarm.caf\",\"volume\":1.0}"));
    }

    @Test
    void passiveIsQuietAtPriorityFiveAndTimeSensitiveIsImmediate() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        await(provider.send(alert().level(InterruptionLevel.PASSIVE).sound("chime.caf").priority(Priority.HIGH).build()));
        await(provider.send(alert().level(InterruptionLevel.TIME_SENSITIVE).priority(Priority.BULK).build()));
        await(provider.send(alert().priority(Priority.BULK).build()));

        ApnsTestPeer.Received passive = peer.next();
        assertThat(passive.header("apns-priority")).isEqualTo("5");
        assertThat(passive.payload().get("aps").get("interruption-level").stringValue()).isEqualTo("passive");
        assertThat(passive.payload().get("aps").has("sound")).as("passive: no sound").isFalse();
        ApnsTestPeer.Received timeSensitive = peer.next();
        assertThat(timeSensitive.header("apns-priority")).isEqualTo("10");
        assertThat(timeSensitive.payload().get("aps").get("interruption-level").stringValue()).isEqualTo("time-sensitive");
        assertThat(peer.next().header("apns-priority")).as("bulk queue, active").isEqualTo("5");
    }

    @Test
    void ttlZeroMeansDeliverNowOrNeverAndNoTtlMeansTwentyEightDays() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));
        Instant before = Instant.now();

        await(provider.send(alert().ttl(0).build()));
        await(provider.send(alert().build()));

        assertThat(peer.next().header("apns-expiration")).isEqualTo("0");
        ApnsTestPeer.Received noTtl = peer.next();
        assertThat(Long.parseLong(noTtl.header("apns-expiration")))
                .isBetween(before.getEpochSecond() + 2_419_200, Instant.now().getEpochSecond() + 2_419_200);
        assertThat(noTtl.headers()).doesNotContainKey("apns-collapse-id");
    }

    @Test
    void iosOverridesExtendTheAlert() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));
        ObjectNode overrides = (ObjectNode) JSON.readTree("""
                {"ios": {"subtitle": "From Anna", "thread_id": "chat-7", "sound": "ping.caf", "badge": 0,
                         "relevance_score": 0.5, "mutable_content": true, "unknown": "ignored"},
                 "android": {"sound": "not for ios"}}""");

        await(provider.send(alert().sound("chime.caf").badge(4).overrides(overrides).build()));

        JsonNode aps = peer.next().payload().get("aps");
        assertThat(aps.get("alert").get("subtitle").stringValue()).isEqualTo("From Anna");
        assertThat(aps.get("thread-id").stringValue()).isEqualTo("chat-7");
        assertThat(aps.get("sound").stringValue()).isEqualTo("ping.caf");
        assertThat(aps.get("badge").intValue()).isZero();
        assertThat(aps.get("relevance-score").doubleValue()).isEqualTo(0.5);
        assertThat(aps.get("mutable-content").intValue()).isEqualTo(1);
        assertThat(aps.has("unknown")).isFalse();
    }

    @Test
    void invalidIosOverrideIsRejectedBeforeSending() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));
        ObjectNode overrides = (ObjectNode) JSON.readTree("{\"ios\": {\"badge\": \"three\"}}");

        DeliveryResult result = await(provider.send(alert().overrides(overrides).build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(
                ReasonCode.PAYLOAD_INVALID, "platform_overrides.ios.badge must be an integer >= 0"));
        assertThat(peer.receivedCount()).isZero();
    }

    @Test
    void payloadOver4KbIsRejectedWithoutReachingTheServerAndKeepsTheToken() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult tooLarge = await(provider.send(alert().body("x".repeat(4100)).build()));
        DeliveryResult fits = await(provider.send(alert().body("y".repeat(4000)).build()));

        assertThat(tooLarge).isInstanceOf(DeliveryResult.Rejected.class);
        DeliveryResult.Rejected rejected = (DeliveryResult.Rejected) tooLarge;
        assertThat(rejected.reason()).isEqualTo(ReasonCode.PAYLOAD_TOO_LARGE);
        assertThat(rejected.detail()).endsWith("bytes, APNs allows 4096");
        assertThat(rejected.tokenInvalid()).isFalse();
        assertThat(fits).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(peer.next().payload().get("aps").get("alert").get("body").stringValue()).startsWith("y");
        assertThat(peer.receivedCount()).as("only the message that fits reached APNs").isZero();
    }

    @Test
    void nonHexTokenNeverReachesTheServer() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        DeliveryResult result = await(provider.send(alert().token("../../3/device/abc").build()));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.TOKEN_INVALID, "not a hexadecimal APNs device token"));
        assertThat(peer.receivedCount()).isZero();
    }

    @Test
    void aDeviceTokenIsOneToTwoHundredHexadecimalDigits() {
        assertThat(ApnsPayload.isDeviceToken("0123456789abcdefABCDEF")).isTrue();
        assertThat(ApnsPayload.isDeviceToken("a".repeat(200))).isTrue();
        assertThat(ApnsPayload.isDeviceToken("a".repeat(201))).isFalse();
        assertThat(ApnsPayload.isDeviceToken("")).isFalse();
        assertThat(ApnsPayload.isDeviceToken(null)).isFalse();
        for (String bad : new String[] {"g", "abc ", " abc", "ab-cd", "0x1f", "\u0661", "ab\ncd", "é"}) {
            assertThat(ApnsPayload.isDeviceToken(bad)).as(bad).isFalse();
        }
    }

    @Test
    void contentAvailableBesideVisibleContentStaysAnAlert() throws Exception {
        ApnsProvider provider = provider(peer.properties(caFile, 1, 100, null));

        await(provider.send(alert().contentAvailable(true).build()));

        ApnsTestPeer.Received r = peer.next();
        assertThat(r.header("apns-push-type")).isEqualTo("alert");
        assertThat(r.header("apns-priority")).isEqualTo("10");
        assertThat(r.payload().get("aps").get("content-available").intValue()).isEqualTo(1);
        assertThat(r.payload().get("aps").get("alert").get("title").stringValue()).isEqualTo("Your order");
    }

    @Test
    void consecutiveMessagesGetTheirOwnPayloadWhetherOrNotTheyShareTheirContent() throws Exception {
        Instant now = Instant.now();
        String first = TestTokens.apns();
        String second = TestTokens.apns();
        var a = ApnsPayload.build(alert().token(first).body("for you").build(), BUNDLE, now);
        var same = ApnsPayload.build(alert().token(second).body("for you").build(), BUNDLE, now);
        var otherBody = ApnsPayload.build(alert().token(first).body("for someone else").build(), BUNDLE, now);
        var otherLevel = ApnsPayload.build(alert().token(first).body("for someone else").level(InterruptionLevel.PASSIVE)
                .build(), BUNDLE, now);
        var sameAgain = ApnsPayload.build(alert().token(second).body("for you").build(), BUNDLE, now);

        assertThat(a.getToken()).isEqualTo(first);
        assertThat(same.getToken()).isEqualTo(second);
        assertThat(same.getPayload()).isEqualTo(a.getPayload()).contains("for you");
        assertThat(otherBody.getPayload()).contains("for someone else").doesNotContain("passive");
        assertThat(otherLevel.getPayload()).contains("for someone else").contains("\"interruption-level\":\"passive\"");
        assertThat(sameAgain.getPayload()).isEqualTo(a.getPayload());
        // an invalid message is refused every time, also after a valid one with the same content
        ObjectNode badOverrides = tools.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        badOverrides.putObject("ios").put("badge", -1);
        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> ApnsPayload.build(alert().token(first).overrides(badOverrides).build(), BUNDLE, now))
                    .isInstanceOf(ApnsPayload.Unsendable.class);
        }
    }

    @Test
    void notificationsNeverPrintTheTokenOrPayload() throws Exception {
        String token = TestTokens.apns();
        var notification = ApnsPayload.build(alert().token(token).body("secret body").build(), BUNDLE, Instant.now());

        assertThat(notification.toString()).doesNotContain(token).doesNotContain("secret body").contains(BUNDLE);
    }

    // ---- helpers ----

    private ApnsProvider provider(ApnsProperties properties) {
        return provider(properties, id -> Optional.of(new CredentialSource.Versioned<>(tokenCredentials(signingKeys, BUNDLE), 1)));
    }

    private ApnsProvider provider(ApnsProperties properties, CredentialSource<ApnsCredentials> source) {
        return closeLater(ApnsProvider.builder(source).properties(properties).build());
    }

    private static ApnsCredentials tokenCredentials(KeyPair keys, String bundle) {
        return ApnsCredentials.token(TestCertificates.pkcs8Pem(keys.getPrivate()), KEY_ID, TEAM_ID, bundle, "sandbox");
    }

    private <T extends AutoCloseable> T closeLater(T closeable) {
        open.add(closeable);
        return closeable;
    }

    private static DeliveryResult await(CompletableFuture<DeliveryResult> future) throws Exception {
        return future.get(15, TimeUnit.SECONDS);
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void waitUntilWaiting(Thread thread) {
        Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                .until(thread::getState, state -> state == Thread.State.WAITING);
    }

    private MessageBuilder alert() {
        return new MessageBuilder().app(appId);
    }

    /** A readable way to vary one field of a message at a time. */
    private static final class MessageBuilder {
        UUID app;
        Platform platform = Platform.IOS;
        String token = TestTokens.apns();
        String title = "Your order";
        String body = "It shipped";
        String imageUrl;
        String clickUrl;
        Map<String, Object> data;
        Integer ttl;
        String collapseId;
        String sound;
        Integer badge;
        String category;
        List<PushMessage.Action> actions;
        boolean contentAvailable;
        ObjectNode overrides;
        Priority priority = Priority.NORMAL;
        InterruptionLevel level = InterruptionLevel.ACTIVE;

        MessageBuilder app(UUID v) { app = v; return this; }
        MessageBuilder platform(Platform v) { platform = v; return this; }
        MessageBuilder token(String v) { token = v; return this; }
        MessageBuilder title(String v) { title = v; return this; }
        MessageBuilder body(String v) { body = v; return this; }
        MessageBuilder imageUrl(String v) { imageUrl = v; return this; }
        MessageBuilder clickUrl(String v) { clickUrl = v; return this; }
        MessageBuilder data(Map<String, Object> v) { data = v; return this; }
        MessageBuilder ttl(Integer v) { ttl = v; return this; }
        MessageBuilder collapseId(String v) { collapseId = v; return this; }
        MessageBuilder sound(String v) { sound = v; return this; }
        MessageBuilder badge(Integer v) { badge = v; return this; }
        MessageBuilder category(String v) { category = v; return this; }
        MessageBuilder actions(List<PushMessage.Action> v) { actions = v; return this; }
        MessageBuilder contentAvailable(boolean v) { contentAvailable = v; return this; }
        MessageBuilder overrides(ObjectNode v) { overrides = v; return this; }
        MessageBuilder priority(Priority v) { priority = v; return this; }
        MessageBuilder level(InterruptionLevel v) { level = v; return this; }

        PushMessage build() {
            return new PushMessage(app, UUID.randomUUID(), UUID.randomUUID(), platform, token, title, body, imageUrl,
                    clickUrl, data, ttl, collapseId, sound, badge, category, actions, contentAvailable, overrides,
                    priority, level);
        }
    }
}
