package dev.pushservice.delivery.fcm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.pushservice.delivery.CredentialSource;
import dev.pushservice.delivery.DeliveryResult;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.delivery.ReasonCode;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.support.TestTokens;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@link FcmProvider} against {@link LocalFcmServer}: a real HTTP/2 FCM v1 endpoint and OAuth2 token
 * endpoint on loopback. Each test uses its own registration tokens, so tests share one server.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FcmProviderTests {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LocalFcmServer server;
    private static LocalServiceAccount account;

    private final UUID appId = UUID.randomUUID();
    private FcmProvider provider;

    @BeforeAll
    static void startServer() throws InterruptedException {
        server = new LocalFcmServer(0).start();
        account = LocalServiceAccount.registeredWith(server, "demo-project");
    }

    @AfterAll
    static void stopServer() {
        server.stop();
    }

    @BeforeEach
    void newProvider() {
        provider = providerFor(fixed(account.credentials(server.tokenUri())), 1000);
    }

    @AfterEach
    void closeProvider() {
        provider.close();
    }

    @Test
    void requestCarriesEveryMappedFieldOverHttp2() throws Exception {
        String token = TestTokens.fcm();
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("order_id", "A-17");
        data.put("count", 3);
        data.put("vip", true);
        data.put("cart", Map.of("items", List.of(1, 2)));
        PushMessage message = new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), Platform.ANDROID, token,
                "Your order", "It has shipped", "https://img.example/p.png", "myapp://orders/A-17", data, 3600,
                "order-A-17", "chime", 4, "ORDER_UPDATE", List.of(new PushMessage.Action("open", "Open", null)),
                false, null, Priority.NORMAL, InterruptionLevel.ACTIVE);

        DeliveryResult result = send(message);

        assertThat(result).isInstanceOf(DeliveryResult.Accepted.class);
        assertThat(((DeliveryResult.Accepted) result).providerId()).startsWith("projects/demo-project/messages/");
        LocalFcmServer.Received received = only(token);
        assertThat(received.protocol()).isEqualTo("h2c");
        assertThat(received.project()).isEqualTo("demo-project");
        assertThat(received.authorization()).startsWith("Bearer ya29.local-");
        JsonNode m = received.message();
        assertThat(m.get("token").stringValue()).isEqualTo(token);
        assertThat(m.get("notification").get("title").stringValue()).isEqualTo("Your order");
        assertThat(m.get("notification").get("body").stringValue()).isEqualTo("It has shipped");
        assertThat(m.get("notification").get("image").stringValue()).isEqualTo("https://img.example/p.png");
        JsonNode d = m.get("data");
        assertThat(d.properties()).hasSize(5);
        assertThat(d.get("order_id").stringValue()).isEqualTo("A-17");
        assertThat(d.get("count").stringValue()).isEqualTo("3");
        assertThat(d.get("vip").stringValue()).isEqualTo("true");
        assertThat(JSON.readTree(d.get("cart").stringValue())).isEqualTo(JSON.readTree("{\"items\":[1,2]}"));
        assertThat(d.get("click_url").stringValue()).isEqualTo("myapp://orders/A-17");
        JsonNode android = m.get("android");
        assertThat(android.get("priority").stringValue()).isEqualTo("NORMAL");
        assertThat(android.get("ttl").stringValue()).isEqualTo("3600s");
        assertThat(android.get("collapse_key").stringValue()).isEqualTo("order-A-17");
        JsonNode n = android.get("notification");
        assertThat(n.get("channel_id").stringValue()).isEqualTo("service_active");
        assertThat(n.get("notification_priority").stringValue()).isEqualTo("PRIORITY_DEFAULT");
        assertThat(n.get("click_action").stringValue()).isEqualTo("ORDER_UPDATE");
        assertThat(n.get("sound").stringValue()).isEqualTo("chime");
        assertThat(n.get("image").stringValue()).isEqualTo("https://img.example/p.png");
        assertThat(n.get("notification_count").intValue()).isEqualTo(4);
        assertThat(m.properties()).extracting(Map.Entry::getKey)
                .containsExactlyInAnyOrder("token", "notification", "data", "android");
    }

    @Test
    void eachInterruptionLevelSelectsItsChannel() throws Exception {
        Map<InterruptionLevel, String[]> expected = Map.of(
                InterruptionLevel.PASSIVE, new String[] {"service_passive", "PRIORITY_LOW", "NORMAL"},
                InterruptionLevel.ACTIVE, new String[] {"service_active", "PRIORITY_DEFAULT", "NORMAL"},
                InterruptionLevel.TIME_SENSITIVE, new String[] {"service_time_sensitive", "PRIORITY_HIGH", "HIGH"},
                InterruptionLevel.CRITICAL, new String[] {"service_critical", "PRIORITY_HIGH", "HIGH"});
        for (InterruptionLevel level : InterruptionLevel.values()) {
            String token = TestTokens.fcm();
            assertThat(send(message(token, Priority.NORMAL, level, false))).isInstanceOf(DeliveryResult.Accepted.class);
            JsonNode android = only(token).message().get("android");
            assertThat(android.get("notification").get("channel_id").stringValue()).as(level.value())
                    .isEqualTo(expected.get(level)[0]);
            assertThat(android.get("notification").get("notification_priority").stringValue()).as(level.value())
                    .isEqualTo(expected.get(level)[1]);
            assertThat(android.get("priority").stringValue()).as(level.value()).isEqualTo(expected.get(level)[2]);
            // passive is quiet: the requested sound is not sent
            assertThat(android.get("notification").has("sound")).as(level.value())
                    .isEqualTo(level != InterruptionLevel.PASSIVE);
        }
    }

    @Test
    void urgentQueuesSendHighPriority() throws Exception {
        Map<Priority, String> expected = Map.of(Priority.TRANSACTIONAL, "HIGH", Priority.HIGH, "HIGH",
                Priority.NORMAL, "NORMAL", Priority.BULK, "NORMAL");
        for (Priority priority : Priority.values()) {
            String token = TestTokens.fcm();
            send(message(token, priority, InterruptionLevel.PASSIVE, false));
            assertThat(only(token).message().get("android").get("priority").stringValue()).as(priority.value())
                    .isEqualTo(expected.get(priority));
        }
    }

    @Test
    void backgroundPushIsDataOnlyAndNormalPriority() throws Exception {
        String token = TestTokens.fcm();
        PushMessage message = new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), Platform.ANDROID, token,
                null, null, null, null, Map.of("sync", "inbox"), 60, "sync", "chime", 1, null, null, true, null,
                Priority.TRANSACTIONAL, InterruptionLevel.CRITICAL);

        assertThat(send(message)).isInstanceOf(DeliveryResult.Accepted.class);

        JsonNode m = only(token).message();
        assertThat(m.has("notification")).isFalse();
        assertThat(m.get("data").get("sync").stringValue()).isEqualTo("inbox");
        assertThat(m.get("android").has("notification")).isFalse();
        assertThat(m.get("android").get("priority").stringValue()).isEqualTo("NORMAL");
        assertThat(m.get("android").get("ttl").stringValue()).isEqualTo("60s");
        assertThat(m.get("android").get("collapse_key").stringValue()).isEqualTo("sync");
    }

    @Test
    void androidOverridesSetOnlyTheSafeFields() throws Exception {
        String token = TestTokens.fcm();
        ObjectNode overrides = (ObjectNode) JSON.readTree("""
                {"android":{"priority":"high","collapse_key":"override","tag":"t1","color":"#ff0000",
                 "click_action":"OPEN_ORDER","icon":"ic_stat","direct_boot_ok":true,
                 "channel_id":"my_channel","ttl":"5s","token":"other","title":"hijack"},
                 "ios":{"sound":"ignored"}}""");
        PushMessage message = new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), Platform.ANDROID, token,
                "t", "b", null, null, null, 120, "original", null, null, "CAT", null, false, overrides,
                Priority.BULK, InterruptionLevel.PASSIVE);

        send(message);

        JsonNode m = only(token).message();
        JsonNode android = m.get("android");
        assertThat(m.get("token").stringValue()).isEqualTo(token);
        assertThat(m.get("notification").get("title").stringValue()).isEqualTo("t");
        assertThat(android.get("priority").stringValue()).isEqualTo("HIGH");
        assertThat(android.get("collapse_key").stringValue()).isEqualTo("override");
        assertThat(android.get("direct_boot_ok").booleanValue()).isTrue();
        assertThat(android.get("ttl").stringValue()).isEqualTo("120s");
        assertThat(android.has("title")).isFalse();
        JsonNode n = android.get("notification");
        // an app's own channel replaces the level's (the channel must exist in the app, as documented)
        assertThat(n.get("channel_id").stringValue()).isEqualTo("my_channel");
        assertThat(n.get("notification_priority").stringValue()).isEqualTo("PRIORITY_LOW");
        assertThat(n.get("tag").stringValue()).isEqualTo("t1");
        assertThat(n.get("color").stringValue()).isEqualTo("#ff0000");
        assertThat(n.get("click_action").stringValue()).isEqualTo("OPEN_ORDER");
        assertThat(n.get("icon").stringValue()).isEqualTo("ic_stat");
    }

    @Test
    void accessTokenIsCachedAndRefreshedBeforeExpiry() throws Exception {
        try (LocalFcmServer own = new LocalFcmServer(0).start()) {
            own.tokenLifetime(Duration.ofSeconds(10));
            LocalServiceAccount sa = LocalServiceAccount.registeredWith(own, "refresh-project");
            // refreshed in the background once under 6 s of its 10 s are left, synchronously under 3 s:
            // the server's 10 s expiry leaves slack for a loaded machine
            try (FcmProvider p = FcmProvider.builder(fixed(sa.credentials(own.tokenUri())))
                    .properties(FcmProperties.defaults().withBaseUrl(own.baseUrl())).tokenMargins(Duration.ofSeconds(6), Duration.ofSeconds(3)).build()) {
                // a first burst shares one token fetch
                List<CompletableFuture<DeliveryResult>> burst = new ArrayList<>();
                for (int i = 0; i < 50; i++) burst.add(p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false)));
                for (CompletableFuture<DeliveryResult> f : burst) {
                    assertThat(f.get(10, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
                }
                assertThat(own.tokenRequests()).isEqualTo(1);

                long sent = 50;
                long until = System.nanoTime() + Duration.ofSeconds(9).toNanos();
                while (System.nanoTime() < until) {
                    DeliveryResult r = p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false))
                            .get(10, TimeUnit.SECONDS);
                    assertThat(r).isInstanceOf(DeliveryResult.Accepted.class);
                    sent++;
                    // real time must pass: the sends span the 10 s token lifetime to show none goes out expired
                    Thread.sleep(20);
                }
                assertThat(own.unauthorizedSends()).isZero();
                assertThat(own.sendsAccepted()).isEqualTo(sent);
                // about 9 s with tokens renewed every ~4 s: a few fetches, never one per send
                assertThat(own.tokenRequests()).isBetween(2L, 5L);
                assertThat(sent).isGreaterThan(100);
            }
        }
    }

    @Test
    void unregisteredTokenIsRejectedAndInvalidated() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.unregistered());

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isTrue();
            assertThat(r.reason()).isEqualTo(ReasonCode.TOKEN_UNREGISTERED);
            assertThat(r.detail()).startsWith("UNREGISTERED").doesNotContain(token);
        });
    }

    @Test
    void invalidRegistrationTokenIsRejectedAndInvalidated() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.invalidToken());

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isTrue();
            assertThat(r.reason()).isEqualTo(ReasonCode.TOKEN_INVALID);
            assertThat(r.detail()).startsWith("INVALID_ARGUMENT");
        });
    }

    @Test
    void otherInvalidArgumentIsRejectedButKeepsTheToken() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                "Invalid value at 'message.android.notification.color'"));

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isFalse();
            assertThat(r.reason()).isEqualTo(ReasonCode.PAYLOAD_INVALID);
            assertThat(r.detail()).startsWith("INVALID_ARGUMENT");
        });
    }

    @Test
    void senderIdMismatchIsRejectedButKeepsTheToken() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH",
                "SenderId mismatch"));

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.tokenInvalid()).isFalse();
            assertThat(r.reason()).isEqualTo(ReasonCode.SENDER_MISMATCH);
            assertThat(r.detail()).startsWith("SENDER_ID_MISMATCH");
        });
    }

    @Test
    void quotaExceededIsTransientAndHonoursRetryAfterSeconds() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED",
                "Quota exceeded").withHeader("Retry-After", "17"));

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
            assertThat(f.retryAfter()).isEqualTo(Duration.ofSeconds(17));
            assertThat(f.reason()).isEqualTo(ReasonCode.RATE_LIMITED);
            assertThat(f.detail()).startsWith("QUOTA_EXCEEDED");
        });
    }

    @Test
    void unavailableIsTransientAndHonoursRetryAfterDate() throws Exception {
        String token = TestTokens.fcm();
        String in30s = DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(ZoneOffset.UTC).plusSeconds(30));
        server.replyFor(token, LocalFcmServer.Reply.error(503, "UNAVAILABLE", "UNAVAILABLE", "The service is unavailable.")
                .withHeader("Retry-After", in30s));

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
            assertThat(f.retryAfter().toSeconds()).isCloseTo(30, within(2L));
            assertThat(f.reason()).isEqualTo(ReasonCode.PROVIDER_UNAVAILABLE);
            assertThat(f.detail()).startsWith("UNAVAILABLE");
        });
    }

    @Test
    void internalErrorIsTransientWithoutRetryAfter() throws Exception {
        String token = TestTokens.fcm();
        server.replyFor(token, LocalFcmServer.Reply.error(500, "INTERNAL", "INTERNAL", "Internal error"));

        DeliveryResult result = send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class, f -> {
            assertThat(f.retryAfter()).isNull();
            assertThat(f.reason()).isEqualTo(ReasonCode.PROVIDER_UNAVAILABLE);
        });
    }

    @Test
    void unreachableFcmIsTransient() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        try (FcmProvider p = FcmProvider.builder(fixed(account.credentials(server.tokenUri())))
                .properties(FcmProperties.defaults().withBaseUrl(URI.create("http://127.0.0.1:" + closedPort))).build()) {
            DeliveryResult result = p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false))
                    .get(20, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Failed.class,
                    f -> assertThat(f.reason()).isEqualTo(ReasonCode.CONNECTION_FAILED));
        }
    }

    @Test
    void serviceAccountRefusedByTokenEndpointIsRejected() throws Exception {
        LocalServiceAccount unknown = LocalServiceAccount.generate("demo-project"); // never registered
        try (FcmProvider p = providerFor(fixed(unknown.credentials(server.tokenUri())), 10)) {
            long refusedBefore = server.tokensRefused();
            long answeredBefore = server.sendsAnswered();

            DeliveryResult result = p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false))
                    .get(20, TimeUnit.SECONDS);

            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
                assertThat(r.reason()).isEqualTo(ReasonCode.CREDENTIALS_INVALID);
                assertThat(r.detail()).startsWith("access token request failed");
            });
            assertThat(server.tokensRefused()).isGreaterThan(refusedBefore);
            assertThat(server.sendsAnswered()).isEqualTo(answeredBefore);
        }
    }

    @Test
    void appWithoutCredentialsIsRejected() throws Exception {
        try (FcmProvider p = providerFor(id -> Optional.empty(), 10)) {
            DeliveryResult result = p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false))
                    .get(5, TimeUnit.SECONDS);
            assertThat(result).isInstanceOfSatisfying(DeliveryResult.Rejected.class,
                    r -> assertThat(r.reason()).isEqualTo(ReasonCode.CREDENTIALS_MISSING));
        }
    }

    @Test
    void replacedCredentialIsUsedFromItsNewVersion() throws Exception {
        LocalServiceAccount second = LocalServiceAccount.registeredWith(server, "second-project");
        AtomicReference<CredentialSource.Versioned<FcmCredentials>> current =
                new AtomicReference<>(new CredentialSource.Versioned<>(account.credentials(server.tokenUri()), 1));
        try (FcmProvider p = providerFor(id -> Optional.of(current.get()), 10)) {
            String before = TestTokens.fcm();
            send(p, message(before, Priority.NORMAL, InterruptionLevel.ACTIVE, false));
            current.set(new CredentialSource.Versioned<>(second.credentials(server.tokenUri()), 2));
            String after = TestTokens.fcm();
            send(p, message(after, Priority.NORMAL, InterruptionLevel.ACTIVE, false));

            assertThat(only(before).project()).isEqualTo("demo-project");
            assertThat(only(after).project()).isEqualTo("second-project");
        }
    }

    @Test
    void inFlightRequestsAreBoundedSoASlowFcmAppliesBackPressure() throws Exception {
        try (LocalFcmServer slow = new LocalFcmServer(0).start()) {
            LocalServiceAccount sa = LocalServiceAccount.registeredWith(slow, "slow-project");
            try (FcmProvider p = FcmProvider.builder(fixed(sa.credentials(slow.tokenUri())))
                         .properties(FcmProperties.defaults().withBaseUrl(slow.baseUrl()).withMaxInFlight(4)).build();
                 var callers = Executors.newVirtualThreadPerTaskExecutor()) {
                List<String> tokens = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    String token = TestTokens.fcm();
                    slow.replyFor(token, LocalFcmServer.Reply.ok().delayed(Duration.ofMillis(300)));
                    tokens.add(token);
                }
                long start = System.nanoTime();
                List<java.util.concurrent.Future<DeliveryResult>> results = new ArrayList<>();
                for (String token : tokens) {
                    results.add(callers.submit(() -> p.send(message(token, Priority.NORMAL, InterruptionLevel.ACTIVE,
                            false)).get(20, TimeUnit.SECONDS)));
                }
                for (var r : results) {
                    assertThat(r.get(30, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
                }
                Duration took = Duration.ofNanos(System.nanoTime() - start);

                // 12 callers, 4 slots: the server never holds more than 4, and 300 ms answers need three rounds
                assertThat(slow.maxConcurrentSends()).isEqualTo(4);
                assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(850));
                assertThat(slow.sendsAccepted()).isEqualTo(12);
                assertThat(p.inFlight()).isZero();
            }
        }
    }

    @Test
    void aBurstAtStartSharesOneHttp2Connection() throws Exception {
        try (LocalFcmServer fresh = new LocalFcmServer(0).start()) {
            LocalServiceAccount sa = LocalServiceAccount.registeredWith(fresh, "burst-project");
            try (FcmProvider p = FcmProvider.builder(fixed(sa.credentials(fresh.tokenUri())))
                    .properties(FcmProperties.defaults().withBaseUrl(fresh.baseUrl()).withMaxInFlight(500)).build()) {
                List<CompletableFuture<DeliveryResult>> sent = new ArrayList<>();
                for (int i = 0; i < 300; i++) {
                    sent.add(p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false)));
                }
                for (CompletableFuture<DeliveryResult> f : sent) {
                    assertThat(f.get(20, TimeUnit.SECONDS)).isInstanceOf(DeliveryResult.Accepted.class);
                }
                assertThat(fresh.http2Sends()).isEqualTo(300);
                // one connection for the token endpoint (google-auth's HTTP/1.1), one for all 300 sends
                assertThat(fresh.connections()).isLessThanOrEqualTo(2);
            }
        }
    }

    @Test
    void messageThatCannotBeBuiltIsRejectedNotAFailedFuture() throws Exception {
        Object unwritable = new Object() {
            @SuppressWarnings("unused")
            public String getBoom() {
                throw new IllegalStateException("cannot be written");
            }
        };
        PushMessage m = new PushMessage(appId, null, null, Platform.ANDROID, TestTokens.fcm(), "t", "b", null, null,
                java.util.Map.of("x", unwritable), null, null, null, null, null, null, false, null, null, null);

        CompletableFuture<DeliveryResult> sent = provider.send(m);

        assertThat(sent.get(5, TimeUnit.SECONDS)).isInstanceOfSatisfying(DeliveryResult.Rejected.class, r -> {
            assertThat(r.reason()).isEqualTo(ReasonCode.PAYLOAD_INVALID);
            assertThat(r.tokenInvalid()).isFalse();
        });
    }

    @Test
    void emptyRegistrationTokenIsRejectedBeforeSending() throws Exception {
        long answeredBefore = server.sendsAnswered();

        DeliveryResult result = send(message(" ", Priority.NORMAL, InterruptionLevel.ACTIVE, false));

        assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.TOKEN_INVALID, "empty FCM registration token"));
        assertThat(server.sendsAnswered()).isEqualTo(answeredBefore);
    }

    @Test
    void storedCredentialsThatNoLongerPassAreRejectedAsInvalid() throws Exception {
        try (FcmProvider p = providerFor(id -> {
            throw new CredentialSource.Unusable("the stored FCM service account no longer passes its checks");
        }, 10)) {
            DeliveryResult result = p.send(message(TestTokens.fcm(), Priority.NORMAL, InterruptionLevel.ACTIVE, false))
                    .get(5, TimeUnit.SECONDS);
            assertThat(result).isEqualTo(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID,
                    "the stored FCM service account no longer passes its checks"));
        }
    }

    @Test
    void messageForAnotherPlatformIsMisuse() {
        PushMessage ios = new PushMessage(appId, null, null, Platform.IOS, "abc", "t", "b", null, null, null, null,
                null, null, null, null, null, false, null, null, null);
        assertThat(provider.send(ios)).isCompletedExceptionally();
    }

    private FcmProvider providerFor(CredentialSource<FcmCredentials> source, int maxInFlight) {
        return FcmProvider.builder(source).properties(FcmProperties.defaults().withBaseUrl(server.baseUrl())
                .withMaxInFlight(maxInFlight).withRequestTimeout(Duration.ofSeconds(10))).build();
    }

    private static CredentialSource<FcmCredentials> fixed(FcmCredentials credentials) {
        return id -> Optional.of(new CredentialSource.Versioned<>(credentials, 1));
    }

    private PushMessage message(String token, Priority priority, InterruptionLevel level, boolean background) {
        return new PushMessage(appId, UUID.randomUUID(), UUID.randomUUID(), Platform.ANDROID, token,
                background ? null : "Title", background ? null : "Body", null, null, null, null, null, "chime", null,
                null, null, background, null, priority, level);
    }

    private DeliveryResult send(PushMessage message) throws InterruptedException, ExecutionException, TimeoutException {
        return send(provider, message);
    }

    private static DeliveryResult send(FcmProvider p, PushMessage message)
            throws InterruptedException, ExecutionException, TimeoutException {
        return p.send(message).get(20, TimeUnit.SECONDS);
    }

    private static LocalFcmServer.Received only(String token) {
        List<LocalFcmServer.Received> received = server.receivedFor(token);
        assertThat(received).hasSize(1);
        return received.getFirst();
    }

}
