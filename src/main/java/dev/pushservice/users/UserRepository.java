package dev.pushservice.users;

import dev.pushservice.platform.storage.Uuid7;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/** SQL for users and aliases. Every statement filters by app. */
@Repository
class UserRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    UserRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    record UserRow(UUID id, String externalUserId, String locale, String timezone, String tags, String properties,
                   java.sql.Timestamp createdAt, java.sql.Timestamp updatedAt) {
    }

    Optional<UserRow> find(UUID appId, String externalUserId) {
        return jdbc.sql("""
                        select id, external_user_id, locale, timezone, tags::text as tags, properties::text as properties,
                               created_at, updated_at
                        from users where app_id = :app and external_user_id = :ext""")
                .param("app", appId).param("ext", externalUserId)
                .query(UserRow.class).optional();
    }

    /** The named user, created if missing, with {@code tags} merged in (key by key); SQL function of migration V9. */
    UUID upsertNamed(UUID appId, String externalUserId, Map<String, String> tags) {
        return jdbc.sql("select upsert_named_user(:app, :ext, cast(:tags as jsonb))")
                .param("app", appId).param("ext", externalUserId).param("tags", toJson(tags))
                .query(UUID.class).single();
    }

    /** Applies a PATCH: null arguments leave the column unchanged; objects replace the stored ones whole. */
    UUID patch(UUID appId, String externalUserId, String locale, boolean setLocale, String timezone, boolean setTimezone,
               Map<String, String> tags, Map<String, Object> properties) {
        return jdbc.sql("""
                        insert into users as u (id, app_id, external_user_id, locale, timezone, tags, properties)
                        values (:id, :app, :ext, :locale, :tz, coalesce(cast(:tags as jsonb), '{}'::jsonb),
                                coalesce(cast(:props as jsonb), '{}'::jsonb))
                        on conflict (app_id, external_user_id) where external_user_id is not null
                        do update set locale = case when :setLocale then excluded.locale else u.locale end,
                                      timezone = case when :setTz then excluded.timezone else u.timezone end,
                                      tags = coalesce(cast(:tags as jsonb), u.tags),
                                      properties = coalesce(cast(:props as jsonb), u.properties),
                                      updated_at = now()
                        returning id""")
                .param("id", Uuid7.at(java.time.Instant.now())).param("app", appId).param("ext", externalUserId)
                .param("locale", locale).param("setLocale", setLocale)
                .param("tz", timezone).param("setTz", setTimezone)
                .param("tags", tags == null ? null : toJson(tags))
                .param("props", properties == null ? null : toJson(properties))
                .query(UUID.class).single();
    }

    /** The named user's id, row-locked until the transaction ends; empty when there is no such user. */
    Optional<UUID> lockId(UUID appId, String externalUserId) {
        return jdbc.sql("select id from users where app_id = :app and external_user_id = :ext for update")
                .param("app", appId).param("ext", externalUserId).query(UUID.class).optional();
    }

    /** Removes the user; its aliases cascade. */
    void delete(UUID appId, UUID userId) {
        jdbc.sql("delete from users where app_id = :app and id = :id").param("app", appId).param("id", userId).update();
    }

    record AliasRow(String label, String value) {
    }

    List<AliasRow> aliases(UUID appId, UUID userId) {
        return jdbc.sql("select label, value from aliases where app_id = :app and user_id = :user order by label, value")
                .param("app", appId).param("user", userId).query(AliasRow.class).list();
    }

    /** Creates the alias or moves it here from another user of the same app; true when it moved. */
    boolean putAlias(UUID appId, UUID userId, String label, String value) {
        UUID previous = jdbc.sql("select user_id from aliases where app_id = :app and label = :label and value = :value for update")
                .param("app", appId).param("label", label).param("value", value).query(UUID.class).optional().orElse(null);
        jdbc.sql("""
                        insert into aliases (app_id, label, value, user_id) values (:app, :label, :value, :user)
                        on conflict (app_id, label, value) do update set user_id = excluded.user_id, created_at = now()""")
                .param("app", appId).param("label", label).param("value", value).param("user", userId).update();
        return previous != null && !previous.equals(userId);
    }

    boolean deleteAlias(UUID appId, UUID userId, String label, String value) {
        return jdbc.sql("delete from aliases where app_id = :app and user_id = :user and label = :label and value = :value")
                .param("app", appId).param("user", userId).param("label", label).param("value", value).update() == 1;
    }

    private String toJson(Object value) {
        return json.writeValueAsString(value == null ? Map.of() : value);
    }
}
