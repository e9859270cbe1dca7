-- Segments: reusable audience filters. The segment row holds what lists show (current name,
-- status, current version); every PATCH adds an immutable row to segment_versions, which is what
-- a notification snapshots (segment_id, version).
create table segments (
    id              uuid primary key,
    app_id          uuid        not null references apps (id),
    name            text        not null,
    description     text,
    status          text        not null default 'active' check (status in ('active', 'archived')),
    current_version integer     not null default 1,
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now(),
    archived_at     timestamptz
);
create index segments_app_created_idx on segments (app_id, created_at desc, id);

create table segment_versions (
    segment_id  uuid        not null references segments (id),
    version     integer     not null check (version >= 1),
    name        text        not null,
    description text,
    filter      jsonb       not null,
    created_at  timestamptz not null default now(),
    primary key (segment_id, version)
);

-- app_version comparisons (gt, gte, lt, lte): the leading dot-separated numbers of a version as a
-- numeric array without trailing zero parts ('2.10.1-beta' -> {2,10,1}, '3.0' -> {3}), so 2.10 > 2.9
-- and 3.0 = 3. Anything after the numbers (pre-release, build) is ignored. Null when the text does
-- not start with a digit, so such versions never match a comparison.
create function segment_version_key(v text) returns numeric[]
    language sql immutable strict parallel safe
    return case when v ~ '^[0-9]' then
        string_to_array(regexp_replace(substring(v from '^[0-9]+(?:\.[0-9]+)*'), '(\.0+)+$', ''), '.')::numeric[] end;

-- Numeric tag comparisons: a tag value read as a number, or null when it is not one (so a
-- non-numeric value never matches, and never raises a cast error mid-query).
create function segment_tag_number(v text) returns numeric
    language sql immutable strict parallel safe
    return case when v ~ '^-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?$' then v::numeric end;

-- The version key of each device, kept by PostgreSQL on every write: comparing a stored array costs
-- nothing, while computing the key while filtering costs seconds per million devices (measured).
alter table devices add column app_version_key numeric[] generated always as (segment_version_key(app_version)) stored;
