-- Three functions that registration calls in every transaction are rewritten in PL/pgSQL. They return
-- what they returned before; only the language changes.
--
-- Why (issue 29 item 6, bench/README.md "Registration: the SQL-language functions"): PostgreSQL does not
-- keep the plan of a SQL-language function that it cannot inline. It plans the body again in every
-- statement execution that calls it, and in every transaction when a PL/pgSQL expression calls it.
-- storage_uuid7 (V56) has a sub-select, so it is never inlined. Called once per transaction from a
-- PL/pgSQL function on the machine's PostgreSQL 15, it cost 0.158 ms a call against 0.086 ms for
-- gen_random_uuid() (pgbench, one client), so about 70 µs each. A new device makes two calls (the
-- device's id and its anonymous user's id). With V56, registrations took about 70 µs more PostgreSQL
-- CPU each and ran 12% slower than at e029d80. In PL/pgSQL the expression is planned once per session.
-- upsert_named_user (V9, its id from storage_uuid7 since V56) is an INSERT, which is never inlined. A
-- registration with an external_user_id calls it, and so does PATCH /v1/users. Its statement is restated
-- below unchanged, so this file now holds its text.
-- segment_version_key is strict and its body is a CASE, so it is not inlined either. It computes the
-- generated column devices.app_version_key, which every insert and update of a device evaluates.
-- Calls inside one set-based statement (storage_uuid7(p_at, p_seed) in batch inserts) plan once per
-- statement and stay as they are.

create or replace function storage_uuid7(p_at timestamptz) returns uuid
    language plpgsql volatile parallel safe as $$
declare
    b bytea := uuid_send(gen_random_uuid());
begin
    -- the Unix time in milliseconds in the first 48 bits, version 7 in the next 4, the rest random
    return encode(set_byte(overlay(b placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
                                   from 1 for 6),
                           6, (get_byte(b, 6) & 15) | 112), 'hex')::uuid;
end
$$;

create or replace function upsert_named_user(p_app uuid, p_external_user_id text, p_tags jsonb) returns uuid
    language plpgsql volatile as $$
declare
    v_id uuid;
begin
    insert into users as u (id, app_id, external_user_id, tags)
    values (storage_uuid7(clock_timestamp()), p_app, p_external_user_id, p_tags)
    on conflict (app_id, external_user_id) where external_user_id is not null
    do update set tags = u.tags || excluded.tags,
                  updated_at = case when excluded.tags = '{}'::jsonb then u.updated_at else now() end
    returning id into v_id;
    return v_id;
end
$$;

create or replace function segment_version_key(v text) returns numeric[]
    language plpgsql immutable strict parallel safe as $$
begin
    return case when v ~ '^[0-9]' then
        string_to_array(regexp_replace(substring(v from '^[0-9]+(?:\.[0-9]+)*'), '(\.0+)+$', ''), '.')::numeric[] end;
end
$$;
