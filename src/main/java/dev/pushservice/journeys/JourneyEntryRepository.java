package dev.pushservice.journeys;

import dev.pushservice.segments.FilterCompiler;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL of segment entries: which journeys start users by segment, and one statement per journey that
 * moves its segment membership to what the segment selects now and starts an execution for each new
 * member the reentry limit admits. Custom-event entries need no Java: V26's trigger on {@code events}
 * starts them in the event batch's own transaction.
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

    /**
     * One evaluation of a segment-triggered journey, in one statement: known users (with an
     * {@code external_user_id}) with an enabled device the compiled segment filter selects now are the segment; members no longer in it are removed; users in
     * it who were not members become members, and each of them whose entries are below the reentry limit
     * (one upsert of {@code journey_entries}) gets an execution at the version's start node, due
     * {@code now}. Nothing changes if the journey is no longer active at that version (paused, archived
     * or patched since it was listed). Must run in a transaction (it sets {@code work_mem} locally).
     *
     * @return executions started
     */
    int evaluateSegment(SegmentJourney journey, FilterCompiler.Compiled segment, Instant now) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        return jdbc.sql("""
                        with live as (
                            select 1 from journeys
                            where id = :journey and app_id = :app and status = 'active' and current_version = :version
                            for key share -- an archive or PATCH under way is waited for, then seen (V28)
                        ), segment as materialized (
                            select distinct d.user_id from devices d %s
                            where d.app_id = :app and d.enabled and d.invalidated_at is null and (%s)
                              and exists (select 1 from live)
                              and exists (select 1 from users u where u.id = d.user_id and u.external_user_id is not null)
                        ), left_segment as (
                            delete from journey_segment_members m
                            where m.journey_id = :journey and exists (select 1 from live)
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
                        )
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                                        due_at, entered_at, updated_at)
                        select gen_random_uuid(), :app, :journey, :version, user_id, 'active', :start, 0, :now, :now, :now
                        from granted""".formatted(segment.joins(), segment.predicate()))
                .param("journey", journey.id()).param("app", journey.appId()).param("version", journey.version())
                .param("limit", journey.reentryLimit()).param("start", journey.startNode())
                .param("now", OffsetDateTime.ofInstant(now, ZoneOffset.UTC))
                .params(segment.params())
                .update();
    }
}
