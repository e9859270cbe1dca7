-- journey.execution.started: one lifecycle fact per execution created, written in the transaction that
-- creates it (see docs/api-decisions.md "Journey lifecycle events"). Executions are created by SQL
-- alone, never by Java: V26/V28's trigger on events (in the event batch's transaction) and the segment
-- evaluation's one statement (JourneyEntryRepository.evaluateSegment). A statement-level trigger covers
-- both, and any later writer, with one more set-based insert per statement that started executions.
--
-- As for engagement facts (V16), only for apps with an enabled webhook subscribed to the kind (or '*'):
-- a journey entering a large segment writes no facts nobody would receive. The probe of webhooks runs
-- once per app of the statement, not once per execution.
create function journey_executions_record_started() returns trigger language plpgsql as $$
begin
    insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
    select i.app_id, 'journey.execution.started', i.id,
           jsonb_build_object('journey_id', i.journey_id, 'version', i.version, 'execution_id', i.id,
                              'user_id', i.user_id, 'external_user_id', u.external_user_id, 'node_id', i.node_id),
           i.entered_at
    from inserted i
    join (select a.app_id from (select distinct app_id from inserted) a
          where exists (select 1 from webhooks w
                        where w.app_id = a.app_id and w.enabled
                          and ('journey.execution.started' = any(w.events) or '*' = any(w.events)))) s
      on s.app_id = i.app_id
    left join users u on u.id = i.user_id and u.app_id = i.app_id
    order by i.entered_at, i.id;
    return null;
end;
$$;
create trigger journey_executions_started after insert on journey_executions
    referencing new table as inserted
    for each statement execute function journey_executions_record_started();
