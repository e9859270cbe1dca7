-- Custom-event entries lock the journeys they start (FOR KEY SHARE) before reading their state.
--
-- V26's trigger read a journey's status without a lock. A DELETE (archive) or a PATCH that had
-- already locked the journey (FOR UPDATE) and was about to commit was not seen: the event batch read
-- the journey as still active, its insert then waited for the archive's commit (the foreign key's
-- lock), and committed executions `active` in an archived journey after the archive had cancelled
-- the ones it could see. Nothing ever runs or cancels those (the worker claims only executions of
-- active journeys). Now the batch's read waits for such a change to commit and then reads the new
-- state (an archived or paused journey starts no one); a change that comes after the lock waits for
-- the batch's commit and then cancels its executions too. KEY SHARE locks do not block each other:
-- concurrent event batches of one journey still run side by side.
create or replace function journeys_start_from_events() returns trigger language plpgsql as $$
begin
    if not exists (select 1 from journeys where status = 'active' and trigger_type = 'custom_event') then
        return null;
    end if;
    with live as materialized (
        select j.id, j.app_id, j.current_version, j.reentry_limit, j.trigger_event_name
        from journeys j
        where j.status = 'active' and j.trigger_type = 'custom_event'
          and (j.app_id, j.trigger_event_name) in (
              select i.app_id, i.event_name from inserted i where i.event_type = 'custom')
        -- one lock order for every writer
        order by j.id
        for key share of j
    ), wanted as (
        select j.id as journey_id, j.app_id, j.current_version, j.reentry_limit, i.user_id,
               count(*)::integer as asked, max(i.received_at) as entered_at
        from inserted i
        join live j on j.app_id = i.app_id and j.trigger_event_name = i.event_name
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
