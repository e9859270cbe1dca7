package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The claim shares a worker's slots across endpoints and apps: many endpoints that all have a
 * backlog all make progress from the first passes on, instead of the same few endpoints (those the
 * claim happened to read first) taking every slot until their backlog is gone.
 */
class WebhookFairnessTests extends ApiTest {

    private static final int APPS = 4;
    private static final int ENDPOINTS_PER_APP = 50;
    private static final int ENDPOINTS = APPS * ENDPOINTS_PER_APP;
    private static final int BACKLOG = 20;

    @Autowired
    JdbcClient jdbc;

    @Autowired
    WebhookProperties properties;

    @Test
    void everyEndpointWithABacklogProgressesFromTheFirstPasses() throws Exception {
        // 256 slots (PUSH_WEBHOOKS_MAX_IN_FLIGHT) and 8 per endpoint: 32 endpoints could take them all
        assertThat(properties.maxInFlight()).isLessThan(ENDPOINTS * properties.perEndpointConcurrency());
        assertThat(properties.maxInFlight()).isGreaterThanOrEqualTo(ENDPOINTS);
        ConcurrentLinkedQueue<String> arrivals = new ConcurrentLinkedQueue<>();
        HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        receiver.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        receiver.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            arrivals.add(exchange.getRequestURI().getPath());
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
        });
        receiver.start();
        try {
            List<UUID> webhooks = new ArrayList<>();
            for (int a = 0; a < APPS; a++) {
                TestApp app = newApp();
                for (int e = 0; e < ENDPOINTS_PER_APP; e++) {
                    TestApi.Response r = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"http://127.0.0.1:"
                            + receiver.getAddress().getPort() + "/app-" + a + "/endpoint-" + e + "\",\"events\":[\"webhook.test\"]}");
                    assertThat(r.status()).as(r.toString()).isEqualTo(201);
                    webhooks.add(UUID.fromString(r.json().path("webhook_id").asString()));
                }
            }
            // every endpoint's backlog appears at once (one statement), all due
            int queued = jdbc.sql("""
                            insert into webhook_deliveries (id, app_id, webhook_id, event_type, body, status, next_attempt_at, created_at)
                            select gen_random_uuid(), w.app_id, w.id, 'webhook.test', '{"type":"webhook.test"}', 'pending',
                                   now() - interval '1 second', now()
                            from webhooks w cross join generate_series(1, :backlog)
                            where w.id = any(:ids)""")
                    .param("backlog", BACKLOG).param("ids", webhooks.toArray(UUID[]::new)).update();
            assertThat(queued).isEqualTo(ENDPOINTS * BACKLOG);

            // by the time a quarter of the backlog has arrived, every endpoint has had deliveries
            int quarter = ENDPOINTS * BACKLOG / 4;
            await().atMost(Duration.ofSeconds(60)).until(() -> arrivals.size() >= quarter);
            Map<String, Integer> perEndpoint = new TreeMap<>();
            arrivals.stream().limit(quarter).forEach(path -> perEndpoint.merge(path, 1, Integer::sum));
            assertThat(perEndpoint).as("endpoints served among the first %s arrivals", quarter).hasSize(ENDPOINTS);
            // and none was held back to a share far below the others'
            assertThat(perEndpoint.values()).allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(2));
            await().atMost(Duration.ofSeconds(60)).until(() -> arrivals.size() >= ENDPOINTS * BACKLOG);
            assertThat(Set.copyOf(arrivals)).hasSize(ENDPOINTS);
        } finally {
            receiver.stop(0);
        }
    }
}
