package dev.pushservice.devices;

import dev.pushservice.platform.pagination.PageRequest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
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

    /** What {@code register_device} did: created or refreshed a device, or found a staged record to claim. */
    enum Outcome { CREATED, REFRESHED, STAGED }

    record RegisterResult(Outcome outcome, Long stagedId, DeviceView device) {
    }

    /**
     * Registers in one statement, in autocommit (the database function {@code register_device},
     * migration V9, holds the rules). With {@code claimStaged} null an unknown token that matches an
     * unclaimed staged record changes nothing and answers {@link Outcome#STAGED}; with it, the
     * record is claimed and the new device takes {@code claimId} (unless a device already has it).
     */
    RegisterResult register(UUID appId, Registration r, PushTokens.Checked token, Long claimStaged, UUID claimId) {
        return jdbc.sql("""
                        select * from register_device(cast(:app as uuid), cast(:platform as text), cast(:token as text),
                            cast(:hash as bytea), cast(:ext as text), cast(:tags as jsonb), cast(:appVersion as text),
                            cast(:model as text), cast(:os as text), cast(:locale as text), cast(:tz as text),
                            cast(:staged as bigint), cast(:claim as uuid))""")
                .param("app", appId).param("platform", r.platform().value())
                .param("token", token.stored()).param("hash", token.identityHash())
                .param("ext", r.externalUserId()).param("tags", r.tags() == null ? null : json.writeValueAsString(r.tags()))
                .param("appVersion", r.appVersion()).param("model", r.deviceModel()).param("os", r.osVersion())
                .param("locale", r.locale()).param("tz", r.timezone())
                .param("staged", claimStaged).param("claim", claimId)
                .query((rs, n) -> {
                    Outcome outcome = Outcome.valueOf(rs.getString("outcome").toUpperCase(java.util.Locale.ROOT));
                    long staged = rs.getLong("staged_id");
                    Long stagedId = rs.wasNull() ? null : staged;
                    return new RegisterResult(outcome, stagedId, outcome == Outcome.STAGED ? null : view(rs, n));
                })
                .single();
    }

    /**
     * The VAPID public key the app's web device with this endpoint hash recorded (its token's
     * {@code application_server_key}), or empty when there is no such device or it recorded none.
     */
    java.util.Optional<String> recordedServerKey(UUID appId, byte[] identityHash) {
        return jdbc.sql("""
                        select token::jsonb ->> 'application_server_key' from devices
                        where app_id = :app and platform = 'web' and token_hash = :hash""")
                .param("app", appId).param("hash", identityHash)
                .query(String.class).optional();
    }

    record Staged(long id, String sourceProvider, String sourceDeviceId, String externalUserId, String appVersion,
                  String deviceModel, String osVersion, String locale, String timezone, String tags) {
    }

    /** A staged migration record of the app. */
    Optional<Staged> staged(UUID appId, long id) {
        return jdbc.sql("""
                        select id, source_provider, source_device_id, external_user_id, app_version, device_model,
                               os_version, locale, timezone, tags::text as tags
                        from migration_staged_devices where app_id = :app and id = :id""")
                .param("app", appId).param("id", id)
                .query(Staged.class).optional();
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

    /**
     * Disables and detaches every device of the user (for the user's deletion); returns how many of
     * them were enabled before.
     */
    int detachUser(UUID appId, UUID userId) {
        int enabled = jdbc.sql("select count(*) from devices where app_id = :app and user_id = :user and enabled")
                .param("app", appId).param("user", userId).query(Integer.class).single();
        jdbc.sql("update devices set enabled = false, user_id = null, updated_at = now() where app_id = :app and user_id = :user")
                .param("app", appId).param("user", userId).update();
        return enabled;
    }

    /**
     * Marks the tokens of the devices in {@code registeredBefore} invalidated (a provider said they are
     * dead), in one statement, each only if it was last registered ({@code last_seen_at}, set by every
     * registration) before its time in the map; returns the devices that were valid until now. They stay
     * enabled (the app may register a fresh token) but are never sent to again.
     */
    List<UUID> invalidate(UUID appId, Map<UUID, java.time.Instant> registeredBefore, String reason, java.time.Instant at) {
        if (registeredBefore.isEmpty()) return List.of();
        String[] ids = new String[registeredBefore.size()];
        String[] before = new String[ids.length];
        int i = 0;
        for (Map.Entry<UUID, java.time.Instant> e : registeredBefore.entrySet()) {
            ids[i] = e.getKey().toString();
            before[i++] = e.getValue().toString();
        }
        return jdbc.sql("""
                        update devices d set invalidated_at = :at, invalidation_reason = :reason, updated_at = :at
                        from unnest(cast(:ids as uuid[]), cast(:before as timestamptz[])) as v(id, before)
                        where d.app_id = :app and d.id = v.id and d.invalidated_at is null and d.last_seen_at < v.before
                        returning d.id""")
                .param("at", java.time.OffsetDateTime.ofInstant(at, java.time.ZoneOffset.UTC)).param("reason", reason)
                .param("app", appId).param("ids", ids).param("before", before)
                .query(UUID.class).list();
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

    /** Devices per platform and state, in one scan of the app's devices (see {@link DeviceCounts}). */
    java.util.List<DeviceCounts> countsByPlatform(UUID appId) {
        return jdbc.sql("""
                        select platform,
                               count(*) filter (where enabled and invalidated_at is null) as subscribed,
                               count(*) filter (where not enabled and invalidated_at is null) as disabled,
                               count(*) filter (where invalidated_at is not null) as invalid
                        from devices where app_id = :app group by platform order by platform""")
                .param("app", appId)
                .query((rs, n) -> new DeviceCounts(rs.getString("platform"), rs.getLong("subscribed"),
                        rs.getLong("disabled"), rs.getLong("invalid")))
                .list();
    }
}
