package dev.pushservice.events;

import dev.pushservice.platform.pagination.PageRequest;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/** Reads of stored events. Every statement filters by app. */
@Repository
class EventReadRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    EventReadRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /** Events tied to a notification, newest first (index {@code events_notification_idx}). */
    List<EventReads.EventView> forNotification(UUID appId, UUID notificationId, PageRequest page) {
        return jdbc.sql("""
                        select id, event_type, event_name, device_id, metadata::text as metadata, occurred_at
                        from events where app_id = :app and notification_id = :notification
                        order by occurred_at desc, id desc limit :limit offset :offset""")
                .param("app", appId).param("notification", notificationId)
                .param("limit", page.fetchSize()).param("offset", page.offset())
                .query((rs, n) -> {
                    String metadata = rs.getString("metadata");
                    return new EventReads.EventView(rs.getObject("id", UUID.class), rs.getString("event_type"),
                            rs.getString("event_name"), EventReads.SOURCE, rs.getObject("device_id", UUID.class),
                            metadata == null ? json.createObjectNode() : json.readTree(metadata),
                            rs.getTimestamp("occurred_at").toInstant());
                })
                .list();
    }
}
