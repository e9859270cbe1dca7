-- register_device (V9) with one race fixed. Two registrations claiming the same staged migration
-- record used to split: the one that found the record locked (SKIP LOCKED) inserted a device with a
-- random id, and when its insert reached the token's unique index first, it won; the claim was then
-- lost and the device never carried the staged source id. Now the second waits for the record's
-- lock: once the first commits, the record is claimed, the second inserts nothing new (the token
-- exists) and refreshes the claimed device. Waiting cannot deadlock: a claimer takes the record's
-- lock before it touches any device or user row. Otherwise the function is V9's, unchanged.
create or replace function register_device(
    p_app uuid, p_platform text, p_token text, p_token_hash bytea, p_external_user_id text, p_tags jsonb,
    p_app_version text, p_device_model text, p_os_version text, p_locale text, p_timezone text,
    p_claim_staged bigint, p_claim_id uuid)
returns table (outcome text, staged_id bigint, id uuid, platform text, enabled boolean,
               invalidated_at timestamptz, external_user_id text, app_version text, device_model text,
               os_version text, locale text, timezone text, tags text, last_seen_at timestamptz,
               created_at timestamptz, updated_at timestamptz, migrated_provider text, migrated_source_id text)
language plpgsql as $$
#variable_conflict use_column
declare
    v_tags      jsonb := coalesce(p_tags, '{}'::jsonb);
    v_device    uuid;
    v_previous  uuid;
    v_anonymous boolean;
    v_owner     uuid;
    v_staged    bigint;
    v_provider  text;
    v_source    text;
    v_outcome   text;
begin
    for attempt in 1..3 loop
        select d.id, d.user_id, (u.id is not null and u.external_user_id is null)
        into v_device, v_previous, v_anonymous
        from devices d left join users u on u.id = d.user_id
        where d.app_id = p_app and d.platform = p_platform and d.token_hash = p_token_hash
        for update of d;

        if found then
            if p_external_user_id is not null then
                v_owner := upsert_named_user(p_app, p_external_user_id, v_tags);
                if v_previous is not null and v_previous <> v_owner and v_anonymous then
                    -- the anonymous user's tags come along, under the named user's own
                    update users n set tags = a.tags || n.tags, updated_at = now()
                    from users a
                    where n.app_id = p_app and n.id = v_owner and a.app_id = p_app and a.id = v_previous;
                end if;
            elsif v_previous is not null then
                -- re-registrations usually repeat the tags they sent before: then nothing is written
                update users set tags = tags || v_tags, updated_at = now()
                where app_id = p_app and id = v_previous and not tags @> v_tags;
                v_owner := v_previous;
            else
                v_owner := gen_random_uuid();
                insert into users (id, app_id, tags) values (v_owner, p_app, v_tags);
            end if;
            update devices set token = p_token, user_id = v_owner,
                   app_version = coalesce(p_app_version, app_version),
                   device_model = coalesce(p_device_model, device_model),
                   os_version = coalesce(p_os_version, os_version), locale = coalesce(p_locale, locale),
                   timezone = coalesce(p_timezone, timezone), enabled = true, invalidated_at = null,
                   invalidation_reason = null, last_seen_at = now(), updated_at = now()
            where id = v_device;
            if v_previous is not null and v_previous <> v_owner then
                delete from users u where u.app_id = p_app and u.id = v_previous and u.external_user_id is null
                and not exists (select 1 from devices d where d.user_id = u.id);
            end if;
            v_outcome := 'refreshed';
            exit;
        end if;

        v_staged := null;
        if p_claim_staged is null then
            select s.id into v_staged from migration_staged_devices s
            where s.app_id = p_app and s.platform = p_platform and s.token_hash = p_token_hash and s.claimed_at is null;
            if found then
                return query select 'staged'::text, v_staged, null::uuid, null::text, null::boolean,
                    null::timestamptz, null::text, null::text, null::text, null::text, null::text, null::text,
                    null::text, null::timestamptz, null::timestamptz, null::timestamptz, null::text, null::text;
                return;
            end if;
            v_device := gen_random_uuid();
        else
            -- another registration claiming the same record holds it: wait for it; once it has
            -- committed the record is claimed, this one finds no record, and its insert meets the
            -- claimed device's token and goes round to refresh it
            select s.id, s.source_provider, s.source_device_id into v_staged, v_provider, v_source
            from migration_staged_devices s
            where s.id = p_claim_staged and s.app_id = p_app and s.claimed_at is null
            for update;
            v_device := p_claim_id;
            if v_staged is null or exists (select 1 from devices d where d.id = v_device) then
                v_device := gen_random_uuid();
            end if;
        end if;

        if p_external_user_id is not null then
            v_owner := upsert_named_user(p_app, p_external_user_id, v_tags);
        else
            v_owner := gen_random_uuid();
            insert into users (id, app_id, tags) values (v_owner, p_app, v_tags);
        end if;
        insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, device_model,
                             os_version, locale, timezone, migrated_provider, migrated_source_id)
        values (v_device, p_app, p_platform, p_token, p_token_hash, v_owner, p_app_version, p_device_model,
                p_os_version, p_locale, p_timezone, v_provider, v_source)
        on conflict do nothing;
        if found then
            if v_staged is not null then
                update migration_staged_devices set claimed_at = now(), claimed_device_id = v_device
                where id = v_staged;
            end if;
            v_outcome := 'created';
            exit;
        end if;
        -- a concurrent registration inserted this token first: drop the anonymous user made for
        -- this attempt and go round again to refresh that device
        if p_external_user_id is null then
            delete from users where id = v_owner;
        end if;
        v_provider := null;
        v_source := null;
    end loop;

    if v_outcome is null then
        raise exception 'registration kept racing with concurrent registrations of the same token'
            using errcode = 'PS002';
    end if;

    return query
        select v_outcome, v_staged, d.id, d.platform, d.enabled, d.invalidated_at, u.external_user_id,
               d.app_version, d.device_model, d.os_version, d.locale, d.timezone,
               coalesce(u.tags, '{}'::jsonb)::text, d.last_seen_at, d.created_at, d.updated_at,
               d.migrated_provider, d.migrated_source_id
        from devices d left join users u on u.id = d.user_id
        where d.id = v_device;
end $$;
