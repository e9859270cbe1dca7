-- VAPID key pairs of a previous Web Push provider, imported with its subscriptions (issue 28 part 4)
-- so those browsers keep receiving without subscribing again. A web device's subscription token
-- names the public key it was made with ("application_server_key"); a send to a device whose key is
-- one of these is signed with it instead of the app's own pair. "secret" is the private key sealed
-- with PUSH_SECRET_KEY (AES-256-GCM, bound to app and public key), like app_credentials.
create table webpush_imported_keys (
    app_id      uuid        not null references apps (id),
    public_key  text        not null check (length(public_key) between 80 and 100),
    secret      bytea       not null,
    created_at  timestamptz not null default now(),
    primary key (app_id, public_key)
);
