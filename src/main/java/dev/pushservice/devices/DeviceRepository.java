package dev.pushservice.devices;

import dev.pushservice.platform.pagination.PageRequest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/** SQL for devices and staged migration records. Every statement filters by app. */
@Repository
class DeviceRepository {

    private static final String VIEW = """
            select d.id, d.platform, d.enabled, d.invalidated_at, u.external_user_id,
                   d.app_version, d.device_model, d.os_version, d.locale, d.timezone,
                   coalesce(u.tags, '{}'::jsonb)::text as tags, d.last_seen_at, d.created_at, d.updated_at,
                   d.migrated_provider, d.migrated_source_id
            from devices d left join users u on u.id = d.user_id
            """;

    private final JdbcClient jdbc;
    private final JsonMapper json;

    DeviceRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /** The device holding this token, locked for the rest of the transaction, and whether its user is anonymous. */
    record Existing(UUID id, UUID userId, boolean anonymousUser) {
    }

    Optional<Existing> lockByToken(UUID appId, String platform, byte[] tokenHash) {
        return jdbc.sql("""
                        select d.id, d.user_id, (u.id is not null and u.external_user_id is null) as anonymous_user
                        from devices d left join users u on u.id = d.user_id
                        where d.app_id = :app and d.platform = :platform and d.token_hash = :hash for update of d""")
                .param("app", appId).param("platform", platform).param("hash", tokenHash)
                .query(Existing.class).optional();
    }

    record Staged(long id, String sourceProvider, String sourceDeviceId, String externalUserId, String appVersion,
                  String deviceModel, String osVersion, String locale, String timezone, String tags) {
    }

    /** An unclaimed staged record for this token, locked so two registrations cannot both claim it. */
    Optional<Staged> lockStaged(UUID appId, String platform, byte[] tokenHash) {
        return jdbc.sql("""
                        select id, source_provider, source_device_id, external_user_id, app_version, device_model,
                               os_version, locale, timezone, tags::text as tags
                        from migration_staged_devices
                        where app_id = :app and platform = :platform and token_hash = :hash and claimed_at is null
                        for update skip locked""")
                .param("app", appId).param("platform", platform).param("hash", tokenHash)
                .query(Staged.class).optional();
    }

    boolean idTaken(UUID id) {
        return jdbc.sql("select exists (select 1 from devices where id = :id)").param("id", id).query(Boolean.class).single();
    }

    void claim(long stagedId, UUID deviceId) {
        jdbc.sql("update migration_staged_devices set claimed_at = now(), claimed_device_id = :device where id = :id")
                .param("id", stagedId).param("device", deviceId).update();
    }

    /** Inserts a new device; false when another registration of the same token (or id) got there first. */
    boolean insert(UUID id, UUID appId, Registration r, PushTokens.Checked token, UUID userId, Staged staged) {
        return jdbc.sql("""
                        insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, device_model,
                                             os_version, locale, timezone, migrated_provider, migrated_source_id)
                        values (:id, :app, :platform, :token, :hash, :user, :appVersion, :model, :os, :locale, :tz,
                                :provider, :source)
                        on conflict do nothing""")
                .param("id", id).param("app", appId).param("platform", r.platform().value())
                .param("token", token.stored()).param("hash", token.identityHash()).param("user", userId)
                .param("appVersion", r.appVersion()).param("model", r.deviceModel()).param("os", r.osVersion())
                .param("locale", r.locale()).param("tz", r.timezone())
                .param("provider", staged == null ? null : staged.sourceProvider())
                .param("source", staged == null ? null : staged.sourceDeviceId())
                .update() == 1;
    }

    /** Refreshes metadata, re-enables the device and clears any invalidation. */
    void refresh(UUID appId, UUID id, Registration r, PushTokens.Checked token, UUID userId) {
        jdbc.sql("""
                        update devices set token = :token, user_id = :user,
                               app_version = coalesce(:appVersion, app_version), device_model = coalesce(:model, device_model),
                               os_version = coalesce(:os, os_version), locale = coalesce(:locale, locale),
                               timezone = coalesce(:tz, timezone), enabled = true, invalidated_at = null,
                               invalidation_reason = null, last_seen_at = now(), updated_at = now()
                        where app_id = :app and id = :id""")
                .param("app", appId).param("id", id).param("token", token.stored()).param("user", userId)
                .param("appVersion", r.appVersion()).param("model", r.deviceModel()).param("os", r.osVersion())
                .param("locale", r.locale()).param("tz", r.timezone())
                .update();
    }

    Optional<DeviceView> find(UUID appId, UUID id) {
        return jdbc.sql(VIEW + " where d.app_id = :app and d.id = :id")
                .param("app", appId).param("id", id).query(this::view).optional();
    }

    List<DeviceView> list(UUID appId, String platform, Boolean enabled, PageRequest page) {
        return jdbc.sql(VIEW + """
                         where d.app_id = :app
                           and (cast(:platform as text) is null or d.platform = :platform)
                           and (cast(:enabled as boolean) is null or d.enabled = :enabled)
                         order by d.created_at desc, d.id desc
                         limit :limit offset :offset""")
                .param("app", appId).param("platform", platform).param("enabled", enabled)
                .param("limit", page.fetchSize()).param("offset", page.offset())
                .query(this::view).list();
    }

    List<DeviceView> ofUser(UUID appId, UUID userId) {
        return jdbc.sql(VIEW + " where d.app_id = :app and d.user_id = :user order by d.created_at, d.id")
                .param("app", appId).param("user", userId).query(this::view).list();
    }

    /** Disables an enabled device and marks its token invalidated; false when it is unknown or already disabled. */
    boolean disable(UUID appId, UUID id) {
        return jdbc.sql("""
                        update devices set enabled = false, invalidated_at = coalesce(invalidated_at, now()),
                               invalidation_reason = coalesce(invalidation_reason, 'deleted'), updated_at = now()
                        where app_id = :app and id = :id and enabled""")
                .param("app", appId).param("id", id).update() == 1;
    }

    private DeviceView view(ResultSet rs, int n) throws SQLException {
        String provider = rs.getString("migrated_provider");
        return new DeviceView(rs.getObject("id", UUID.class), rs.getString("platform"), rs.getBoolean("enabled"),
                instant(rs.getTimestamp("invalidated_at")), rs.getString("external_user_id"), rs.getString("app_version"),
                rs.getString("device_model"), rs.getString("os_version"), rs.getString("locale"), rs.getString("timezone"),
                json.readTree(rs.getString("tags")), instant(rs.getTimestamp("last_seen_at")),
                instant(rs.getTimestamp("created_at")), instant(rs.getTimestamp("updated_at")),
                provider == null ? null : new DeviceView.Migration(provider, rs.getString("migrated_source_id")));
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
