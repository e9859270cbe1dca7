-- Users: named (external_user_id) or anonymous (external_user_id null, owned by one device).
-- Tags live on users; a device is selected by "its user's" tags (see docs/api-decisions.md).
create table users (
    id               uuid primary key,
    app_id           uuid        not null references apps (id),
    external_user_id text,
    locale           text,
    timezone         text,
    tags             jsonb       not null default '{}'::jsonb,
    properties       jsonb       not null default '{}'::jsonb,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now()
);
create unique index users_app_external_idx on users (app_id, external_user_id) where external_user_id is not null;
create index users_app_tags_idx on users using gin (tags jsonb_path_ops);

create table devices (
    id                  uuid primary key,
    app_id              uuid        not null references apps (id),
    platform            text        not null check (platform in ('ios', 'android', 'web')),
    -- raw provider token (web: subscription JSON); never returned, never logged
    token               text        not null,
    -- sha256 of the token identity (web: of the endpoint): uniqueness and migration matching
    token_hash          bytea       not null,
    user_id             uuid references users (id) on delete set null,
    app_version         text,
    device_model        text,
    os_version          text,
    locale              text,
    timezone            text,
    enabled             boolean     not null default true,
    invalidated_at      timestamptz,
    invalidation_reason text,
    last_seen_at        timestamptz not null default now(),
    created_at          timestamptz not null default now(),
    updated_at          timestamptz not null default now(),
    migrated_provider   text,
    migrated_source_id  text
);
create unique index devices_token_idx on devices (app_id, platform, token_hash);
create index devices_app_created_idx on devices (app_id, created_at desc, id);
create index devices_user_idx on devices (user_id);
-- the deliverable audience: enabled, not invalidated
create index devices_app_active_idx on devices (app_id, platform) where enabled and invalidated_at is null;

create table aliases (
    app_id     uuid        not null references apps (id),
    label      text        not null,
    value      text        not null,
    user_id    uuid        not null references users (id) on delete cascade,
    created_at timestamptz not null default now(),
    primary key (app_id, label, value)
);
create index aliases_user_idx on aliases (user_id);

-- Records staged from a previous provider; registration claims them (never blocks on them).
create table migration_staged_devices (
    id                 bigserial primary key,
    app_id             uuid        not null references apps (id),
    platform           text        not null check (platform in ('ios', 'android', 'web')),
    token_hash         bytea       not null,
    source_provider    text        not null,
    source_device_id   text        not null,
    external_user_id   text,
    app_version        text,
    device_model       text,
    os_version         text,
    locale             text,
    timezone           text,
    tags               jsonb,
    staged_at          timestamptz not null default now(),
    claimed_at         timestamptz,
    claimed_device_id  uuid
);
create unique index migration_staged_token_idx on migration_staged_devices (app_id, platform, token_hash);

-- Active devices (enabled and not invalidated) per organisation, kept exact by the trigger below.
create table org_device_usage (
    org_id uuid primary key references organisations (id),
    active bigint not null default 0
);

-- Deferred to commit so the organisation's counter row is locked only while committing: concurrent
-- registrations of one organisation serialise for the commit alone, and the limit stays exact.
create function track_active_devices() returns trigger language plpgsql as $$
declare
    was_active boolean := tg_op <> 'INSERT' and old.enabled and old.invalidated_at is null;
    is_active  boolean := tg_op <> 'DELETE' and new.enabled and new.invalidated_at is null;
    delta      integer := (case when is_active then 1 else 0 end) - (case when was_active then 1 else 0 end);
    org        uuid;
    now_active bigint;
    max_active integer;
begin
    if delta = 0 then
        return null;
    end if;
    select a.org_id, o.active_device_limit into org, max_active
    from apps a join organisations o on o.id = a.org_id
    where a.id = coalesce(new.app_id, old.app_id);
    insert into org_device_usage as u (org_id, active) values (org, delta)
    on conflict (org_id) do update set active = u.active + delta
    returning u.active into now_active;
    if delta > 0 and max_active is not null and now_active > max_active then
        raise exception 'active device limit % reached', max_active
            using errcode = 'PS001', hint = max_active::text;
    end if;
    return null;
end $$;

create constraint trigger devices_active_count
    after insert or update of enabled, invalidated_at or delete on devices
    deferrable initially deferred
    for each row execute function track_active_devices();
