package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import dev.pushservice.platform.db.DatabaseUrl;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The relay from {@code lifecycle_events} to webhook deliveries under concurrent writers whose
 * transactions commit out of id order: transactions that take low ids and commit seconds later,
 * after many others with higher ids have committed and been relayed. Every committed fact must reach
 * its subscribed endpoint, once (one delivery, one {@code webhook-id}), over real HTTP.
 */
class WebhookRelayTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int WRITERS = 20;
    /** Writers that hold one transaction open for seconds while inserting all their facts. */
    private static final int HOLDERS = 4;
    private static final int FACTS_PER_WRITER = 5_000;
    private static final int TOTAL = WRITERS * FACTS_PER_WRITER;
    private static final String INSERT = """
            insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
            select ?, 'notification.created', gen_random_uuid(), jsonb_build_object('writer', ?, 'n', n), now()
            from generate_series(?, ?) as n""";

    @Autowired
    JdbcClient jdbc;

    @Test
    void everyCommittedFactIsDeliveredOnceWhateverTheCommitOrderAndTransactionSize() throws Exception {
        // per writer its own app, subscribed endpoint and path: 20 endpoints, so delivery is not one endpoint's 8 slots
        Map<String, String> factByDelivery = new ConcurrentHashMap<>();
        Set<String> deliveredTwice = ConcurrentHashMap.newKeySet();
        AtomicLong lastRequest = new AtomicLong(System.nanoTime());
        HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        receiver.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        receiver.createContext("/", exchange -> {
            JsonNode data = JSON.readTree(exchange.getRequestBody().readAllBytes()).path("data");
            String fact = data.path("writer").asInt() + ":" + data.path("n").asInt();
            String deliveryId = exchange.getRequestHeaders().getFirst("webhook-id");
            // a retry of the same delivery (same webhook-id) is allowed; a second delivery of a fact is not
            String before = factByDelivery.putIfAbsent(deliveryId, fact);
            if (before != null && !before.equals(fact)) deliveredTwice.add(deliveryId);
            lastRequest.set(System.nanoTime());
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
        });
        receiver.start();
        ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
        try {
            List<UUID> apps = new ArrayList<>();
            List<UUID> webhooks = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                TestApp app = newApp();
                apps.add(app.appId());
                TestApi.Response r = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"http://127.0.0.1:"
                        + receiver.getAddress().getPort() + "/writer-" + w + "\",\"events\":[\"notification.created\"]}");
                assertThat(r.status()).as(r.toString()).isEqualTo(201);
                webhooks.add(UUID.fromString(r.json().path("webhook_id").asString()));
            }

            DatabaseUrl db = TestDatabase.url();
            CountDownLatch holdersStarted = new CountDownLatch(HOLDERS);
            CountDownLatch othersDone = new CountDownLatch(WRITERS - HOLDERS);
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                UUID app = apps.get(w);
                running.add(writers.submit(() -> {
                    boolean[] counted = {false};
                    try (Connection c = DriverManager.getConnection(db.jdbcUrl(), db.username(), db.password());
                         PreparedStatement insert = c.prepareStatement(INSERT)) {
                        c.setAutoCommit(false);
                        if (writer < HOLDERS) {
                            // one transaction: its first facts take low ids, the rest come in batches while the
                            // others write and commit far more (and higher) ids, and it commits seconds later
                            for (int from = 0; from < FACTS_PER_WRITER; from += 250) {
                                insert(insert, app, writer, from, Math.min(FACTS_PER_WRITER, from + 250));
                                if (from == 0) {
                                    holdersStarted.countDown();
                                    counted[0] = true;
                                }
                                Thread.sleep(100);
                            }
                            othersDone.await();
                            Thread.sleep(1500); // the relay has moved on well past this transaction's ids
                            c.commit();
                        } else {
                            holdersStarted.await();
                            // many transactions of 1 to 400 facts each
                            int from = 0;
                            int size = 1 + writer;
                            while (from < FACTS_PER_WRITER) {
                                int to = Math.min(FACTS_PER_WRITER, from + size);
                                insert(insert, app, writer, from, to);
                                c.commit();
                                from = to;
                                size = size * 7 % 400 + 1;
                            }
                            othersDone.countDown();
                            counted[0] = true;
                        }
                    } finally {
                        // a writer that failed (no connection, a statement refused) releases the others, so
                        // the test fails at once with its cause instead of every writer waiting for it
                        if (!counted[0]) (writer < HOLDERS ? holdersStarted : othersDone).countDown();
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) f.get(5, TimeUnit.MINUTES);

            // wait for every fact, or until nothing has arrived for 20 s (a skipped fact never comes)
            while (factByDelivery.size() < TOTAL
                    && System.nanoTime() - lastRequest.get() < TimeUnit.SECONDS.toNanos(20)) {
                Thread.sleep(200);
            }
            Set<String> facts = ConcurrentHashMap.newKeySet();
            facts.addAll(factByDelivery.values());
            assertThat(deliveredTwice).isEmpty();
            assertThat(facts).as("facts received").hasSize(TOTAL);
            assertThat(factByDelivery).as("deliveries received: one per fact").hasSize(TOTAL);
            for (int w = 0; w < WRITERS; w++) {
                for (int n = 0; n < FACTS_PER_WRITER; n += 997) assertThat(facts).contains(w + ":" + n);
            }
            // and in the queue: one delivery per fact, each to the writer's own endpoint
            List<Long> perWebhook = jdbc.sql("""
                            select count(*) from webhook_deliveries where webhook_id = any(:ids)
                            group by webhook_id""")
                    .param("ids", webhooks.toArray(UUID[]::new)).query(Long.class).list();
            assertThat(perWebhook).hasSize(WRITERS).containsOnly((long) FACTS_PER_WRITER);
            assertThat(jdbc.sql("""
                            select count(*) from (select lifecycle_event_id from webhook_deliveries
                                                  where webhook_id = any(:ids) group by lifecycle_event_id having count(*) > 1) twice""")
                    .param("ids", webhooks.toArray(UUID[]::new)).query(Long.class).single()).isZero();
        } finally {
            writers.shutdownNow();
            receiver.stop(0);
        }
    }

    private static void insert(PreparedStatement insert, UUID app, int writer, int from, int to) throws SQLException {
        insert.setObject(1, app);
        insert.setInt(2, writer);
        insert.setInt(3, from);
        insert.setInt(4, to - 1);
        insert.executeUpdate();
    }
}
