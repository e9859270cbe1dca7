-- Templates: reusable content with placeholders. Every change (create, PATCH, archive) appends an
-- immutable row to template_versions; templates holds the current metadata and version number,
-- so the list reads one narrow table and the detail joins exactly one version.
create table templates (
    id         uuid primary key,
    app_id     uuid        not null references apps (id),
    name       text        not null,
    status     text        not null check (status in ('draft', 'published', 'archived')),
    version    integer     not null check (version >= 1),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index templates_app_created_idx on templates (app_id, created_at desc, id desc);

create table template_versions (
    app_id      uuid        not null references apps (id),
    template_id uuid        not null references templates (id),
    version     integer     not null check (version >= 1),
    name        text        not null,
    status      text        not null check (status in ('draft', 'published', 'archived')),
    -- {"title","body","click_url"?,"data"?,"interruption_level"?} as the API shows it
    content     jsonb       not null,
    created_at  timestamptz not null default now(),
    primary key (template_id, version)
);
