package dev.pushservice.apps;

import dev.pushservice.platform.crypto.SecretBox;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Provider credentials of apps, encrypted at rest. The secret part is sealed with {@link SecretBox}
 * under a context naming the app and provider; the summary is what settings reads may show.
 * Providers read through this store (via their {@code CredentialSource}) and key their clients by
 * {@link Stored#version()}, which changes on every replacement.
 */
@Service
public class AppCredentialStore {

    /** Provider names as stored. */
    public static final String APNS = "apns";
    public static final String FCM = "fcm";
    public static final String WEBPUSH = "webpush";

    private final JdbcClient jdbc;
    private final SecretBox box;
    private final JsonMapper json;

    AppCredentialStore(JdbcClient jdbc, SecretBox box, JsonMapper json) {
        this.jdbc = jdbc;
        this.box = box;
        this.json = json;
    }

    /** A stored credential: its showable summary, the decrypted secret, and its version. */
    public record Stored(JsonNode summary, byte[] secret, long version) {
    }

    /** Stores or replaces the app's credential for {@code provider}; returns the new version. */
    public long put(UUID appId, String provider, JsonNode summary, byte[] secret) {
        return jdbc.sql("""
                        insert into app_credentials as c (app_id, provider, summary, secret, version)
                        values (:app, :provider, cast(:summary as jsonb), :secret, nextval('app_credentials_version_seq'))
                        on conflict (app_id, provider) do update
                        set summary = excluded.summary, secret = excluded.secret, version = excluded.version, updated_at = now()
                        returning version""")
                .param("app", appId).param("provider", provider)
                .param("summary", json.writeValueAsString(summary))
                .param("secret", box.seal(secret, context(appId, provider)))
                .query(Long.class).single();
    }

    /** Stores the credential only if the app has none for {@code provider} yet (first writer wins). */
    public boolean putIfAbsent(UUID appId, String provider, JsonNode summary, byte[] secret) {
        return jdbc.sql("""
                        insert into app_credentials (app_id, provider, summary, secret, version)
                        values (:app, :provider, cast(:summary as jsonb), :secret, nextval('app_credentials_version_seq'))
                        on conflict (app_id, provider) do nothing""")
                .param("app", appId).param("provider", provider)
                .param("summary", json.writeValueAsString(summary))
                .param("secret", box.seal(secret, context(appId, provider)))
                .update() == 1;
    }

    public Optional<Stored> find(UUID appId, String provider) {
        return jdbc.sql("select summary::text as summary, secret, version from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider)
                .query((rs, n) -> new Stored(json.readTree(rs.getString("summary")),
                        box.open(rs.getBytes("secret"), context(appId, provider)), rs.getLong("version")))
                .optional();
    }

    /** Just the showable summary (no decryption). */
    public Optional<JsonNode> summary(UUID appId, String provider) {
        return jdbc.sql("select summary::text from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider)
                .query((rs, n) -> json.readTree(rs.getString(1)))
                .optional();
    }

    /** Just the version (cheap: no decryption), for a provider checking whether its cached client is current. */
    public Optional<Long> version(UUID appId, String provider) {
        return jdbc.sql("select version from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).query(Long.class).optional();
    }

    /** Summaries of every configured provider of the app, by provider name. */
    public Map<String, JsonNode> summaries(UUID appId) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        jdbc.sql("select provider, summary::text as summary from app_credentials where app_id = :app order by provider")
                .param("app", appId)
                .query((rs, n) -> out.put(rs.getString("provider"), json.readTree(rs.getString("summary"))))
                .list();
        return out;
    }

    /** Apps with no credential for {@code provider}, at most {@code limit} of them. */
    public List<UUID> appsWithout(String provider, int limit) {
        return jdbc.sql("""
                        select a.id from apps a
                        where not exists (select 1 from app_credentials c where c.app_id = a.id and c.provider = :provider)
                        order by a.id limit :limit""")
                .param("provider", provider).param("limit", limit)
                .query(UUID.class).list();
    }

    public boolean remove(UUID appId, String provider) {
        return jdbc.sql("delete from app_credentials where app_id = :app and provider = :provider")
                .param("app", appId).param("provider", provider).update() == 1;
    }

    private static String context(UUID appId, String provider) {
        return "app:" + appId + ":" + provider;
    }
}
