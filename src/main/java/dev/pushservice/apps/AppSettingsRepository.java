package dev.pushservice.apps;

import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** Reads and writes the settings of one app; every statement is keyed by the caller's app id. */
@Repository
class AppSettingsRepository {

    private final JdbcClient jdbc;

    AppSettingsRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    AppSettings find(UUID appId) {
        return jdbc.sql("select name, timezone from apps where id = :app")
                .param("app", appId)
                .query((rs, n) -> new AppSettings(rs.getString("name"), rs.getString("timezone")))
                .single();
    }

    void update(UUID appId, String name, String timezone) {
        jdbc.sql("update apps set name = coalesce(:name, name), timezone = coalesce(:tz, timezone) where id = :app")
                .param("app", appId).param("name", name).param("tz", timezone)
                .update();
    }
}
