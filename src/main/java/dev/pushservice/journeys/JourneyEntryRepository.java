package dev.pushservice.journeys;

import dev.pushservice.segments.FilterCompiler;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL of segment entries: which journeys start users by segment, where each one's entry stands
 * ({@code journey_segment_scans}, V53), and the batch statements that move its segment membership to
 * what the segment selects now for a bounded set of users and start an execution for each new member
 * the reentry limit admits. Custom-event entries need no Java: V26's trigger on {@code events} starts
 * them in the event batch's own transaction.
 */
@Repository
class JourneyEntryRepository {

    private final JdbcClient jdbc;

    JourneyEntryRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** An active journey whose current version starts users entering a segment. */
    record SegmentJourney(UUID id, UUID appId, int version, int reentryLimit, UUID segmentId, String startNode) {
    }

    /**
     * Every active segment-triggered journey, all apps (a sweep: read through the partial index
     * {@code journeys_segment_trigger_idx}; each one's statement then filters by its app).
     */
    List<SegmentJourney> activeSegmentJourneys() {
        return jdbc.sql("""
                        select j.id, j.app_id, j.current_version, j.reentry_limit, j.trigger_segment_id, v.start_node
                        from journeys j
                        join journey_versions v on v.journey_id = j.id and v.version = j.current_version
                        where j.status = 'active' and j.trigger_type = 'segment' and j.trigger_segment_id is not null
                        order by j.id""")
                .query((rs, n) -> new SegmentJourney(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class), rs.getInt(3),
                        rs.getInt(4), rs.getObject(5, UUID.class), rs.getString(6)))
                .list();
    }

    /** Where a journey's segment entry stands ({@code journey_segment_scans}, V53). */
    record Scan(String generation, String walkAfter, boolean walkDue, int walkBatches, int walks, Instant changesFrom) {
    }

    /** The journey's scan state; {@code walkDue} when no walk is under way and the next one may start now. */
    Optional<Scan> scan(UUID journey) {
        return jdbc.sql("""
                        select generation, walk_after, walk_after is null and next_walk_at <= now(), walk_batches, walks,
                               changes_from
                        from journey_segment_scans where journey_id = :journey""")
                .param("journey", journey)
                .query((rs, n) -> new Scan(rs.getString(1), rs.getString(2), rs.getBoolean(3), rs.getInt(4), rs.getInt(5),
                        rs.getObject(6, OffsetDateTime.class).toInstant()))
                .optional();
    }

    /**
     * Starts a new generation (first activation, a new journey version or segment version): a walk from
     * the first user, and changes read from now on (the walk sees everything before).
     */
    void startGeneration(SegmentJourney journey, String generation) {
        jdbc.sql("""
                        insert into journey_segment_scans as s (journey_id, app_id, generation, walk_after, next_walk_at,
                                                                walk_batches, walks, changes_from)
                        values (:journey, :app, :generation, '', null, 0, 0, now())
                        on conflict (journey_id) do update
                        set generation = excluded.generation, walk_after = '', next_walk_at = null, walk_batches = 0,
                            walks = 0, changes_from = excluded.changes_from""")
                .param("journey", journey.id()).param("app", journey.appId()).param("generation", generation)
                .update();
    }

    /** Starts the next walk of the generation from the first user (its rescan is due). */
    void startWalk(UUID journey, String generation) {
        jdbc.sql("""
                        update journey_segment_scans set walk_after = '', walk_batches = 0
                        where journey_id = :journey and generation = :generation and walk_after is null""")
                .param("journey", journey).param("generation", generation)
                .update();
    }

    /**
     * Starts the generation's walk again from the first user, whether or not one is under way (more
     * users changed than a pass evaluates one by one: the walk sees them all).
     */
    void restartWalk(UUID journey, String generation) {
        jdbc.sql("""
                        update journey_segment_scans set walk_after = '', walk_batches = 0
                        where journey_id = :journey and generation = :generation""")
                .param("journey", journey).param("generation", generation)
                .update();
    }

    /** The changes of the next pass are those at or after {@code from} (database time). */
    void changesFrom(UUID journey, String generation, Instant from) {
        jdbc.sql("update journey_segment_scans set changes_from = :from where journey_id = :journey and generation = :generation")
                .param("journey", journey).param("generation", generation)
                .param("from", OffsetDateTime.ofInstant(from, ZoneOffset.UTC))
                .update();
    }

    /** The database's clock: changes are stamped by it ({@code now()} of the writing transaction). */
    Instant databaseNow() {
        return jdbc.sql("select clock_timestamp()").query((rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant()).single();
    }

    /**
     * What one batch statement did: executions started, users evaluated, the last user's key (the
     * cursor), and whether the journey was still active at the version (when not, nothing changed).
     */
    record Batch(int started, int users, String last, boolean live) {
    }

    /**
     * One batch of a walk, in one statement (in a transaction of its own): the next {@code size} known
     * users of the app after the walk's cursor, in {@code external_user_id} order, are evaluated (see
     * {@link #evaluate}) and the cursor moves past them in the same statement; after the last batch
     * the walk ends and the next is due {@code rescan} later. Nothing changes unless the journey is
     * still active at the version and the scan still of {@code generation} at {@code after}.
     */
    Batch walkBatch(SegmentJourney journey, String generation, String after, int size, Duration rescan,
                    FilterCompiler.Compiled segment, Instant now) {
        String batch = """
                select u.id, u.external_user_id as key from users u
                where u.app_id = :app and u.external_user_id is not null and u.external_user_id > :after
                  and exists (select 1 from live)
                  and exists (select 1 from journey_segment_scans s
                              where s.journey_id = :journey and s.generation = :generation and s.walk_after = :after)
                order by u.external_user_id limit :size""";
        String moved = """
                , moved as (
                    update journey_segment_scans
                    set walk_after = case when (select count(*) from batch) < :size then null
                                          else (select max(key) from batch) end,
                        next_walk_at = case when (select count(*) from batch) < :size
                                            then now() + cast(:rescan as interval) end,
                        walks = walks + case when (select count(*) from batch) < :size then 1 else 0 end,
                        walk_batches = walk_batches + 1
                    where journey_id = :journey and generation = :generation and walk_after = :after
                      and exists (select 1 from live)
                    returning 1)
                """;
        return evaluate(journey, batch, moved, segment, now, Map.of("generation", generation, "after", after, "size", size,
                "rescan", rescan.toMillis() + " milliseconds"));
    }

    /**
     * One batch of the changes since {@code from} (database time), in one statement: up to
     * {@code size} known users above {@code afterUser} (in id order) that were created or updated at or
     * after {@code from}, or got a device then, are evaluated (see {@link #evaluate}).
     */
    Batch changesBatch(SegmentJourney journey, Instant from, UUID afterUser, int size, FilterCompiler.Compiled segment,
                       Instant now) {
        String batch = """
                select c.id, c.id as key from (
                    select u.id from users u
                    where u.app_id = :app and u.external_user_id is not null and u.updated_at >= :from
                    union
                    select d.user_id from devices d
                    where d.app_id = :app and d.created_at >= :from and d.user_id is not null
                      and exists (select 1 from users u where u.id = d.user_id and u.external_user_id is not null)
                ) c
                where c.id > :afterUser and exists (select 1 from live)
                order by c.id limit :size""";
        return evaluate(journey, batch, "", segment, now, Map.of("from", OffsetDateTime.ofInstant(from, ZoneOffset.UTC),
                "afterUser", afterUser, "size", size));
    }

    /**
     * The users {@code batchSql} selects (columns {@code id}, {@code key}) are evaluated against the
     * compiled segment filter, in one statement: those with an enabled, valid device it selects are in
     * the segment; members of the batch no longer in it are removed; users in it who were not members
     * become members, and each whose entries are below the reentry limit (one upsert of
     * {@code journey_entries}) gets an execution at the version's start node, due {@code now}. Nothing
     * changes if the journey is no longer active at that version (paused, archived or patched since it
     * was listed): the journey is locked {@code FOR KEY SHARE} (V28), so a change under way is waited
     * for, then seen. {@code extra} adds CTEs (they may read {@code batch} and {@code live}).
     */
    private Batch evaluate(SegmentJourney journey, String batchSql, String extra, FilterCompiler.Compiled segment,
                           Instant now, Map<String, ?> params) {
        return jdbc.sql("""
                        with live as materialized (
                            select 1 from journeys
                            where id = :journey and app_id = :app and status = 'active' and current_version = :version
                            for key share
                        ), batch as materialized (
                            %s
                        ), segment as materialized (
                            select distinct d.user_id from devices d %s
                            where d.app_id = :app and d.user_id in (select id from batch)
                              and d.enabled and d.invalidated_at is null and (%s)
                        ), left_segment as (
                            delete from journey_segment_members m
                            where m.journey_id = :journey and m.user_id in (select id from batch)
                              and not exists (select 1 from segment s where s.user_id = m.user_id)
                        ), entered as (
                            insert into journey_segment_members (journey_id, user_id, app_id, entered_at)
                            select :journey, user_id, :app, :now from segment order by user_id
                            on conflict (journey_id, user_id) do nothing
                            returning user_id
                        ), granted as (
                            insert into journey_entries as e (journey_id, user_id, entries, last_granted)
                            select :journey, user_id, 1, 1 from entered order by user_id
                            on conflict (journey_id, user_id) do update set entries = e.entries + 1, last_granted = 1
                                where e.entries < :limit
                            returning e.user_id
                        ), started as (
                            insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                                            due_at, entered_at, updated_at)
                            select storage_uuid7(:now, null), :app, :journey, :version, user_id, 'active', :start, 0, :now, :now, :now
                            from granted
                            returning 1
                        )%s
                        select (select count(*) from started) as started, (select count(*) from batch) as users,
                               (select key from batch order by key desc limit 1) as last,
                               exists (select 1 from live) as live""".formatted(batchSql, segment.joins(), segment.predicate(), extra))
                .param("journey", journey.id()).param("app", journey.appId()).param("version", journey.version())
                .param("limit", journey.reentryLimit()).param("start", journey.startNode())
                .param("now", OffsetDateTime.ofInstant(now, ZoneOffset.UTC))
                .params(params)
                .params(segment.params())
                .query((rs, n) -> new Batch(rs.getInt("started"), rs.getInt("users"), rs.getString("last"), rs.getBoolean("live")))
                .single();
    }
}
