-- Recipients a fan-out page hands straight to its instance's lane are no longer inserted before
-- their send: the page writes one row here that lists them, leased to the instance, and each
-- recipient's row is inserted once, with its outcome. A recipient was written twice before (inserted
-- sending, then updated with its outcome: a new row version and index entries each time); now once.
-- See delivery/Handover.java and docs/api-decisions.md, "Delivery", "Hand-over".
--
-- A handover lives until every recipient it lists is recorded (recorded = handed: the recording
-- deletes it), or until its lease ends unrecorded (the instance died or stalled): then the claim of
-- its lane inserts the recipients not yet recorded as pending, their first attempt counted, and
-- deletes it (RecipientDelivery#claim); for a cancelled notification, the stranded sweep inserts them
-- cancelled. Reads of a notification's recipients and counts show listed, unrecorded recipients as
-- sending.
create table notification_handovers (
    id                bigserial   primary key,
    notification_id   uuid        not null,
    app_id            uuid        not null,
    -- the lease: past it, the recipients not yet recorded are given to any instance's claim
    lease_until       timestamptz not null,
    -- the page's time: the recipients' due_at and first updated_at
    created_at        timestamptz not null,
    expires_at        timestamptz,
    handed            integer     not null,
    recorded          integer     not null default 0,
    -- the recipients, position by position
    device_ids        uuid[]      not null,
    platforms         text[]      not null,
    user_ids          uuid[]      not null,
    external_user_ids text[]      not null,
    -- render values by device id (text), only when the content reads them
    render_values     jsonb
);
create index notification_handovers_notification_idx on notification_handovers (notification_id);
create index notification_handovers_lease_idx on notification_handovers (lease_until);

-- Every recipient as the API and exports show it: the recipient rows, and the recipients handovers
-- list that have no row yet, as sending (their first attempt counted, their page's time as their
-- last update). One statement over it sees a recording's inserted rows and its handover's count
-- together, so no recipient is missed or seen twice. Filters on notification_id and app_id reach
-- both branches' indexes.
create view notification_recipient_states as
select r.notification_id, r.device_id, r.app_id, r.platform, r.external_user_id, r.status, r.attempts,
       r.last_error, r.provider_message_id, r.updated_at, r.due_at, r.expires_at
from notification_recipients r
union all
select o.notification_id, l.device_id, o.app_id, l.platform, l.external_user_id, 'sending', 1,
       null, null, o.created_at, o.created_at, o.expires_at
from notification_handovers o
cross join lateral unnest(o.device_ids, o.platforms, o.external_user_ids) as l(device_id, platform, external_user_id)
where not exists (select 1 from notification_recipients x
                  where x.notification_id = o.notification_id and x.device_id = l.device_id);

-- Recipients materialized so far, added by each fan-out page in its own transaction (with the
-- cursor): the recipient count once the fan-out is done, without counting every recipient row and
-- handover entry again (~1 µs of PostgreSQL per recipient). Null for a notification whose fan-out
-- began before this column: its count is then read from the rows, as before.
alter table notifications add column materialized_count integer;
