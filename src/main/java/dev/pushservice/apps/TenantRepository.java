package dev.pushservice.apps;

import dev.pushservice.platform.auth.ApiKeyResolver;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.config.PushProperties;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL for organisations, apps and API keys. Key lookups (every authenticated request) are cached
 * for {@value #KEY_CACHE_MILLIS} ms; revoking or rotating through this process clears the cache at
 * once, so a key revoked elsewhere (the admin CLI, another instance) stops working within that time.
 */
@Repository
class TenantRepository implements ApiKeyResolver {

    static final long KEY_CACHE_MILLIS = 1000;

    private static final String KEY_COLUMNS =
            "k.id, k.app_id, k.kind, k.name, k.hint, k.scopes, k.created_at, k.expires_at, k.revoked_at, k.last_used_at";

    private final JdbcClient jdbc;
    private final Integer defaultDeviceLimit;
    private final com.github.benmanes.caffeine.cache.Cache<java.nio.ByteBuffer, Optional<StoredKey>> keys =
            com.github.benmanes.caffeine.cache.Caffeine.newBuilder()
                    .expireAfterWrite(java.time.Duration.ofMillis(KEY_CACHE_MILLIS)).maximumSize(100_000).build();

    private final java.time.Clock clock;

    TenantRepository(JdbcClient jdbc, PushProperties properties, java.time.Clock clock) {
        this.jdbc = jdbc;
        this.clock = clock;
        this.defaultDeviceLimit = properties.activeDeviceLimitForNewOrganisations();
    }

    Tenants.Organisation insertOrganisation(String name) {
        return jdbc.sql("""
                        insert into organisations (id, name, active_device_limit) values (:id, :name, :limit)
                        returning id, name, active_device_limit, created_at""")
                .param("id", UUID.randomUUID()).param("name", name).param("limit", defaultDeviceLimit)
                .query(TenantRepository::organisation).single();
    }

    List<Tenants.Organisation> organisations() {
        return jdbc.sql("select id, name, active_device_limit, created_at from organisations order by created_at, id")
                .query(TenantRepository::organisation).list();
    }

    Optional<Tenants.Organisation> organisation(UUID id) {
        return jdbc.sql("select id, name, active_device_limit, created_at from organisations where id = :id")
                .param("id", id).query(TenantRepository::organisation).optional();
    }

    Tenants.App insertApp(UUID orgId, String name, String timezone) {
        return jdbc.sql("""
                        insert into apps (id, org_id, name, timezone) values (:id, :org, :name, :tz)
                        returning id, org_id, name, timezone, created_at""")
                .param("id", UUID.randomUUID()).param("org", orgId).param("name", name).param("tz", timezone)
                .query(TenantRepository::app).single();
    }

    List<Tenants.App> apps(UUID orgId) {
        return jdbc.sql("""
                        select id, org_id, name, timezone, created_at from apps
                        where (cast(:org as uuid) is null or org_id = :org) order by created_at, id""")
                .param("org", orgId).query(TenantRepository::app).list();
    }

    Optional<Tenants.App> app(UUID id) {
        return jdbc.sql("select id, org_id, name, timezone, created_at from apps where id = :id")
                .param("id", id).query(TenantRepository::app).optional();
    }

    Tenants.Key insertKey(UUID appId, KeyKind kind, String name, String hint, byte[] hash, Set<Scope> scopes,
                          Instant expiresAt) {
        String[] scopeValues = scopes.stream().map(Scope::value).sorted().toArray(String[]::new);
        return jdbc.sql("""
                        insert into api_keys as k (id, app_id, kind, name, hint, key_hash, scopes, expires_at)
                        values (:id, :app, :kind, :name, :hint, :hash, :scopes, :expires)
                        returning""" + " " + KEY_COLUMNS)
                .param("id", UUID.randomUUID()).param("app", appId).param("kind", kind.value())
                .param("name", name).param("hint", hint).param("hash", hash).param("scopes", scopeValues)
                .param("expires", expiresAt == null ? null : Timestamp.from(expiresAt))
                .query(TenantRepository::key).single();
    }

    List<Tenants.Key> keys(UUID appId) {
        return jdbc.sql("select " + KEY_COLUMNS + " from api_keys k where k.app_id = :app order by k.created_at, k.id")
                .param("app", appId).query(TenantRepository::key).list();
    }

    Optional<Tenants.Key> key(UUID id) {
        return jdbc.sql("select " + KEY_COLUMNS + " from api_keys k where k.id = :id")
                .param("id", id).query(TenantRepository::key).optional();
    }

    /** Revokes the key now, unless it already is; returns whether this call revoked it. */
    boolean revoke(UUID keyId, UUID replacedBy) {
        forgetKeysAfterCommit();
        boolean revoked = jdbc.sql("""
                        update api_keys set revoked_at = now(), replaced_by = coalesce(:by, replaced_by)
                        where id = :id and revoked_at is null""")
                .param("id", keyId).param("by", replacedBy).update() == 1;
        keys.invalidateAll();
        return revoked;
    }

    /** Lets the key keep working until {@code until} (rotation grace), then it expires. */
    void expireAt(UUID keyId, Instant until, UUID replacedBy) {
        forgetKeysAfterCommit();
        jdbc.sql("""
                        update api_keys set expires_at = least(coalesce(expires_at, :until), :until), replaced_by = :by
                        where id = :id""")
                .param("id", keyId).param("until", Timestamp.from(until)).param("by", replacedBy).update();
        keys.invalidateAll();
    }

    @Override
    public Optional<StoredKey> findByHash(byte[] sha256) {
        return keys.get(java.nio.ByteBuffer.wrap(sha256.clone()), hash -> lookup(sha256));
    }

    private Optional<StoredKey> lookup(byte[] sha256) {
        return jdbc.sql("""
                        select k.id, k.app_id, a.org_id, k.kind, k.scopes, k.expires_at, k.revoked_at, k.last_used_at
                        from api_keys k join apps a on a.id = k.app_id
                        where k.key_hash = :hash""")
                .param("hash", sha256)
                .query((rs, n) -> new StoredKey(
                        new ApiPrincipal(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                                rs.getObject("org_id", UUID.class), KeyKind.valueOf(rs.getString("kind").toUpperCase()),
                                scopes(rs.getArray("scopes"))),
                        instant(rs, "expires_at"), instant(rs, "revoked_at"), instant(rs, "last_used_at")))
                .optional();
    }

    /**
     * Clears cached keys now and again once the change is committed, so that no request caches the
     * state from before the change in between.
     */
    private void forgetKeysAfterCommit() {
        keys.invalidateAll();
        if (org.springframework.transaction.support.TransactionSynchronizationManager.isSynchronizationActive()) {
            org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
                    new org.springframework.transaction.support.TransactionSynchronization() {
                        @Override
                        public void afterCompletion(int status) {
                            keys.invalidateAll();
                        }
                    });
        }
    }

    /** When this process last wrote a key's last_used_at, so a cached key does not cost an UPDATE per request. */
    private final java.util.concurrent.ConcurrentMap<UUID, Instant> touched = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void touch(StoredKey key) {
        Instant last = key.lastUsedAt();
        Instant now = clock.instant();
        Instant recent = now.minusSeconds(60);
        if (last != null && last.isAfter(recent)) return;
        Instant mine = touched.get(key.principal().keyId());
        if (mine != null && mine.isAfter(recent)) return;
        touched.put(key.principal().keyId(), now);
        jdbc.sql("update api_keys set last_used_at = now() where id = :id and (last_used_at is null or last_used_at < now() - interval '60 seconds')")
                .param("id", key.principal().keyId()).update();
    }

    /** Takes the bootstrap lock for the current transaction, so two instances never both bootstrap. */
    boolean claimBootstrap() {
        jdbc.sql("select pg_advisory_xact_lock(7284151)").query().singleValue();
        return jdbc.sql("insert into service_state (key, value) values ('bootstrapped_at', now()::text) on conflict do nothing")
                .update() == 1;
    }

    private static Set<Scope> scopes(Array array) throws SQLException {
        String[] values = (String[]) array.getArray();
        EnumSet<Scope> scopes = EnumSet.noneOf(Scope.class);
        Arrays.stream(values).map(Scope::fromValue).flatMap(Optional::stream).forEach(scopes::add);
        return scopes;
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static Tenants.Organisation organisation(ResultSet rs, int n) throws SQLException {
        return new Tenants.Organisation(rs.getObject("id", UUID.class), rs.getString("name"),
                (Integer) rs.getObject("active_device_limit"), instant(rs, "created_at"));
    }

    private static Tenants.App app(ResultSet rs, int n) throws SQLException {
        return new Tenants.App(rs.getObject("id", UUID.class), rs.getObject("org_id", UUID.class),
                rs.getString("name"), rs.getString("timezone"), instant(rs, "created_at"));
    }

    private static Tenants.Key key(ResultSet rs, int n) throws SQLException {
        return new Tenants.Key(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                rs.getString("kind"), rs.getString("name"), rs.getString("hint"),
                List.of((String[]) rs.getArray("scopes").getArray()), instant(rs, "created_at"),
                instant(rs, "expires_at"), instant(rs, "revoked_at"), instant(rs, "last_used_at"));
    }
}
