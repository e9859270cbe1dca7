package dev.pushservice.notifications;

import dev.pushservice.platform.db.DeliveryDatabase;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL of frequency caps over {@code frequency_cap_sends} (see {@link FrequencyCapping}). What runs in
 * delivery's claim and record transactions uses the delivery pool; cancel and the prune use the API
 * pool. Every statement is set-based: a chunk's recipients travel as one JSON array.
 */
@Repository
class FrequencyCapRepository {

    /** Recipient states whose send is (or may still be) accepted: their counted send is kept. */
    private static final String KEPT = "('accepted', 'pending', 'sending')";

    private final JdbcClient delivery;
    private final JdbcClient api;

    FrequencyCapRepository(DeliveryDatabase db, JdbcClient api) {
        this.delivery = db.jdbc();
        this.api = api;
    }

    /**
     * Takes a transaction-level advisory lock per subject (the user, else the device) of the claimed
     * recipients in {@code rows} ({@code n} notification, {@code d} device) whose notification has no
     * cap override, in sorted order, so two transactions never wait for each other in a cycle. Held
     * until the claim transaction ends. Run it alone, before {@link #admit}: a statement's snapshot is
     * taken when it starts, so the counting must start after the locks are granted to see what the
     * previous holder committed.
     */
    void lockSubjects(String rows) {
        delivery.sql("""
                        select pg_advisory_xact_lock(k.key) from (
                            select distinct hashtextextended('frequency-cap:' || r.app_id || ':'
                                                             || coalesce(r.user_id, r.device_id), 0) as key
                            from jsonb_to_recordset(cast(:rows as jsonb)) as v(n uuid, d uuid)
                            join notification_recipients r on r.notification_id = v.n and r.device_id = v.d
                            join notifications n on n.id = v.n and not n.frequency_cap_override
                            order by 1) k""")
                .param("rows", rows).query().listOfRows();
    }

    /** A recipient the cap kept from its send. */
    record Skipped(UUID notificationId, UUID deviceId) {
    }

    /**
     * Applies the caps to claimed recipients ({@code rows}: {@code n}, {@code d}, {@code l} the app's
     * limit, {@code w} its window in seconds), under the locks of {@link #lockSubjects}, in one
     * statement. Per subject, the notifications counted in the window ({@code sent_at > now - w},
     * distinct notifications) are the ones used; a notification the subject already has a counted
     * send of within the window (another of the user's devices, a retry) goes ahead without a new
     * slot; the chunk's other notifications of the subject take the free slots oldest first. Those
     * admitted get a counted send at {@code now} (a retry's is moved to {@code now}); the rest become
     * {@code skipped_frequency_cap} (their claim's attempt uncounted, a stale counted send of theirs
     * deleted) and are returned. Recipients of notifications with an override are left alone.
     */
    List<Skipped> admit(String rows, Instant now) {
        return delivery.sql("""
                        with cand as materialized (
                            select v.n, v.d, r.app_id, coalesce(r.user_id, r.device_id) as subject, v.l, v.w, n.created_at
                            from jsonb_to_recordset(cast(:rows as jsonb)) as v(n uuid, d uuid, l int, w int)
                            join notification_recipients r on r.notification_id = v.n and r.device_id = v.d
                            join notifications n on n.id = v.n
                            where not n.frequency_cap_override),
                        window_state as materialized (
                            -- one index range per recipient: the subject's counted sends within the window
                            select c.*, w.counted, w.used
                            from cand c cross join lateral (
                                select coalesce(bool_or(f.notification_id = c.n), false) as counted,
                                       count(distinct f.notification_id) as used
                                from frequency_cap_sends f
                                where f.app_id = c.app_id and f.subject = c.subject
                                  and f.sent_at > :now - make_interval(secs => c.w)) w),
                        verdict as materialized (
                            -- one pass, no joins between the chunk's rows: a row's notification is admitted when
                            -- the subject already has it counted, or it is among the free slots (oldest first;
                            -- dense_rank gives one rank to the devices of one notification)
                            select s.n, s.d, s.app_id, s.subject, s.w,
                                   s.counted or s.used + dense_rank() over (partition by s.app_id, s.subject, s.counted
                                                                            order by s.created_at, s.n) <= s.l as admitted
                            from window_state s),
                        counted as (
                            insert into frequency_cap_sends (notification_id, device_id, app_id, subject, sent_at, expires_at)
                            select n, d, app_id, subject, :now, :now + make_interval(secs => w) from verdict where admitted
                            on conflict (notification_id, device_id)
                                do update set sent_at = excluded.sent_at, expires_at = excluded.expires_at),
                        skipped as (
                            update notification_recipients r
                            set status = 'skipped_frequency_cap', attempts = r.attempts - 1, next_attempt_at = :now,
                                updated_at = :now
                            from verdict v
                            where not v.admitted and r.notification_id = v.n and r.device_id = v.d and r.status = 'sending'
                            returning r.notification_id, r.device_id),
                        stale as (
                            delete from frequency_cap_sends f using skipped s
                            where f.notification_id = s.notification_id and f.device_id = s.device_id)
                        select notification_id, device_id from skipped""")
                .param("rows", rows).param("now", ts(now))
                .query((rs, i) -> new Skipped(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class)))
                .list();
    }

    /**
     * Gives back the counted sends of recorded recipients ({@code rows}: {@code n}, {@code d}) that
     * ended other than accepted (rejected, failed, expired, cancelled), in the record transaction;
     * a retry keeps its send.
     */
    int release(String rows) {
        return delivery.sql("""
                        delete from frequency_cap_sends f
                        using jsonb_to_recordset(cast(:rows as jsonb)) as v(n uuid, d uuid), notification_recipients r
                        where f.notification_id = v.n and f.device_id = v.d
                          and r.notification_id = v.n and r.device_id = v.d and r.status not in """ + KEPT)
                .param("rows", rows).update();
    }

    /** Gives back the counted sends of every recipient of {@code ids} that ended other than accepted, on the delivery pool. */
    int releaseUnaccepted(Collection<UUID> ids) {
        return releaseUnaccepted(delivery, ids);
    }

    /** The same in the caller's transaction on the API pool (a cancel). */
    int releaseCancelled(UUID id) {
        return releaseUnaccepted(api, List.of(id));
    }

    private static int releaseUnaccepted(JdbcClient jdbc, Collection<UUID> ids) {
        return jdbc.sql("""
                        delete from frequency_cap_sends f using notification_recipients r
                        where f.notification_id in (:ids) and r.notification_id = f.notification_id
                          and r.device_id = f.device_id and r.status not in """ + KEPT)
                .param("ids", List.copyOf(ids)).update();
    }

    /** Deletes up to {@code batch} counted sends whose window has passed; returns how many. */
    int prune(Instant now, int batch) {
        return api.sql("""
                        delete from frequency_cap_sends where ctid = any (array(
                            select ctid from frequency_cap_sends where expires_at <= :now limit :batch))""")
                .param("now", ts(now)).param("batch", batch).update();
    }

    private static OffsetDateTime ts(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
