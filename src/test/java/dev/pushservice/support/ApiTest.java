package dev.pushservice.support;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Set;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Base of API tests: the whole application on a random port, against this JVM's test database
 * ({@link TestDatabase}), driven over real HTTP by {@link #api}. Each test makes its own
 * organisation and app ({@link #newApp()}), so tests never see each other's data. The
 * application's clock is a {@link TestClock}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        // a webhook timeout a test can wait out; here, not in database(), so a subclass's
        // @DynamicPropertySource can override it (the superclass's dynamic properties win over a subclass's)
        "push.webhooks.timeout=2s",
        // the dashboard's device counts counted at every view, so a test sees what it just registered
        // (DeviceCountsCacheTests checks the cache the service runs with)
        "push.dashboard.device-counts-refresh=0",
        // a fan-out analyzes the recipients' partition it fills after 8 rows (RecipientStatisticsTests), not 10,000
        "push.notifications.analyze-after=8"})
@org.springframework.context.annotation.Import(TestClock.Config.class)
public abstract class ApiTest {

    private static final Path DATA_DIR;
    /** The shared test CA ({@link TestCertificates#shared()}) as PEM: HTTPS webhook receivers use its server certificate. */
    private static final Path WEBHOOK_CA;

    static {
        try {
            DATA_DIR = Files.createTempDirectory("push-test-data");
            WEBHOOK_CA = Files.writeString(DATA_DIR.resolve("webhook-test-ca.pem"), TestCertificates.pem(TestCertificates.shared().ca));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @LocalServerPort
    protected int port;

    /** The running app's data dir (its generated secret key lives there). */
    protected static Path dataDir() {
        return DATA_DIR;
    }

    @Autowired
    protected TenantService tenants;

    protected TestApi api;

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        registry.add("push.database-url", () -> TestDatabase.asDatabaseUrlSetting(TestDatabase.url()));
        registry.add("push.data-dir", DATA_DIR::toString);
        registry.add("push.bootstrap.enabled", () -> "false");
        // small fan-out pages, so a handful of devices already spans several pages
        registry.add("push.notifications.fanout-page-size", () -> "4");
        // webhooks to the tests' loopback receivers
        registry.add("push.webhooks.allow-insecure", () -> "true");
        // every application in the test JVM trusts the test CA for webhooks (any of them may claim a delivery)
        registry.add("push.webhooks.trusted-ca-file", WEBHOOK_CA::toString);
        // segment-triggered journeys evaluated every second, so entry tests wait seconds, not a minute
        registry.add("push.journeys.segment-entry-interval", () -> "1s");
        // small walk batches, so a few dozen users already span several; a walk again at every pass
        registry.add("push.journeys.segment-batch-size", () -> "20");
        registry.add("push.journeys.segment-rescan-interval", () -> "0s");
    }

    @org.junit.jupiter.api.BeforeEach
    void connectClient() {
        api = new TestApi("http://127.0.0.1:" + port);
    }

    /** A fresh organisation with one app, a server key with every scope and a public key. */
    protected TestApp newApp() {
        Tenants.Organisation org = tenants.createOrganisation(TestTokens.unique("test org "));
        Tenants.App app = tenants.createApp(org.id(), "test app", "UTC");
        String server = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
        String client = tenants.issueKey(app.id(), KeyKind.PUBLIC, "public", Set.of(), null).rawKey();
        return new TestApp(org.id(), app.id(), server, client);
    }

    /** A server key of {@code app} holding only {@code scopes}. */
    protected String serverKey(TestApp app, Scope... scopes) {
        return tenants.issueKey(app.appId(), KeyKind.SERVER, "limited", EnumSet.copyOf(Set.of(scopes)), null).rawKey();
    }

    public record TestApp(UUID orgId, UUID appId, String serverKey, String publicKey) {
    }
}
