-- New devices and users get time-ordered ids (RFC 9562 version 7: the Unix time in milliseconds in the
-- first 48 bits, then 74 random bits), where they had random ones (version 4).
--
-- Why (issue 29, bench/README.md "scale.sh 10000000"): with random ids, a device row's place in the
-- primary key has nothing to do with when it was registered.
-- * Every new registration inserts into a random leaf of devices_pkey (and users_pkey for an anonymous
--   user): at 10,000,000 devices those indexes no longer fit in shared buffers, and each registration
--   reads and dirties leaves nobody else needs. Time-ordered ids go to the right edge, as the rows do.
-- * A fan-out walks its audience newest device first (created_at desc, id); its recipient rows are
--   written in that order. A recipient list is read in device_id order: with random ids, 50 rows of one
--   page sat on 50 heap pages of a 10,000,000-recipient send, each read from disk while the send wrote.
--   With time-ordered ids, device_id order is (in reverse) the order the rows were written.
-- Existing ids are kept: ids are never reissued. 74 random bits still make an id unguessable; an id now
-- tells when its device registered, which its created_at tells anyone who may read it anyway.

create function storage_uuid7(p_at timestamptz) returns uuid
    language sql volatile parallel safe
    return (select encode(set_byte(overlay(r.b placing substring(int8send(floor(extract(epoch from p_at) * 1000)::bigint) from 3)
                                           from 1 for 6),
                                   6, (get_byte(r.b, 6) & 15) | 112), 'hex')::uuid
            from (select uuid_send(gen_random_uuid()) as b) r);

-- register_device (V12_1) and upsert_named_user (V9) as they were, their ids made by the function above:
-- their bodies are rewritten here rather than restated, so V12_1 and V9 stay the only text of their rules.
do $$
declare
    f    regprocedure;
    body text;
    n    int;
begin
    foreach f in array array['register_device(uuid, text, text, bytea, text, jsonb, text, text, text, text, text, bigint, uuid)',
                             'upsert_named_user(uuid, text, jsonb)']::regprocedure[] loop
        body := pg_get_functiondef(f);
        n := (length(body) - length(replace(body, 'gen_random_uuid()', ''))) / length('gen_random_uuid()');
        if n = 0 then
            raise exception 'V56: % makes no random ids any more; this migration no longer fits it', f;
        end if;
        execute replace(body, 'gen_random_uuid()', 'storage_uuid7(clock_timestamp())');
    end loop;
end
$$;
