-- A provider's refusal of an app's credentials (a revoked APNs key: InvalidProviderToken; FCM 401/403),
-- shown on the settings read until the credentials change. Kept for the version it was refused for:
-- a replacement (a new version) clears it in the same statement.
alter table app_credentials
    add column rejected_reason text,
    add column rejected_at     timestamptz;
