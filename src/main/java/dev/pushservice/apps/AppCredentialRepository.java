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
                        set summary = excluded.summary, secret = excluded.secret, version = excluded.version, updated_at = now()
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

    /** The summary of {@code provider}'s credential, without the secret; empty when none is set. */
    Optional<String> summary(UUID appId, String provider) {
        return jdbc.sql("select summary::text from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).query(String.class).optional();
    }

    boolean delete(UUID appId, String provider) {
        return jdbc.sql("delete from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).update() == 1;
    }

}
