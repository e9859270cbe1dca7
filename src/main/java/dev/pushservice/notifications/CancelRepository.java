package dev.pushservice.notifications;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL of a cancel that finishes in the background ({@link NotificationCancels}), on the API pool.
 * Every statement is keyed by the notification; the batch is one statement per batch.
 */
@Repository
class CancelRepository {

    private final JdbcClient jdbc;

    CancelRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * Marks a processing notification {@code cancelled} at {@code now}, its counts not final (no
     * summary), and {@code cancelling} until its background task has cancelled its pending recipients.
     * One keyed update: no recipient row is touched.
     */
    void markCancelling(UUID appId, UUID id, Instant now) {
        jdbc.sql("""
                        update notifications set status = 'cancelled', finished_at = :now, updated_at = :now, summary = null,
                                                 cancelling = true
                        where app_id = :app and id = :id""")
                .param("now", ts(now)).param("app", appId).param("id", id).update();
    }

    /**
     * Makes up to {@code limit} pending recipients of the notification {@code cancelled} and gives back
     * their frequency-cap slots (a retry holds one), in one statement through the work index. Rows
     * another transaction holds (a claim taking them this instant, a recording) are skipped, never
     * waited for: a claim of a cancelled notification's rows never sends them (the lanes drop them).
     *
     * @return how many were cancelled
     */
    int cancelPendingBatch(UUID appId, UUID id, int limit, Instant now) {
        return jdbc.sql("""
                        with batch as (
                            select r.device_id from notification_recipients r
                            where r.notification_id = :id and r.status = 'pending'
                            limit :limit
                            for update skip locked),
                        cancelled as (
                            update notification_recipients r set status = 'cancelled', updated_at = :now
                            from batch b
                            where r.notification_id = :id and r.device_id = b.device_id and r.app_id = :app
                            returning r.device_id),
                        released as (
                            delete from frequency_cap_sends f using cancelled c
                            where f.notification_id = :id and f.device_id = c.device_id)
                        select count(*) from cancelled""")
                .param("id", id).param("app", appId).param("limit", limit).param("now", ts(now))
                .query(Integer.class).single();
    }

    /**
     * Makes the recipients of up to {@code limit} of the notification's unleased handovers (V59: pending,
     * waiting for any worker's lease) {@code cancelled} rows and deletes those handovers, in one
     * statement; the delete takes them off {@code pending} (V59's trigger), the rows count themselves
     * {@code cancelled}. Handovers a lease holds this instant are skipped: leased, the lanes drop their
     * recipients as they drop claimed ones.
     *
     * @return how many recipients were cancelled
     */
    int cancelUnleasedBatch(UUID appId, UUID id, int limit, Instant now) {
        return jdbc.sql("""
                        with batch as (
                            select o.id from notification_handovers o
                            where o.notification_id = :id and o.lease_until is null
                            order by o.id limit :limit
                            for update skip locked),
                        gone as (
                            delete from notification_handovers o using batch b
                            where o.id = b.id and o.app_id = :app and o.lease_until is null
                            returning o.*)
                        insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,
                            external_user_id, status, attempts, next_attempt_at, due_at, expires_at, updated_at)
                        select g.notification_id, l.device_id, g.app_id, l.platform, l.user_id, l.external_user_id,
                               'cancelled', 0, :now, g.created_at, g.expires_at, :now
                        from gone g
                        cross join lateral unnest(g.device_ids, g.platforms, g.user_ids, g.external_user_ids)
                            as l(device_id, platform, user_id, external_user_id)
                        on conflict (notification_id, device_id) do nothing""")
                .param("id", id).param("app", appId).param("limit", Math.max(1, limit / dev.pushservice.delivery.Handover.UNLEASED_MAX))
                .param("now", ts(now)).update();
    }

    /** Whether the notification has a pending recipient (through the work index), or an unleased handover. */
    boolean hasPending(UUID id) {
        return jdbc.sql("""
                        select exists (select 1 from notification_recipients where notification_id = :id and status = 'pending')
                            or exists (select 1 from notification_handovers where notification_id = :id and lease_until is null)""")
                .param("id", id).query(Boolean.class).single();
    }

    /** Ends the notification's {@code cancelling}; false when it was not (finished already). Lock the row first. */
    boolean endCancelling(UUID appId, UUID id) {
        return jdbc.sql("update notifications set cancelling = false where app_id = :app and id = :id and cancelling")
                .param("app", appId).param("id", id).update() == 1;
    }

    /** A notification still cancelling. */
    record Cancelling(UUID id, UUID appId) {
    }

    /**
     * Up to {@code limit} notifications still cancelling whose background task ({@code task}) is no
     * longer scheduled (dead-lettered): the partial index of V47 finds the few that are cancelling.
     */
    List<Cancelling> cancellingWithoutTask(String task, int limit) {
        return jdbc.sql("""
                        select n.id, n.app_id from notifications n
                        where n.cancelling
                          and not exists (select 1 from scheduled_tasks t where t.task_name = :task and t.task_instance = n.id::text)
                        limit :limit""")
                .param("task", task).param("limit", limit)
                .query((rs, i) -> new Cancelling(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class)))
                .list();
    }

    private static OffsetDateTime ts(Instant at) {
        return OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }
}
