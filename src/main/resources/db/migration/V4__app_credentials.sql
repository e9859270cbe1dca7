-- Provider credentials per app (APNs, FCM, Web Push VAPID). "summary" holds only what may be
-- shown (key id, team id, bundle id, project id, VAPID public key); "secret" is sealed with
-- PUSH_SECRET_KEY (AES-256-GCM, bound to app and provider). "version" grows on every change so
-- providers can keep one client per credential version.
create table app_credentials (
    app_id     uuid        not null references apps (id),
    provider   text        not null check (provider in ('apns', 'fcm', 'webpush')),
    summary    jsonb       not null,
    secret     bytea       not null,
    version    bigint      not null,
    updated_at timestamptz not null default now(),
    primary key (app_id, provider)
);
create sequence app_credentials_version_seq;
