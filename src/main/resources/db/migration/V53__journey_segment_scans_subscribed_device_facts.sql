-- Segment-triggered journeys enter users incrementally (issue 29 item 5). Until now each pass evaluated
-- the whole segment in one statement per journey every minute, and a first activation inserted every
-- member as an execution in that one statement. Now, per journey (see JourneyEntries):
--
-- * a walk visits the app's known users in bounded batches, in external_user_id order (the index
--   users_app_external_idx), one statement and one transaction per batch; its cursor is stored here
--   with the batch, so a walk cut short (a crash, a pass's batch budget) resumes where it stopped. A
--   walk starts at activation, at a new journey version and at a new segment version (the generation
--   changes), then again every push.journeys.segment-rescan-interval after the previous one ended;
-- * between walks, each pass evaluates only the users changed since the last pass: known users
--   created or updated (tags, locale, time zone: users.updated_at, the partial index below) and users
--   with a device created since then (devices_app_created_idx).
create table journey_segment_scans (
    journey_id   uuid        primary key references journeys (id),
    app_id       uuid        not null,
    -- what the walk is of: the journey version and the segment version it applies
    generation   text        not null,
    -- the walk under way: users with an external_user_id above this one are still to visit ('' at the
    -- start); null when no walk is under way
    walk_after   text,
    -- when the next walk starts (database time), while none is under way
    next_walk_at timestamptz,
    -- batch statements of the walk under way, or of the last one
    walk_batches integer     not null default 0,
    -- walks completed in this generation
    walks        integer     not null default 0,
    -- the next pass evaluates users changed at or after this time (database time)
    changes_from timestamptz not null
);

-- A deleted user's memberships go with the user (the whole-segment statement used to drop them at
-- the next evaluation; no batch visits a user that no longer exists).
delete from journey_segment_members m where not exists (select 1 from users u where u.id = m.user_id);
create index journey_segment_members_user_idx on journey_segment_members (user_id);
alter table journey_segment_members add constraint journey_segment_members_user_fk
    foreign key (user_id) references users (id) on delete cascade;

-- Known users changed since a time, per app: what the passes between walks read. Partial: anonymous
-- users (who never enter a journey) are never in it, so their inserts and updates (most registrations)
-- pay nothing for it.
create index users_app_updated_idx on users (app_id, updated_at) where external_user_id is not null;

-- device.registered facts only for apps with an enabled webhook subscribed to them (issue 29 item 6,
-- registrations slower than at e029d80). V16's trigger wrote one lifecycle_events row (and its three
-- index entries) for every new device, which the webhook relay then read, whether or not any webhook
-- could receive it; nothing but webhooks reads these facts. Now, as for engagement facts (V16) and
-- journey facts (V33), an app without such a webhook pays one probe of webhooks_enabled_idx and no
-- row. A webhook receives only facts recorded after its creation anyway; as with the other facts,
-- one disabled when a device is registered never gets that device's fact.
create or replace function devices_record_registered() returns trigger language plpgsql as $$
begin
    if exists (select 1 from webhooks w
               where w.app_id = new.app_id and w.enabled
                 and ('device.registered' = any(w.events) or '*' = any(w.events))) then
        insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
        values (new.app_id, 'device.registered', new.id,
                jsonb_build_object('device_id', new.id, 'platform', new.platform), new.created_at);
    end if;
    return null;
end;
$$;

-- The active-device count (V2) queued a deferred trigger event for every update naming enabled or
-- invalidated_at, which every re-registration does (it re-enables and clears the invalidation), and
-- at commit called track_active_devices only to find that nothing changed (delta 0). Updates are
-- now queued only when the device's activity changes; inserts and deletes as before. The count and
-- the limit's check at commit are unchanged.
drop trigger devices_active_count on devices;
create constraint trigger devices_active_count
    after insert or delete on devices
    deferrable initially deferred
    for each row execute function track_active_devices();
create constraint trigger devices_active_count_changed
    after update of enabled, invalidated_at on devices
    deferrable initially deferred
    for each row
    when ((old.enabled and old.invalidated_at is null) is distinct from (new.enabled and new.invalidated_at is null))
    execute function track_active_devices();
