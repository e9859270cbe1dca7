-- The worker claims due executions journey by journey (active journeys only), so executions of a
-- paused or draft journey whose timers have passed cost the claim nothing: with the global due index
-- alone the claim walked over every one of them on each poll. The global index stays for other readers.
create index journey_executions_journey_due_idx on journey_executions (journey_id, due_at)
    where status in ('active', 'waiting');
