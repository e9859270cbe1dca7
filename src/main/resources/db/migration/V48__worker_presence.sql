-- Which worker instances are alive (issue 29, item 1): each instance with the worker role writes its
-- row at start and every heartbeat (PUSH_WORKER_HEARTBEAT_INTERVAL, 5 s), and deletes it when it
-- stops. A row seen within three heartbeats is a live worker. The fan-out counts them to hand its own
-- lane only its share of a send (1/N of each page with N live workers) and leave the rest claimable
-- by every worker. A worker killed without stopping drops out after three heartbeats; its row is
-- deleted by the others' heartbeats an hour later. Times are the database's (one clock for all).
create table worker_instances (
    name       text        primary key,
    started_at timestamptz not null,
    seen_at    timestamptz not null
);
