package dev.pushservice.notifications;

import dev.pushservice.delivery.DeliveryReasons;
import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.delivery.DeliveryStore.Claimed;
import dev.pushservice.delivery.DeliveryStore.QueueStats;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.db.DeliveryDatabase;
import dev.pushservice.platform.jobs.DeadLetterRepository;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.templates.Renderer;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * SQL of delivery over {@code notification_recipients}, on the delivery connection pool
 * ({@link DeliveryDatabase}), never the API's. Every statement is set-based: a chunk of recipients
 * is claimed or recorded in one statement, the rows of a chunk travel as one JSON array
 * ({@code jsonb_to_recordset}).
 */
@Repository
class DeliveryRecipientRepository {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final JdbcClient jdbc;
    private final DeliveryDatabase db;

    DeliveryRecipientRepository(DeliveryDatabase db) {
        this.db = db;
        this.jdbc = db.jdbc();
    }

    /** Runs {@code work} in one transaction on the delivery pool. */
    <T> T inTransaction(Supplier<T> work) {
        return db.transactions().execute(status -> work.get());
    }

    /**
     * Claims up to {@code limit} due recipients (pending, or sending whose lease ended) of the lane's
     * processing notifications on {@code platform}: marks them sending until {@code leaseEnd}, counts
     * the attempt, returns them with the device token and the frozen render values. A recipient whose
     * device was disabled or invalidated since the fan-out (or is gone) is not claimed for sending: the
     * same statement makes it {@code failed} with {@link DeliveryReasons#DEVICE_DISABLED} or
     * {@link DeliveryReasons#DEVICE_INVALIDATED} (attempts unchanged) and returns it with that reason
     * in {@link Claimed#unsendable()}, so the engine counts it and its notification can finish.
     */
    List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Instant leaseEnd) {
        return claim(lane, platform, limit, now, leaseEnd, DeliveryStore.Apps.ALL);
    }

    /**
     * As {@link #claim(Priority, Platform, int, Instant, Instant)}, of the notifications of {@code apps}
     * only (apps whose provider circuit is open are left out: their recipients are not touched). The
     * filter is on the few processing notifications the claim walks, before any recipient row is read,
     * so the claim keeps its plan through the work index.
     */
    List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Instant leaseEnd, DeliveryStore.Apps apps) {
        if (!org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("a claim runs in a transaction: its plan settings are local to it");
        }
        String[] planner = pinClaimPlan(jdbc);
        List<Claimed> claimed = claimStatement(jdbc, "", lane, platform, limit, now, leaseEnd, apps)
                .query((rs, n) -> claimed(rs, platform, null, now)).list();
        restorePlanner(jdbc, planner);
        return claimed;
    }

    /**
     * The planner settings a claim runs with: no sort, no sequential or bitmap scan, so its plan walks
     * {@code notification_recipients_work_idx} in order and stops at the limit, whatever the statistics say.
     * The recipients' partition is known only when the statement runs (the notification comes from the
     * join), so the planner estimates a notification's rows from the statistics of every partition: from
     * a day partition analyzed while empty (every new day's, until autovacuum or the fan-out analyzes it,
     * {@link RecipientStatistics}) or shared by thousands of one-device notifications, it estimates a few
     * rows and sorts the notification's whole backlog by due time for every chunk instead (a
     * 1,000,000-recipient send on 2026-11-27: 3.1 s per claim, an external merge sort of 700,000 rows,
     * against 10 ms through the index; bench/README.md). JIT off too: the cost PostgreSQL (before 18) adds
     * to a disabled path lifts the whole plan's estimate over {@code jit_above_cost}, and compiling it
     * took 6.2 s per claim under load for a 44 ms execution. Returns the settings as they were, for
     * {@link #restorePlanner}. Local to the caller's transaction.
     */
    static String[] pinClaimPlan(JdbcClient jdbc) {
        return jdbc.sql("""
                        select current_setting('enable_sort') as sort, current_setting('enable_seqscan') as seq,
                               current_setting('enable_bitmapscan') as bitmap, current_setting('jit') as jit,
                               set_config('enable_sort', 'off', true), set_config('enable_seqscan', 'off', true),
                               set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true)""")
                .query((rs, n) -> new String[] {rs.getString("sort"), rs.getString("seq"), rs.getString("bitmap"),
                        rs.getString("jit")})
                .single();
    }

    /** Puts back the planner settings {@link #pinClaimPlan} changed, for the rest of the transaction. */
    static void restorePlanner(JdbcClient jdbc, String[] was) {
        jdbc.sql("select set_config('enable_sort', :sort, true), set_config('enable_seqscan', :seq, true),"
                        + " set_config('enable_bitmapscan', :bitmap, true), set_config('jit', :jit, true)")
                .param("sort", was[0]).param("seq", was[1]).param("bitmap", was[2]).param("jit", was[3])
                .query((rs, n) -> 1).single();
    }

    /** The claim statement of {@link #claim}, after {@code prefix} (a test's {@code explain}). */
    static JdbcClient.StatementSpec claimStatement(JdbcClient jdbc, String prefix, Priority lane, Platform platform,
                                                   int limit, Instant now, Instant leaseEnd, DeliveryStore.Apps apps) {
        // Oldest first, per notification (oldest notification first) through the work index: the
        // ORDER BY keeps every plan on it. Without it the planner took a sequential scan with a LIMIT
        // (it assumes due rows are spread evenly; they are behind every row claimed so far), which in
        // a 100,000-recipient send read the whole table again for each chunk (bench/README.md, "Figures behind design comments").
        // The update finds each row by its key (notification, device), never by its ctid alone: a ctid is
        // unique only within one partition, and on the partitioned table `r.ctid = due.row_id` also matched
        // the row at the same place in every other partition (each claim marked a stranger row of every
        // day's partition `sending`: sent before its due time when that lease ran out). The key lets
        // PostgreSQL prune to the one partition at run time (one index probe, not a probe per partition).
        return jdbc.sql(prefix + """
                        with due as (
                            select w.notification_id, w.device_id, d.token,
                                   case when d.id is null then :invalidated
                                        when not d.enabled then :disabled
                                        when d.invalidated_at is not null then :invalidated end as unsendable
                            from (select n.id from notifications n
                                  where n.status = 'processing' and n.priority = :lane
                                    and n.app_id <> all(:except) and (cast(:only as uuid) is null or n.app_id = :only)
                                  order by n.created_at, n.id) n
                            cross join lateral (
                                select r.notification_id, r.device_id
                                from notification_recipients r
                                where r.notification_id = n.id and r.platform = :platform
                                  and r.status in ('pending', 'sending') and r.next_attempt_at <= :now
                                order by r.next_attempt_at
                                limit :limit
                                for update of r skip locked) w
                            left join devices d on d.id = w.device_id
                            limit :limit),
                        claimed as (
                            update notification_recipients r
                            set status = case when due.unsendable is null then 'sending' else 'failed' end,
                                attempts = r.attempts + case when due.unsendable is null then 1 else 0 end,
                                last_error = coalesce(due.unsendable, r.last_error),
                                next_attempt_at = case when due.unsendable is null then :lease_end else r.next_attempt_at end,
                                updated_at = :now
                            from due where r.notification_id = due.notification_id and r.device_id = due.device_id
                            returning r.notification_id, r.device_id, r.app_id, r.attempts, r.external_user_id,
                                      r.render_values::text as render_values, r.expires_at)
                        select c.*, due.token, due.unsendable from claimed c
                        join due on due.notification_id = c.notification_id and due.device_id = c.device_id""")
                .param("lane", lane.value()).param("platform", platform.value()).param("now", ts(now))
                .param("lease_end", ts(leaseEnd)).param("limit", limit)
                .param("except", apps.except().toArray(UUID[]::new)).param("only", apps.only())
                .param("disabled", DeliveryReasons.DEVICE_DISABLED).param("invalidated", DeliveryReasons.DEVICE_INVALIDATED);
    }

    /**
     * Leases whole unleased handovers (V59) of the lane's processing notifications on {@code platform},
     * oldest notification first and within it oldest handover first, as many as hold at most {@code room}
     * recipients together (none when the first holds more): sets their lease to {@code leaseEnd} and
     * returns their recipients as handed ({@link DeliveryStore.Handed}, their first attempt counted, the
     * device token read now), for the lane's hand-over queue. A recipient whose device was disabled or
     * invalidated since the fan-out (or is gone) is not leased for sending: the same statement inserts its
     * row {@code failed} with {@link DeliveryReasons#DEVICE_DISABLED} or {@link DeliveryReasons#DEVICE_INVALIDATED}
     * (no attempt), counts it recorded on its handover and returns it as a claim returns such a row (not
     * handed, with the reason in {@link Claimed#unsendable()}). The statement moves the counts itself:
     * every entry off {@code pending}, the sendable ones onto {@code sending} (the failed rows count
     * themselves). Handovers another transaction holds are skipped ({@code SKIP LOCKED}); apps as in
     * {@link #claim}. In a transaction: a handover all of whose recipients were unsendable is deleted by
     * the same transaction ({@link #dropRecordedHandovers}).
     */
    List<Claimed> leaseHandovers(Priority lane, Platform platform, int room, Instant now, Instant leaseEnd,
                                 DeliveryStore.Apps apps) {
        if (room < 1) return List.of();
        if (!org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("a lease runs in a transaction with the delete of what it emptied");
        }
        // A claimer asks every poll, and nearly always there is nothing to lease: this look is planned in
        // microseconds, the statement below in about a millisecond (pg_stat_statements, bench/README.md)
        if (!jdbc.sql("select exists (select 1 from notification_handovers where lease_until is null and platform = :platform)")
                .param("platform", platform.value()).query(Boolean.class).single()) {
            return List.of();
        }
        java.util.Set<Long> emptied = new java.util.HashSet<>();
        List<Claimed> leased = jdbc.sql("""
                        with cand as (
                            select o.id, o.handed, row_number() over () as ord
                            from (select n.id from notifications n
                                  where n.status = 'processing' and n.priority = :lane
                                    and n.app_id <> all(:except) and (cast(:only as uuid) is null or n.app_id = :only)
                                  order by n.created_at, n.id) n
                            cross join lateral (
                                select o.id, o.handed from notification_handovers o
                                where o.notification_id = n.id and o.platform = :platform and o.lease_until is null
                                order by o.id
                                limit :most
                                for update of o skip locked) o
                            limit :most),
                        pick as (select c.id from (select id, sum(handed) over (order by ord) as upto from cand) c
                                 where c.upto <= :room),
                        h as materialized (
                            select o.id, o.notification_id, o.app_id, o.expires_at, o.created_at, o.render_values,
                                   o.device_ids, o.user_ids, o.external_user_ids
                            from notification_handovers o where o.id in (select id from pick)),
                        e as materialized (
                            select h.id as handover_id, h.notification_id, h.app_id, h.expires_at, h.created_at,
                                   l.device_id, l.user_id, l.external_user_id, d.token,
                                   (h.render_values -> l.device_id::text)::text as render_values,
                                   case when d.id is null then :invalidated
                                        when not d.enabled then :disabled
                                        when d.invalidated_at is not null then :invalidated end as unsendable
                            from h
                            cross join lateral unnest(h.device_ids, h.user_ids, h.external_user_ids)
                                as l(device_id, user_id, external_user_id)
                            left join devices d on d.id = l.device_id),
                        bad as (select handover_id, count(*) as n from e where unsendable is not null group by 1),
                        leased as (
                            update notification_handovers o
                            set lease_until = :lease_end, recorded = o.recorded + coalesce(bad.n, 0)
                            from pick left join bad on bad.handover_id = pick.id
                            where o.id = pick.id
                            returning o.id),
                        failed as (
                            insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,
                                external_user_id, status, attempts, last_error, next_attempt_at, due_at, expires_at, updated_at)
                            select e.notification_id, e.device_id, e.app_id, :platform, e.user_id, e.external_user_id,
                                   'failed', 0, e.unsendable, :now, e.created_at, e.expires_at, :now
                            from e where e.unsendable is not null
                            on conflict (notification_id, device_id) do nothing),
                        counts as (
                            insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                            select g.notification_id, g.app_id, :platform, s.status, null, s.n
                            from (select notification_id, app_id, count(*) as total,
                                         count(*) filter (where unsendable is null) as sendable
                                  from e group by 1, 2) g
                            cross join lateral (values ('pending', -g.total), ('sending', g.sendable)) as s(status, n)
                            where s.n <> 0)
                        select e.handover_id, e.notification_id, e.app_id, e.device_id, e.user_id, e.external_user_id,
                               e.token, e.render_values, e.expires_at, e.unsendable,
                               case when e.unsendable is null then 1 else 0 end as attempts
                        from e""")
                .param("lane", lane.value()).param("platform", platform.value()).param("now", ts(now))
                .param("lease_end", ts(leaseEnd)).param("room", room).param("most", LEASED_HANDOVERS)
                .param("except", apps.except().toArray(UUID[]::new)).param("only", apps.only())
                .param("disabled", DeliveryReasons.DEVICE_DISABLED).param("invalidated", DeliveryReasons.DEVICE_INVALIDATED)
                .query((rs, n) -> {
                    long handover = rs.getLong("handover_id");
                    if (rs.getString("unsendable") == null) {
                        return claimed(rs, platform, new DeliveryStore.Handed(handover, rs.getObject("user_id", UUID.class)), now);
                    }
                    emptied.add(handover);
                    return claimed(rs, platform, null, now);
                })
                .list();
        dropRecordedHandovers(emptied); // of those with an unsendable recipient, the ones left with none to send
        return leased;
    }

    /** Handovers one {@link #leaseHandovers} looks at (and may lease) at most. */
    static final int LEASED_HANDOVERS = 16;

    /**
     * Deletes those of {@code ids} whose every recipient is recorded (a lease found them all unsendable:
     * their rows were inserted {@code failed} by it). Their leases are set, so the delete counts nothing.
     */
    void dropRecordedHandovers(Collection<Long> ids) {
        if (ids.isEmpty()) return;
        jdbc.sql("delete from notification_handovers where id = any(:ids) and recorded >= handed")
                .param("ids", ids.toArray(Long[]::new)).update();
    }

    /** A claimed row as delivery reads it: also how a preview reads its sample recipients. */
    static Claimed claimed(ResultSet rs, Platform platform) throws SQLException {
        return claimed(rs, platform, null, null);
    }

    /**
     * A row as {@link #claimed(ResultSet, Platform)} reads it; {@code handed}: listed by that handover, no row yet;
     * {@code claimedAt}: when the attempt was claimed or handed over.
     */
    static Claimed claimed(ResultSet rs, Platform platform, DeliveryStore.Handed handed, Instant claimedAt)
            throws SQLException {
        String unsendable = rs.getString("unsendable");
        String values = unsendable == null ? rs.getString("render_values") : null;
        OffsetDateTime expiresAt = rs.getObject("expires_at", OffsetDateTime.class);
        Map<String, String> tags = null;
        JsonNode properties = null;
        List<String> locales = List.of();
        if (values != null) {
            JsonNode node = JSON.readTree(values);
            JsonNode t = node.get("tags");
            if (t != null && t.isObject()) {
                tags = new HashMap<>();
                for (Map.Entry<String, JsonNode> e : t.properties()) {
                    JsonNode v = e.getValue();
                    tags.put(e.getKey(), v.isString() ? v.stringValue() : v.toString());
                }
            }
            properties = node.get("properties");
            locales = locales(node);
        }
        return new Claimed(rs.getObject("notification_id", UUID.class), rs.getObject("app_id", UUID.class),
                rs.getObject("device_id", UUID.class), platform, unsendable == null ? rs.getString("token") : null,
                rs.getInt("attempts"), new Renderer.Values(rs.getString("external_user_id"), tags, properties, null),
                unsendable, expiresAt == null ? null : expiresAt.toInstant(), locales, handed, claimedAt);
    }

    /** The device's locale, then its user's, as {@link FanOutPageRepository.RenderValues} froze them. */
    private static List<String> locales(JsonNode values) {
        JsonNode device = values.get(FanOutPageRepository.DEVICE_LOCALE);
        JsonNode user = values.get(FanOutPageRepository.USER_LOCALE);
        if (device == null && user == null) return List.of();
        List<String> locales = new java.util.ArrayList<>(2);
        if (device != null && device.isString()) locales.add(device.stringValue());
        if (user != null && user.isString()) locales.add(user.stringValue());
        return locales;
    }

    /** A recipient row a recording wrote. */
    record Written(UUID notificationId, UUID deviceId) {
    }

    /**
     * Records outcomes of claimed recipients: {@code rows} is a JSON array of {@code n} (notification),
     * {@code d} (device), {@code k} (the attempt the outcome is of: the recipient's attempts as claimed),
     * {@code s} (new status), {@code e} (last error code), {@code t} (next attempt, for a retry),
     * {@code p} (provider message id), {@code u} (1: the attempt is given back, a deferred send),
     * {@code o} ({@code retry} or {@code deferred}: the attempt did not end the recipient and is kept in its
     * history; absent: it is not), {@code h} (the provider's HTTP status, when known). A
     * retry of a notification that is no longer processing (cancelled meanwhile) becomes cancelled. Only rows still claimed for that very attempt are touched, so the
     * same outcomes recorded again (a commit whose answer was lost) write nothing, even once the
     * recipient was claimed again for a later attempt.
     *
     * <p>The same statement writes a {@code delivery_attempts} row for each recipient it put back to
     * {@code pending} with an {@code o} (a retry or a deferral: an attempt that did not end it), from the rows it updated:
     * no query per row, nothing written twice, and nothing at all for a chunk whose every recipient ended.
     *
     * @return the rows written that did not end accepted: what a recording does after its statements
     *     (dead letters, invalidations) is for those only, and a large send's batches are all accepted
     */
    List<Written> record(String rows, Instant now) {
        return jdbc.sql("""
                        with written as (
                            update notification_recipients r
                            set status = case when v.s = 'pending'
                                                   and (select n.status from notifications n where n.id = v.n) <> 'processing'
                                              then 'cancelled' else v.s end,
                                -- an expiry keeps the failure that held the recipient back (see expireOverdue)
                                last_error = case when v.s = 'expired' and v.e = 'ttl_expired'
                                                  then coalesce(nullif(r.last_error, 'origin_busy'), v.e) else v.e end,
                                attempts = r.attempts - coalesce(v.u, 0),
                                next_attempt_at = coalesce(v.t, r.next_attempt_at),
                                provider_message_id = coalesce(v.p, r.provider_message_id),
                                updated_at = :now
                            from jsonb_to_recordset(cast(:rows as jsonb)) as v(n uuid, d uuid, k int, s text, e text, t timestamptz, p text, u int, o text, h int)
                            where r.notification_id = v.n and r.device_id = v.d and r.status = 'sending' and r.attempts = v.k
                            returning r.notification_id, r.device_id, r.app_id, r.status, v.k, v.e, v.o, v.h),
                        attempts as (
                            insert into delivery_attempts (notification_id, device_id, app_id, at, attempt, outcome, reason, http_status)
                            select w.notification_id, w.device_id, w.app_id, :now, least(w.k, 32767), w.o, w.e, w.h
                            from written w where w.status = 'pending' and w.o is not null and w.e is not null)
                        select notification_id, device_id from written where status <> 'accepted'""")
                .param("rows", rows).param("now", ts(now))
                .query((rs, n) -> new Written(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class)))
                .list();
    }

    /**
     * Outcomes of handed recipients for {@link #recordHanded}, column by column: bound as arrays, which
     * PostgreSQL reads at a third of the cost of the same rows as JSON (bench/README.md, "Figures behind design comments").
     * Not thread-safe.
     */
    static final class HandedRows {
        private final List<String> handovers;
        private final List<String> devices;
        private final List<String> platforms;
        private final List<String> users;
        private final List<String> externalUserIds;
        private final List<String> attempts;
        private final List<String> statuses;
        private final List<String> errors;
        private final List<String> retryAts;
        private final List<String> providerIds;
        private final List<String> attemptOutcomes;
        private final List<String> httpStatuses;

        HandedRows(int capacity) {
            handovers = new ArrayList<>(capacity);
            devices = new ArrayList<>(capacity);
            platforms = new ArrayList<>(capacity);
            users = new ArrayList<>(capacity);
            externalUserIds = new ArrayList<>(capacity);
            attempts = new ArrayList<>(capacity);
            statuses = new ArrayList<>(capacity);
            errors = new ArrayList<>(capacity);
            retryAts = new ArrayList<>(capacity);
            providerIds = new ArrayList<>(capacity);
            attemptOutcomes = new ArrayList<>(capacity);
            httpStatuses = new ArrayList<>(capacity);
        }

        /**
         * A handed recipient's outcome: its new {@code status}, reason code, retry time and provider message id (each may be
         * null); {@code attemptOutcome}: {@code retry} or {@code deferred} for an attempt that did not end it (its
         * {@code delivery_attempts} row), else null; {@code httpStatus}: the provider's, when known.
         */
        void add(Claimed r, String status, String error, Instant retryAt, String providerId, String attemptOutcome,
                 Integer httpStatus) {
            handovers.add(Long.toString(r.handed().handover()));
            devices.add(r.deviceId().toString());
            platforms.add(r.platform().value());
            users.add(r.handed().userId() == null ? null : r.handed().userId().toString());
            externalUserIds.add(r.values() == null ? null : r.values().externalUserId());
            attempts.add(Integer.toString(r.attempts()));
            statuses.add(status);
            errors.add(error);
            retryAts.add(retryAt == null ? null : retryAt.toString());
            providerIds.add(providerId);
            attemptOutcomes.add(attemptOutcome);
            httpStatuses.add(httpStatus == null ? null : httpStatus.toString());
        }

        boolean isEmpty() {
            return devices.isEmpty();
        }

        /**
         * The column as an array parameter; a column of nulls only (most of them in a batch of retries) as an
         * empty array, which {@code unnest} pads with nulls to the length of the longest.
         */
        private static String[] array(List<String> values) {
            for (String value : values) {
                if (value != null) return values.toArray(String[]::new);
            }
            return new String[0];
        }

        @Override
        public String toString() {
            return "HandedRows[" + devices.size() + "]";
        }
    }

    /**
     * Handed recipients of one handover and platform accepted at their first attempt, in the order recorded;
     * each list position by position ({@code users}, {@code externalUserIds}, {@code providerIds} may hold
     * nulls). Not thread-safe.
     */
    static final class AcceptedBatch {
        final long handover;
        final Platform platform;
        final List<String> devices = new ArrayList<>();
        final List<String> users = new ArrayList<>();
        final List<String> externalUserIds = new ArrayList<>();
        final List<String> providerIds = new ArrayList<>();

        AcceptedBatch(long handover, Platform platform) {
            this.handover = handover;
            this.platform = platform;
        }

        void add(UUID device, UUID user, String externalUserId, String providerId) {
            devices.add(device.toString());
            users.add(user == null ? null : user.toString());
            externalUserIds.add(externalUserId);
            providerIds.add(providerId);
        }

        /** The column as an array parameter, or null when every member has null there (stored null). */
        private static String[] column(List<String> values) {
            for (String value : values) {
                if (value != null) return values.toArray(String[]::new);
            }
            return null;
        }

        @Override
        public String toString() {
            return "AcceptedBatch[" + handover + ", " + platform.value() + ", " + devices.size() + "]";
        }
    }

    /**
     * Records handed recipients accepted at their first attempt (nearly all of a large send) as one
     * {@code notification_recipient_batches} row (V58): their devices, users, external ids and provider
     * message ids as the arrays given, the handover's notification, list key, page time and expiry; its
     * trigger counts them. No row per recipient, no unnest: the arrays are stored as bound. Counts them
     * recorded on the handover and deletes it once all it lists are recorded, as {@link #recordHanded}.
     * Nothing is written when the handover is gone (its lease ended and a reclaim gave its recipients rows,
     * or everything it listed is recorded), or when this batch was written before (its commit went through
     * but the answer was lost: the same batch has the same key, the handover's list key and its first
     * device, and {@code ON CONFLICT DO NOTHING} counts nothing). The handover is locked first, so a reclaim
     * ({@link #reclaimHandovers}) either waits for this recording or has deleted it.
     *
     * @return how many recipients it wrote
     */
    int recordAccepted(AcceptedBatch batch, Instant now) {
        return jdbc.sql("""
                        with o as materialized (
                            select o.id, o.notification_id, o.app_id, o.list_key, o.created_at, o.expires_at
                            from notification_handovers o where o.id = :h for update),
                        b as (
                            insert into notification_recipient_batches (notification_id, list_key, first_device, handover_id,
                                app_id, platform, recorded_at, due_at, expires_at, device_ids, user_ids, external_user_ids,
                                provider_message_ids)
                            select o.notification_id, o.list_key, cast(:first as uuid), o.id, o.app_id, :platform, :now,
                                   o.created_at, o.expires_at, cast(:d as uuid[]), cast(:u as uuid[]), cast(:x as text[]),
                                   cast(:p as text[])
                            from o
                            on conflict (notification_id, list_key, first_device) do nothing
                            returning handover_id, cardinality(device_ids) as n),
                        done as (delete from notification_handovers o using b
                                 where o.id = b.handover_id and o.recorded + b.n >= o.handed returning o.id),
                        counted as (update notification_handovers o set recorded = o.recorded + b.n from b
                                    where o.id = b.handover_id and o.recorded + b.n < o.handed returning o.id)
                        select coalesce(sum(n), 0) from b""")
                .param("h", batch.handover).param("first", batch.devices.getFirst())
                .param("platform", batch.platform.value()).param("now", ts(now))
                .param("d", batch.devices.toArray(String[]::new)).param("u", AcceptedBatch.column(batch.users))
                .param("x", AcceptedBatch.column(batch.externalUserIds)).param("p", AcceptedBatch.column(batch.providerIds))
                .query(Integer.class).single();
    }

    /**
     * Records outcomes of handed recipients (listed by a handover, no row yet) but those accepted at their
     * first attempt ({@link #recordAccepted}): inserts their rows with their outcome, attempts counted,
     * notification, app, due time and expiry from their handover. Counts them recorded on their handover and
     * deletes a handover once all it lists are recorded. A recipient whose handover is gone (its lease ended
     * and a claim gave it a row; or every recipient it listed is recorded) is not inserted, and neither is
     * one that has a row already: a handed outcome is its first attempt's, and a row means that attempt was
     * recorded (this outcome recorded once before) or given to the claim. The handovers are locked first
     * (in id order), as {@link #recordAccepted} does. A retry of a notification that is no longer processing
     * becomes cancelled. A row inserted {@code pending} (a retry or deferral) gets its
     * {@code delivery_attempts} row from the same statement, as in {@link #record}.
     *
     * @return the rows inserted that are not accepted (see {@link #record})
     */
    List<Written> recordHanded(HandedRows rows, Instant now) {
        // Counted on the handover are the rows this statement inserted, never the outcomes it was given:
        // a batch recorded again (its commit went through but the answer was lost, or a step after the
        // commit failed) inserts and counts nothing, so no handover is deleted while recipients it lists
        // are still unrecorded. An update on conflict would not do: a retry recorded once left a pending
        // row, which the same outcome recorded again matched and counted a second time.
        return jdbc.sql("""
                        with v as materialized (
                            select * from unnest(cast(:h as bigint[]), cast(:d as uuid[]), cast(:pl as text[]),
                                                 cast(:u as uuid[]), cast(:x as text[]), cast(:k as int[]),
                                                 cast(:s as text[]), cast(:e as text[]), cast(:t as timestamptz[]),
                                                 cast(:p as text[]), cast(:o as text[]), cast(:hs as int[]))
                                as v(h, d, pl, u, x, k, s, e, t, p, o, hs)),
                        o as materialized (
                            select o.id, o.notification_id, o.app_id, o.created_at, o.expires_at, o.render_values
                            from notification_handovers o where o.id in (select v.h from v) order by o.id for update),
                        ins as (
                            insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,
                                external_user_id, status, attempts, last_error, next_attempt_at, due_at, expires_at,
                                render_values, provider_message_id, updated_at)
                            select o.notification_id, v.d, o.app_id, v.pl, v.u, v.x,
                                   case when v.s = 'pending'
                                             and (select n.status from notifications n where n.id = o.notification_id) <> 'processing'
                                        then 'cancelled' else v.s end,
                                   v.k, v.e, coalesce(v.t, :now), o.created_at, o.expires_at,
                                   case when v.s = 'pending' then o.render_values -> v.d::text end, v.p, :now
                            from v join o on o.id = v.h
                            on conflict (notification_id, device_id) do nothing
                            returning notification_id, device_id, app_id, status, attempts, last_error),
                        attempts as (
                            insert into delivery_attempts (notification_id, device_id, app_id, at, attempt, outcome, reason, http_status)
                            select ins.notification_id, ins.device_id, ins.app_id, :now,
                                   least(ins.attempts + case when v.o = 'deferred' then 1 else 0 end, 32767), v.o, ins.last_error, v.hs
                            from ins
                            join v on v.d = ins.device_id
                            join o on o.id = v.h and o.notification_id = ins.notification_id
                            where ins.status = 'pending' and v.o is not null and ins.last_error is not null),
                        c as (select v.h, count(*) as n from ins
                              join v on v.d = ins.device_id
                              join o on o.id = v.h and o.notification_id = ins.notification_id
                              group by v.h),
                        done as (delete from notification_handovers o using c
                                 where o.id = c.h and o.recorded + c.n >= o.handed returning o.id),
                        counted as (update notification_handovers o set recorded = o.recorded + c.n from c
                                    where o.id = c.h and o.recorded + c.n < o.handed returning o.id)
                        select notification_id, device_id from ins where status <> 'accepted'""")
                .param("h", HandedRows.array(rows.handovers)).param("d", HandedRows.array(rows.devices))
                .param("pl", HandedRows.array(rows.platforms)).param("u", HandedRows.array(rows.users))
                .param("x", HandedRows.array(rows.externalUserIds)).param("k", HandedRows.array(rows.attempts))
                .param("s", HandedRows.array(rows.statuses)).param("e", HandedRows.array(rows.errors))
                .param("t", HandedRows.array(rows.retryAts)).param("p", HandedRows.array(rows.providerIds))
                .param("o", HandedRows.array(rows.attemptOutcomes)).param("hs", HandedRows.array(rows.httpStatuses))
                .param("now", ts(now))
                .query((rs, n) -> new Written(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class)))
                .list();
    }

    /**
     * Gives the recipients of handovers whose lease ended (their instance died or stalled before
     * recording them) a row each, for the claim: those not recorded yet, as {@code pending} due now
     * with their first attempt counted, for notifications of {@code lane} still processing; deletes the
     * handovers. Up to {@code limit} handovers, {@code FOR UPDATE SKIP LOCKED}.
     *
     * @return how many recipients it inserted
     */
    int reclaimHandovers(Priority lane, Instant now, int limit) {
        List<Long> ids = lockExpiredHandovers("processing", lane, now, limit);
        if (ids.isEmpty()) return 0;
        return jdbc.sql("""
                        with expired as (delete from notification_handovers o where o.id = any(:ids) returning o.*)
                        insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,
                            external_user_id, status, attempts, next_attempt_at, due_at, expires_at, render_values,
                            updated_at)
                        select o.notification_id, l.device_id, o.app_id, l.platform, l.user_id, l.external_user_id,
                               'pending', 1, :now, o.created_at, o.expires_at, o.render_values -> l.device_id::text, :now
                        from expired o
                        cross join lateral (""" + UNRECORDED_ENTRIES + """
                            ) l
                        on conflict (notification_id, device_id) do nothing""")
                .param("ids", ids.toArray(Long[]::new)).param("now", ts(now)).update();
    }

    /**
     * The entries of handover {@code o} (its columns in scope) that no batch holds: {@code device_id},
     * {@code platform}, {@code user_id}, {@code external_user_id}; also how the recipient list and the
     * recipient lookup read a handover. A hash anti-join per handover: its
     * batches' device ids are hashed once, then each entry probes them (as {@code NOT IN} the subquery ran
     * again for every entry: 3.5 s for three handovers of 5,000). An entry with a row is left to the
     * caller's {@code ON CONFLICT}.
     */
    static final String UNRECORDED_ENTRIES = """
            select l.* from unnest(o.device_ids, o.platforms, o.user_ids, o.external_user_ids)
                as l(device_id, platform, user_id, external_user_id)
            where not exists (select 1 from notification_recipient_batches b
                              cross join lateral unnest(b.device_ids) as m(device_id)
                              where b.notification_id = o.notification_id and b.handover_id = o.id
                                and m.device_id = l.device_id)""";

    /**
     * Locks up to {@code limit} handovers whose lease ended, of notifications in {@code status} (of
     * {@code lane} only, when given), {@code FOR UPDATE SKIP LOCKED}, and returns their ids. Its own
     * statement, before the one that deletes them and writes their unrecorded entries: that one then reads
     * with a snapshot taken after the locks, so it sees every batch a recording committed for them (a
     * recording locks its handovers first, so none can commit one after this). In a single statement a
     * batch committed between its snapshot and its lock would be invisible, and its devices given a row too.
     */
    private List<Long> lockExpiredHandovers(String status, Priority lane, Instant now, int limit) {
        if (!org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("handovers are locked and then written in one transaction");
        }
        return jdbc.sql("""
                        select o.id from notification_handovers o
                        join notifications n on n.id = o.notification_id
                        where o.lease_until <= :now and n.status = :status
                          and (cast(:lane as text) is null or n.priority = :lane)
                        order by o.lease_until limit :limit
                        for update of o skip locked""")
                .param("now", ts(now)).param("status", status).param("lane", lane == null ? null : lane.value())
                .param("limit", limit).query(Long.class).list();
    }

    /**
     * As {@link #reclaimHandovers}, for cancelled notifications: the recipients not recorded yet are
     * inserted {@code cancelled} (nobody will send them). Up to {@code limit} handovers.
     *
     * @return the recipients it inserted
     */
    List<Stranded> cancelStrandedHandovers(Instant now, int limit) {
        List<Long> ids = lockExpiredHandovers("cancelled", null, now, limit);
        if (ids.isEmpty()) return List.of();
        return jdbc.sql("""
                        with expired as (delete from notification_handovers o where o.id = any(:ids) returning o.*)
                        insert into notification_recipients as r (notification_id, device_id, app_id, platform, user_id,
                            external_user_id, status, attempts, last_error, next_attempt_at, due_at, expires_at,
                            updated_at)
                        select o.notification_id, l.device_id, o.app_id, l.platform, l.user_id, l.external_user_id,
                               'cancelled', 1, :reason, :now, o.created_at, o.expires_at, :now
                        from expired o
                        cross join lateral (""" + UNRECORDED_ENTRIES + """
                            ) l
                        on conflict (notification_id, device_id) do nothing
                        returning r.notification_id, r.device_id, r.app_id, r.platform,
                                  (select n.priority from notifications n where n.id = r.notification_id) as priority""")
                .param("ids", ids.toArray(Long[]::new)).param("now", ts(now)).param("reason", DeliveryReasons.CANCELLED)
                .query((rs, n) -> new Stranded(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class),
                        rs.getObject("app_id", UUID.class), Platform.fromValue(rs.getString("platform")).orElseThrow(),
                        RecipientDelivery.lane(rs.getString("priority"))))
                .list();
    }

    /** A recipient {@link #cancelStranded} made cancelled, with its notification's priority (its lane). */
    record Stranded(UUID notificationId, UUID deviceId, UUID appId, Platform platform, Priority lane) {
    }

    /**
     * Makes cancelled up to {@code limit} recipients of cancelled notifications that nobody will
     * record: {@code pending} or {@code sending} with {@code next_attempt_at <= now} (for a claimed
     * one, its lease ran out: the instance that claimed it died before recording it). The claim only
     * takes recipients of processing notifications, so nothing else ever ends them.
     *
     * <p>Which notifications: those that still have work, read from the work index alone by a loose
     * index scan (one index descent per notification with pending or sending recipients, the same
     * handful the lanes deliver plus any stranded ones), each looked up by primary key for its
     * status. Its cost follows the work in flight, never the number of notifications ever cancelled,
     * and no cancel time bounds it: an instance down for days is covered too. The status lookup is a
     * lateral subquery with a {@code LIMIT} on purpose: as a plain join the planner hash-joined the
     * notifications it had (over-)estimated against a sequential scan of every cancelled notification,
     * reading three times the buffers (bench/README.md, "Figures behind design comments"). Rows are taken
     * {@code FOR UPDATE SKIP LOCKED}, and an instance recording the same rows concurrently either
     * holds them (skipped here) or finds them no longer {@code sending} (its record touches only
     * claimed rows): each row ends once.
     */
    List<Stranded> cancelStranded(Instant now, int limit) {
        return jdbc.sql("""
                        with recursive live(id) as (
                            (select r.notification_id from notification_recipients r
                             where r.status in ('pending', 'sending') order by r.notification_id limit 1)
                            union all
                            select (select r.notification_id from notification_recipients r
                                    where r.status in ('pending', 'sending') and r.notification_id > live.id
                                    order by r.notification_id limit 1)
                            from live where live.id is not null),
                        stranded as (
                            select s.notification_id, s.device_id, n.priority
                            from live
                            cross join lateral (
                                select c.id, c.priority from notifications c where c.id = live.id and c.status = 'cancelled'
                                limit 1) n
                            cross join lateral (
                                select r.notification_id, r.device_id from notification_recipients r
                                where r.notification_id = n.id and r.status in ('pending', 'sending')
                                  and r.next_attempt_at <= :now
                                limit :limit
                                for update of r skip locked) s
                            limit :limit)
                        update notification_recipients r
                        set status = 'cancelled', last_error = :reason, updated_at = :now
                        from stranded where r.notification_id = stranded.notification_id and r.device_id = stranded.device_id
                        returning r.notification_id, r.device_id, r.app_id, r.platform, stranded.priority""")
                .param("now", ts(now)).param("limit", limit).param("reason", DeliveryReasons.CANCELLED)
                .query((rs, n) -> new Stranded(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class),
                        rs.getObject("app_id", UUID.class), Platform.fromValue(rs.getString("platform")).orElseThrow(),
                        RecipientDelivery.lane(rs.getString("priority"))))
                .list();
    }

    /**
     * Makes {@code expired} ({@link DeliveryReasons#TTL_EXPIRED}) up to {@code limit} recipients of
     * processing notifications whose TTL has run out while they waited: due ({@code pending}, or
     * {@code sending} whose lease ran out) and {@code expires_at <= now}. A lane does the same to one it
     * claims, but while its app's provider circuit is open nothing claims it (issue 25): without this,
     * such recipients stayed {@code pending} past their TTL and their notification {@code processing}
     * until the circuit closed. A waiting recipient is always due: a retry or deferral that would come at
     * or after its expiry ends it at once instead.
     *
     * <p>Its {@code last_error} stays the failure that held it back when it had one (its provider's code of a failed
     * attempt, or the open circuit's reason of a deferral): that is why it expired, and {@code expired} already says
     * that it did. {@code ttl_expired} is for one never tried or only put back by {@code origin_busy} (not a failure).
     * {@link #record} does the same for one a lane claims too late.
     *
     * <p>Which notifications: processing ones with a TTL above 0 (a TTL of 0 is tried once whatever the
     * wait; without a TTL the 28-day default is left to the lanes) whose earliest possible expiry has
     * passed (every recipient's expiry is its intended time plus the TTL, and no intended time is before
     * the notification's send time or its {@code scheduled_at}): the handful being delivered, most of
     * them not read further. Their due rows are read through the work index; rows are taken
     * {@code FOR UPDATE SKIP LOCKED}, and a lane recording the same row later finds it no longer
     * {@code sending} for that attempt (its record touches only claimed rows): each row ends once.
     */
    List<Stranded> expireOverdue(Instant now, int limit) {
        return jdbc.sql("""
                        with overdue as (
                            select w.notification_id, w.device_id, n.priority
                            from (select n.id, n.priority from notifications n
                                  where n.status = 'processing' and n.ttl > 0
                                    and least(coalesce(n.scheduled_at, n.queued_at, n.created_at), coalesce(n.queued_at, n.created_at))
                                        + make_interval(secs => n.ttl) <= :now) n
                            cross join lateral (
                                select r.notification_id, r.device_id from notification_recipients r
                                where r.notification_id = n.id and r.status in ('pending', 'sending')
                                  and r.next_attempt_at <= :now and r.expires_at <= :now
                                limit :limit
                                for update of r skip locked) w
                            limit :limit)
                        update notification_recipients r
                        set status = 'expired', last_error = coalesce(nullif(r.last_error, 'origin_busy'), :reason), updated_at = :now
                        from overdue where r.notification_id = overdue.notification_id and r.device_id = overdue.device_id
                        returning r.notification_id, r.device_id, r.app_id, r.platform, overdue.priority""")
                .param("now", ts(now)).param("limit", limit).param("reason", DeliveryReasons.TTL_EXPIRED)
                .query((rs, n) -> new Stranded(rs.getObject("notification_id", UUID.class), rs.getObject("device_id", UUID.class),
                        rs.getObject("app_id", UUID.class), Platform.fromValue(rs.getString("platform")).orElseThrow(),
                        RecipientDelivery.lane(rs.getString("priority"))))
                .list();
    }

    /** Fails the pending recipients of each (notification {@code n}, platform {@code p}) in {@code pairs}: no credentials. */
    int failUnconfigured(String pairs, Instant now) {
        return jdbc.sql("""
                        update notification_recipients r
                        set status = 'failed', last_error = :reason, updated_at = :now
                        from jsonb_to_recordset(cast(:pairs as jsonb)) as v(n uuid, p text)
                        where r.notification_id = v.n and r.platform = v.p and r.status = 'pending'""")
                .param("pairs", pairs).param("reason", DeliveryReasons.CREDENTIALS_MISSING).param("now", ts(now)).update();
    }

    /**
     * Fails the pending recipients of each (app {@code a}, platform {@code p}) in {@code pairs}, of
     * every notification of the app being delivered: the provider refused the app's credentials.
     * Returns the notifications it changed, with their app.
     */
    Map<UUID, UUID> failCredentialsInvalid(String pairs, Instant now) {
        Map<UUID, UUID> ended = new java.util.LinkedHashMap<>();
        jdbc.sql("""
                        with v as (select * from jsonb_to_recordset(cast(:pairs as jsonb)) as v(a uuid, p text)),
                        failed as (
                            update notification_recipients r
                            set status = 'failed', last_error = :reason, updated_at = :now
                            from v, notifications n
                            where n.app_id = v.a and n.status = 'processing'
                              and r.notification_id = n.id and r.platform = v.p and r.status = 'pending'
                            returning r.notification_id, n.app_id)
                        select distinct notification_id, app_id from failed""")
                .param("pairs", pairs).param("reason", DeliveryReasons.CREDENTIALS_INVALID).param("now", ts(now))
                .query((rs, n) -> ended.put(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class))).list();
        return ended;
    }

    void deadLetters(List<DeadLetterRepository.Entry> entries) {
        DeadLetterRepository.insertAll(jdbc, RecipientDelivery.DEAD_LETTER_TASK, entries);
    }

    /**
     * Which of {@code ids} have nothing left to send (no handover either) and are processing and fully
     * materialized, or cancelled without their final counts (recipients were in flight at the cancel).
     */
    List<UUID> nothingLeft(Collection<UUID> ids) {
        return jdbc.sql("""
                        select n.id from notifications n
                        where n.id in (:ids)
                          and (n.status = 'processing' and n.recipient_count is not null
                               or n.status = 'cancelled' and n.summary is null)
                          and not exists (select 1 from notification_recipients r
                                          where r.notification_id = n.id and r.status in ('pending', 'sending'))
                          and not exists (select 1 from notification_handovers o where o.notification_id = n.id)""")
                .param("ids", List.copyOf(ids)).query(UUID.class).list();
    }

    /** Which of {@code ids} are cancelled notifications (by primary key). */
    List<UUID> cancelledAmong(Collection<UUID> ids) {
        return jdbc.sql("select n.id from notifications n where n.id in (:ids) and n.status = 'cancelled'")
                .param("ids", List.copyOf(ids)).query(UUID.class).list();
    }

    /** Due recipients counted up to this many: past it the depth reads as this (a metric, read every 5 s). */
    static final int STATS_DEPTH_CAP = 10_000;

    /**
     * Due work of a lane (pending, or claimed with its lease run out: what a claim would take, and the
     * recipients of unleased handovers, V59), read from the work index and the unleased handovers' index
     * alone: the depth counted up to {@link #STATS_DEPTH_CAP}, the oldest due time as the first entry of
     * each notification's and platform's range (an unleased handover's: its page's time). Counting every due row of a
     * large send (and reading each row for its status) cost PostgreSQL a sixth as much as claiming them
     * (bench/README.md, "Figures behind design comments").
     */
    QueueStats stats(Priority lane, Instant now) {
        return jdbc.sql("""
                        with work as (select n.id from notifications n where n.status = 'processing' and n.priority = :lane)
                        select least(:cap, (select count(*) from (select 1 from notification_recipients r
                                                      where r.notification_id in (select id from work)
                                                        and r.status in ('pending', 'sending') and r.next_attempt_at <= :now
                                                      limit :cap) capped)
                                     + (select coalesce(sum(u.handed), 0) from (
                                            select o.handed from notification_handovers o
                                            where o.notification_id in (select id from work) and o.lease_until is null
                                            limit :cap) u)) as depth,
                               least((select min(first.at) from work
                                      cross join (values ('ios'), ('android'), ('web')) as p(platform)
                                      cross join lateral (select r.next_attempt_at as at from notification_recipients r
                                                          where r.notification_id = work.id and r.platform = p.platform
                                                            and r.status in ('pending', 'sending') and r.next_attempt_at <= :now
                                                          order by r.next_attempt_at limit 1) first),
                                     (select min(first.at) from work
                                      cross join lateral (select o.created_at as at from notification_handovers o
                                                          where o.notification_id = work.id and o.lease_until is null
                                                          order by o.id limit 1) first)) as oldest""")
                .param("lane", lane.value()).param("now", ts(now)).param("cap", STATS_DEPTH_CAP)
                .query((rs, n) -> {
                    OffsetDateTime oldest = rs.getObject("oldest", OffsetDateTime.class);
                    return new QueueStats(rs.getLong("depth"),
                            oldest == null ? Duration.ZERO : Duration.between(oldest.toInstant(), now));
                }).single();
    }

    private static OffsetDateTime ts(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
