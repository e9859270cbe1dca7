-- db-scheduler's table for the scheduler role: recurring tasks (clean-ups, sweeps that find due
-- work and enqueue it for workers). Kept apart from scheduled_tasks because a db-scheduler instance
-- must know every task in the table it polls: worker instances know the work tasks, scheduler
-- instances the recurring ones (see platform/jobs/package-info.java).
create table recurring_tasks (
    task_name            text                     not null,
    task_instance        text                     not null,
    task_data            bytea,
    execution_time       timestamp with time zone not null,
    picked               boolean                  not null,
    picked_by            text,
    last_success         timestamp with time zone,
    last_failure         timestamp with time zone,
    consecutive_failures int,
    last_heartbeat       timestamp with time zone,
    version              bigint                   not null,
    priority             smallint,
    primary key (task_name, task_instance)
);
create index recurring_tasks_execution_time_idx on recurring_tasks (execution_time);
create index recurring_tasks_last_heartbeat_idx on recurring_tasks (last_heartbeat);
