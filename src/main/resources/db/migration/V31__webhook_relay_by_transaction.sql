-- The webhook relay by transaction visibility instead of an id cursor (issue 26). Ids come from a
-- sequence and a transaction commits them late (events batches, device invalidations, journey
-- batches): a cursor on id that re-read a fixed window behind it skipped, for ever, every fact
-- whose transaction committed after the cursor had moved further than the window.
--
-- Each fact now carries the id of the transaction that wrote it (a default, so every writer, the
-- V16 triggers included, fills it without a change; one 8-byte column and one index on a key that
-- grows with time). The relay keeps, instead of an id, a point in transaction order: every
-- transaction with an id below next_xid has been relayed, except those in pending, which were
-- still running when the relay last looked. A transaction's facts become visible all at once when
-- it commits, so a pass relays exactly the facts of transactions that have finished since the last
-- pass, whatever their order, size or duration (see WebhookRepository.relay).
alter table lifecycle_events add column xid xid8;
alter table lifecycle_events alter column xid set default pg_current_xact_id();
create index lifecycle_events_xid_idx on lifecycle_events (xid);

alter table webhook_relay add column next_xid xid8, add column pending xid8[] not null default '{}';

-- Facts the old cursor may not have relayed yet (its re-read window and everything after it) get
-- this migration's transaction id, so the first pass after it commits relays them; deliveries
-- already made are not made twice (unique (webhook_id, lifecycle_event_id)). Facts at or before the
-- window keep a null xid and are never read by the relay again.
update lifecycle_events set xid = pg_current_xact_id()
where id > (select last_id - 1000 from webhook_relay where id = 1);

-- From here: this transaction and everything after it is still to relay, and so is every
-- transaction running now (it may write a fact after this migration commits).
update webhook_relay set next_xid = pg_current_xact_id(),
                         pending = array(select x from pg_snapshot_xip(pg_current_snapshot()) as x
                                         where x < pg_current_xact_id());
alter table webhook_relay alter column next_xid set not null, drop column last_id;
