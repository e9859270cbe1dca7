package dev.pushservice.delivery.webpush;

import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** The {@code webpush_imported_keys} rows (migration V43), the secret already sealed by the caller. */
@Repository
class ImportedVapidKeyRepository {

    private final JdbcClient jdbc;

    ImportedVapidKeyRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Inserts unless the app holds this public key already; true when this call inserted. */
    boolean insertIfAbsent(UUID appId, String publicKey, byte[] sealed) {
        return jdbc.sql("""
                        insert into webpush_imported_keys (app_id, public_key, secret) values (:app, :key, :secret)
                        on conflict (app_id, public_key) do nothing""")
                .param("app", appId).param("key", publicKey).param("secret", sealed).update() == 1;
    }

    /** The sealed private key of the app's imported pair with this public key, or empty. */
    Optional<byte[]> sealed(UUID appId, String publicKey) {
        return jdbc.sql("select secret from webpush_imported_keys where app_id = :app and public_key = :key")
                .param("app", appId).param("key", publicKey).query(byte[].class).optional();
    }
}
