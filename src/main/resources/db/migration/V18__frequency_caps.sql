-- Frequency caps (app setting frequency_cap): a recipient that would exceed its user's cap ends in its
-- own terminal state. The constraint is replaced by a wider one; NOT VALID + VALIDATE checks the
-- existing rows without holding the table's exclusive lock for the scan.
alter table notification_recipients drop constraint notification_recipients_status_check;
alter table notification_recipients add constraint notification_recipients_status_check
    check (status in ('pending', 'sending', 'accepted', 'failed', 'invalid_token', 'cancelled', 'expired',
                      'skipped_frequency_cap')) not valid;
alter table notification_recipients validate constraint notification_recipients_status_check;

-- The sends a frequency cap counts: one row per recipient of a capped notification that was handed to
-- a provider (written when delivery claims it) and not given back (a send that ends other than
-- accepted is deleted when its outcome is recorded). subject is the recipient's user, or the device
-- for a device without a user. A notification counts once per subject: count(distinct notification_id).
-- See notifications/FrequencyCapping.java. No foreign keys, as for notification_recipients.
create table frequency_cap_sends (
    notification_id uuid        not null,
    device_id       uuid        not null,
    app_id          uuid        not null,
    subject         uuid        not null,
    sent_at         timestamptz not null,
    -- sent_at + the app's window when it was written: the recurring prune deletes rows past it
    expires_at      timestamptz not null,
    primary key (notification_id, device_id)
);
-- counting a subject's sends within the window (index-only with the included notification id)
create index frequency_cap_sends_subject_idx on frequency_cap_sends (app_id, subject, sent_at) include (notification_id);
create index frequency_cap_sends_expires_idx on frequency_cap_sends (expires_at);
