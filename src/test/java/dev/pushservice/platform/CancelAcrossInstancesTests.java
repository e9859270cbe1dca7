package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.delivery.fcm.LocalFcmServer;
import dev.pushservice.delivery.fcm.LocalServiceAccount;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.db.DatabaseUrl;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A cancel taken by one instance stops what another instance's delivery workers claimed and have
 * not handed to a provider yet: two application instances on one database, the API on one and the
 * workers on the other, sending to a local FCM peer.
 */
class CancelAcrossInstancesTests {

    private final DatabaseUrl db = TestDatabase.newDatabase();
    private final LocalFcmServer fcm = new LocalFcmServer(0).start();

    @AfterEach
    void stopPeer() {
        fcm.close();
    }

    private AppInstance.Builder instance(String roles) {
        return AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(db))
                .set("push.roles", roles)
                .set("push.fcm.base-url", fcm.baseUrl().toString())
                // the worker's senders wait for FCM slots, so its claimed recipients queue in front of the provider
                .set("push.fcm.max-in-flight", "20");
    }

    @Test
    void aCancelOnOneInstanceStopsWhatAnotherClaimedAndHasNotHandedOver() throws Exception {
        try (AppInstance api = instance("api,scheduler").start();
             AppInstance worker = instance("worker").start()) {
            TenantService tenants = api.bean(TenantService.class);
            Tenants.Organisation org = tenants.createOrganisation("cancel across instances");
            Tenants.App app = tenants.createApp(org.id(), "cancel app", "UTC");
            String key = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            LocalServiceAccount account = LocalServiceAccount.registeredWith(fcm, "cancel-" + app.id());
            TestApi.Response settings = api.api.patch("/v1/app/settings", key,
                    "{\"fcm\":{\"service_account\":" + account.json(fcm.tokenUri()) + "}}");
            assertThat(settings.status()).as(settings.toString()).isEqualTo(200);

            List<String> tokens = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                String token = "cancel-" + UUID.randomUUID();
                tokens.add(token);
                // 20 in flight, a second each: the bulk lane's 400 claimed recipients take 20 s to hand over
                fcm.replyFor(token, LocalFcmServer.Reply.ok().delayed(Duration.ofSeconds(1)));
            }
            JdbcClient jdbc = api.jdbc();
            jdbc.sql("""
                            insert into devices (id, app_id, platform, token, token_hash)
                            select gen_random_uuid(), :app, 'android', t, sha256(convert_to(t, 'UTF8'))
                            from unnest(cast(:tokens as text[])) as t""")
                    .param("app", app.id()).param("tokens", tokens.toArray(String[]::new)).update();
            Set<String> ours = new HashSet<>(tokens);

            TestApi.Response created = api.api.send(api.api.request("/v1/notifications", key)
                    .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"title\":\"sale\",\"body\":\"b\",\"priority\":\"bulk\",\"target\":{\"type\":\"all\"}}")));
            assertThat(created.status()).as(created.toString()).isEqualTo(202);
            String id = created.json().path("notification_id").asString();
            await().atMost(Duration.ofSeconds(30)).until(() -> delivered(ours) >= 20);

            TestApi.Response cancel = api.api.post("/v1/notifications/" + id + "/cancel", key, "");
            assertThat(cancel.status()).as(cancel.toString()).isEqualTo(200);
            long arrivedAtCancel = delivered(ours);

            // nothing in flight: no recipient pending or sending, none handed over and not recorded yet
            await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.sql(
                            "select (select count(*) from notification_recipients where notification_id = cast(:id as uuid)"
                                    + " and status in ('pending', 'sending'))"
                                    + " + (select count(*) from notification_handovers where notification_id = cast(:id as uuid))")
                    .param("id", id).query(Long.class).single() == 0);
            Map<String, Long> byStatus = jdbc.sql("""
                            select status, count(*) as n from notification_recipient_states
                            where notification_id = cast(:id as uuid) group by status""")
                    .param("id", id).query((rs, n) -> Map.entry(rs.getString("status"), rs.getLong("n"))).list()
                    .stream().collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
            long delivered = delivered(ours);
            long recipients = byStatus.values().stream().mapToLong(Long::longValue).sum();
            assertThat(byStatus.keySet()).containsOnly("accepted", "cancelled");
            assertThat(byStatus.get("accepted")).as("exactly what reached the provider is accepted").isEqualTo(delivered);
            // the fan-out keeps pace with delivery (it hands pages to the worker's lane as it has room), so
            // the cancel may stop it before every device is a recipient: none is added after the cancel
            assertThat(recipients).isLessThanOrEqualTo(1_000);
            assertThat(byStatus.get("cancelled")).as("every other recipient is cancelled").isEqualTo(recipients - delivered);
            // The worker had 400 claimed (the bulk lane's budget) when the cancel committed. Without the
            // cross-instance check it would hand all of them over; with it, what reaches FCM after the cancel
            // is what was in flight (20) plus what the two senders handed over before the worker's next
            // check (at most one poll interval, 1 s, at 20 sends a second).
            assertThat(delivered - arrivedAtCancel).as("sent after the cancel on the other instance").isLessThan(100);
        }
    }

    private long delivered(Set<String> ours) {
        return fcm.received().stream().filter(r -> ours.contains(r.message().path("token").asString())).count();
    }
}
