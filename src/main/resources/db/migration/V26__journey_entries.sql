-- Journey entries: executions started by custom events (in the event batch's own transaction) and by
-- segment entry (a periodic evaluation). See src/main/java/dev/pushservice/journeys/package-info.java
-- and docs/api-decisions.md ("Journey entries").

-- The start node of each version, so starting an execution reads a column, not the definition.
-- Generated: whoever writes a version gets it filled without knowing it exists.
alter table journey_versions add column start_node text generated always as (definition ->> 'start') stored;

-- How many entries the last upsert of this row granted (0..reentry_limit). The upsert that enforces
-- reentry_limit sets it from the row's locked, current value, so the statement that starts executions
-- knows how many to start for a user even when several of the user's events came in one batch, without
-- reading the old value in a separate (racy) step.
alter table journey_entries add column last_granted integer not null default 0;

-- Segment-triggered journeys: the users that were in the segment at the last evaluation. A user who
-- is not a member and matches the segment enters (one entry); a member who no longer matches is
-- removed, so leaving and coming back is a new entry (still bounded by reentry_limit).
create table journey_segment_members (
    journey_id uuid        not null references journeys (id),
    user_id    uuid        not null,
    app_id     uuid        not null,
    entered_at timestamptz not null,
    primary key (journey_id, user_id)
);

-- Custom-event entries (only for a device that belongs to a known user: one with an external_user_id):
-- a statement-level trigger on events, beside V16's events_recorded, so
-- EventWriter's one insert per batch starts every execution the batch triggers in one more set-based
-- statement of the same transaction: an event answered 202 has its executions committed with it.
-- When no journey anywhere is active with a custom-event trigger it costs one probe of the (empty)
-- partial index journeys_event_trigger_idx.
--
-- Per journey and user, the batch's matching events ask for k entries; one upsert of journey_entries
-- grants least(k, reentry_limit - entries) under the row's lock (concurrent batches for the same user
-- wait for each other there, so the limit holds across them), and that many executions are inserted.
-- "now" is the events' received_at: the application clock's time when the request was read.
create function journeys_start_from_events() returns trigger language plpgsql as $$
begin
    if not exists (select 1 from journeys where status = 'active' and trigger_type = 'custom_event') then
        return null;
    end if;
    with wanted as (
        select j.id as journey_id, j.app_id, j.current_version, j.reentry_limit, i.user_id,
               count(*)::integer as asked, max(i.received_at) as entered_at
        from inserted i
        join journeys j on j.app_id = i.app_id and j.trigger_event_name = i.event_name
                       and j.status = 'active' and j.trigger_type = 'custom_event'
        -- a known user: named by the app (an anonymous user is only its one device's owner)
        join users u on u.id = i.user_id and u.external_user_id is not null
        where i.event_type = 'custom'
        group by j.id, j.app_id, j.current_version, j.reentry_limit, i.user_id
    ), granted as (
        insert into journey_entries as e (journey_id, user_id, entries, last_granted)
        select journey_id, user_id, least(asked, reentry_limit), least(asked, reentry_limit)
        from wanted
        -- one lock order for every writer: concurrent batches never deadlock on these rows
        order by journey_id, user_id
        on conflict (journey_id, user_id) do update
            set entries = least(e.entries + excluded.entries, (select reentry_limit from journeys where id = e.journey_id)),
                last_granted = least(e.entries + excluded.entries, (select reentry_limit from journeys where id = e.journey_id))
                               - e.entries
            where e.entries < (select reentry_limit from journeys where id = e.journey_id)
        returning e.journey_id, e.user_id, e.last_granted
    )
    insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                    due_at, entered_at, updated_at)
    select gen_random_uuid(), w.app_id, w.journey_id, w.current_version, w.user_id, 'active', v.start_node, 0,
           w.entered_at, w.entered_at, w.entered_at
    from granted g
    join wanted w on w.journey_id = g.journey_id and w.user_id = g.user_id
    join journey_versions v on v.journey_id = w.journey_id and v.version = w.current_version
    cross join lateral generate_series(1, g.last_granted);
    return null;
end;
$$;
create trigger events_start_journeys after insert on events
    referencing new table as inserted
    for each statement execute function journeys_start_from_events();
