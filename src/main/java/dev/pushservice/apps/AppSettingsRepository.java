package dev.pushservice.apps;

import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Reads and writes the settings of one app; every statement is keyed by the caller's app id. */
@Repository
class AppSettingsRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    AppSettingsRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    record Row(String name, String timezone, JsonNode settings) {
    }

    Row find(UUID appId) {
        return jdbc.sql("select name, timezone, settings::text as settings from apps where id = :app")
                .param("app", appId)
                .query((rs, n) -> new Row(rs.getString("name"), rs.getString("timezone"), json.readTree(rs.getString("settings"))))
                .single();
    }

    /** The app's time zone alone (IANA name); a hot-path read, no settings parsing. */
    String timezone(UUID appId) {
        return jdbc.sql("select timezone from apps where id = :app")
                .param("app", appId)
                .query(String.class)
                .single();
    }

    /** The row, locked until the transaction ends, so concurrent PATCHes do not lose each other's changes. */
    Row lock(UUID appId) {
        return jdbc.sql("select name, timezone, settings::text as settings from apps where id = :app for update")
                .param("app", appId)
                .query((rs, n) -> new Row(rs.getString("name"), rs.getString("timezone"), json.readTree(rs.getString("settings"))))
                .single();
    }

    void update(UUID appId, String name, String timezone, JsonNode settings) {
        jdbc.sql("""
                        update apps set name = coalesce(:name, name), timezone = coalesce(:tz, timezone),
                                        settings = cast(:settings as jsonb)
                        where id = :app""")
                .param("app", appId).param("name", name).param("tz", timezone)
                .param("settings", json.writeValueAsString(settings))
                .update();
    }
}
