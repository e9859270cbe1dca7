package dev.pushservice.apps;

import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * The {@code app_credentials} rows: one per (app, provider), the secret already sealed by the
 * caller. Every statement is keyed by the app id.
 */
@Repository
class AppCredentialRepository {

    private final JdbcClient jdbc;

    AppCredentialRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** A row as stored: the summary as JSON text, the sealed secret, the version. */
    record Row(String provider, String summary, byte[] sealed, long version) {
    }

    /** Inserts or replaces; returns the new version (from a sequence, so it never repeats). */
    long upsert(UUID appId, String provider, String summaryJson, byte[] sealed) {
        return jdbc.sql("""
                        insert into app_credentials as c (app_id, provider, summary, secret, version)
                        values (:app, :provider, cast(:summary as jsonb), :secret, nextval('app_credentials_version_seq'))
                        on conflict (app_id, provider) do update
                        set summary = excluded.summary, secret = excluded.secret, version = excluded.version, updated_at = now(),
                            rejected_reason = null, rejected_at = null
                        returning version""")
                .param("app", appId).param("provider", provider)
                .param("summary", summaryJson).param("secret", sealed)
                .query(Long.class).single();
    }

    /** Inserts unless a row exists (first writer wins); true when this call inserted. */
    boolean insertIfAbsent(UUID appId, String provider, String summaryJson, byte[] sealed) {
        return jdbc.sql("""
                        insert into app_credentials (app_id, provider, summary, secret, version)
                        values (:app, :provider, cast(:summary as jsonb), :secret, nextval('app_credentials_version_seq'))
                        on conflict (app_id, provider) do nothing""")
                .param("app", appId).param("provider", provider)
                .param("summary", summaryJson).param("secret", sealed)
                .update() == 1;
    }

    Optional<Row> find(UUID appId, String provider) {
        return jdbc.sql("""
                        select provider, summary::text as summary, secret, version
                        from app_credentials where app_id = :app and provider = :provider""")
                .param("app", appId).param("provider", provider)
                .query((rs, n) -> new Row(rs.getString("provider"), rs.getString("summary"), rs.getBytes("secret"),
                        rs.getLong("version")))
                .optional();
    }

    Optional<Long> version(UUID appId, String provider) {
        return jdbc.sql("select version from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).query(Long.class).optional();
    }

    /** Apps with no credential for {@code provider}, in id order, at most {@code limit}. */
    List<UUID> appsWithout(String provider, int limit) {
        return jdbc.sql("""
                        select a.id from apps a
                        where not exists (select 1 from app_credentials c where c.app_id = a.id and c.provider = :provider)
                        order by a.id limit :limit""")
                .param("provider", provider).param("limit", limit)
                .query(UUID.class).list();
    }

    /**
     * The summary of {@code provider}'s credential, without the secret, with {@code invalid} (the
     * provider's reason and when) while the provider refuses it; empty when none is set.
     */
    Optional<String> summary(UUID appId, String provider) {
        return jdbc.sql("""
                        select (summary || case when rejected_at is null then '{}'::jsonb
                                else jsonb_build_object('invalid', jsonb_build_object('reason', rejected_reason,
                                         'detected_at', to_char(rejected_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                                end)::text
                        from app_credentials where app_id = :app and provider = :provider""")
                .param("app", appId).param("provider", provider).query(String.class).optional();
    }

    /**
     * Marks version {@code version} of the credential refused by its provider; a no-op when the
     * credential changed meanwhile (another version) or was already marked.
     */
    boolean markRejected(UUID appId, String provider, long version, String reason, java.time.Instant at) {
        return jdbc.sql("""
                        update app_credentials set rejected_reason = :reason, rejected_at = :at
                        where app_id = :app and provider = :provider and version = :version and rejected_at is null""")
                .param("app", appId).param("provider", provider).param("version", version).param("reason", reason)
                .param("at", java.sql.Timestamp.from(at)).update() == 1;
    }

    boolean delete(UUID appId, String provider) {
        return jdbc.sql("delete from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).update() == 1;
    }

}
