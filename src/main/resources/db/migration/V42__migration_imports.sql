-- Migration uploads from the dashboard (issue 27 part 3, docs/dashboard.md "Migration upload").
--
-- Import history: one row per upload that staged records (a refused upload changes nothing, so it
-- leaves no row either). Who (the member, by id and the address they had then), when, the file's
-- name, its format, the provider the source ids belong to, and the counts: rows read, staged, and
-- skipped per reason ({"unsubscribed": 12, ...}).
create table migration_imports (
    id             uuid        primary key,
    app_id         uuid        not null references apps (id),
    member_id      uuid,
    member_email   text        not null,
    file_name      text        not null,
    format         text        not null check (format in ('template', 'legacy')),
    source_provider text       not null,
    rows_read      bigint      not null,
    rows_staged    bigint      not null,
    skipped        jsonb       not null default '{}',
    -- the first 100 skipped rows: [{"line": 7, "reason": "unsubscribed", "detail": "..."}] (never a token)
    skipped_lines  jsonb       not null default '[]',
    imported_at    timestamptz not null
);
create index migration_imports_app_idx on migration_imports (app_id, imported_at desc);

-- Which upload staged a record (null: staged before uploads existed). No foreign key: an upload
-- inserts up to a million records at once, and a per-row key check would cost as much as the insert;
-- the upload writes its history row in the same transaction.
alter table migration_staged_devices add column import_id uuid;

-- Staged records lose the foreign key to apps: an upload inserts up to a million of them in one
-- statement, and PostgreSQL checks a foreign key row by row (a query per row): measured on 970,000
-- rows, the insert took 47.9 s with it and 27.4 s without (bench/README.md). The only writer is the
-- upload, whose app the dashboard has just read and checked, and apps are never deleted.
alter table migration_staged_devices drop constraint if exists migration_staged_devices_app_id_fkey;

-- An upload refuses a token already staged by another app (an ownership conflict); this finds it
-- without scanning every app's records.
create index migration_staged_token_any_app_idx on migration_staged_devices (platform, token_hash);
