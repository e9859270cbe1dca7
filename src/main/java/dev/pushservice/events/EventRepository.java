package dev.pushservice.events;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/**
 * Writes a batch of events with a fixed number of set-based statements, whatever the batch size:
 * two lookups (devices, app time zones), one multi-row insert into {@code events}, one upsert into
 * {@code device_event_last} and one into {@code event_daily_counts}. Must run inside a transaction
 * (the caller's), so the three tables change together or not at all.
 *
 * <p>Upserts are sorted by key so concurrent writers lock rows in the same order and do not deadlock.
 */
@Repository
class EventRepository {

    private final JdbcTemplate jdbc;

    EventRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Writes the events whose device (if any) belongs to their app; returns the ids of those it refused. */
    Set<UUID> write(List<NewEvent> batch) {
        return jdbc.execute((ConnectionCallback<Set<UUID>>) con -> write(con, batch));
    }

    private Set<UUID> write(Connection con, List<NewEvent> batch) throws SQLException {
        Map<UUID, Device> devices = devices(con, batch);
        Map<UUID, ZoneId> zones = zones(con, batch);
        Set<UUID> refused = new HashSet<>();
        List<NewEvent> accepted = new ArrayList<>(batch.size());
        List<UUID> users = new ArrayList<>(batch.size());
        for (NewEvent e : batch) {
            if (e.deviceId() != null) {
                Device d = devices.get(e.deviceId());
                if (d == null || !d.appId().equals(e.appId())) {
                    refused.add(e.id());
                    continue;
                }
                users.add(d.userId());
            } else {
                users.add(null);
            }
            accepted.add(e);
        }
        if (accepted.isEmpty()) return refused;

        int n = accepted.size();
        UUID[] ids = new UUID[n], apps = new UUID[n], deviceIds = new UUID[n], userIds = new UUID[n], notifications = new UUID[n];
        String[] types = new String[n], names = new String[n], countNames = new String[n], keys = new String[n],
                metadata = new String[n], occurred = new String[n], received = new String[n], days = new String[n];
        for (int i = 0; i < n; i++) {
            NewEvent e = accepted.get(i);
            ids[i] = e.id();
            apps[i] = e.appId();
            types[i] = e.type().value();
            names[i] = e.name();
            countNames[i] = e.name() == null ? "" : e.name();
            deviceIds[i] = e.deviceId();
            userIds[i] = users.get(i);
            notifications[i] = e.notificationId();
            metadata[i] = e.metadata();
            occurred[i] = e.occurredAt().toString();
            received[i] = e.receivedAt().toString();
            keys[i] = e.eventKey();
            days[i] = day(e, zones).toString();
        }
        try (PreparedStatement ps = con.prepareStatement("""
                insert into events (id, app_id, event_type, event_name, device_id, user_id, notification_id,
                                    metadata, occurred_at, received_at)
                select * from unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::uuid[], ?::uuid[], ?::uuid[],
                                     ?::text[]::jsonb[], ?::text[]::timestamptz[], ?::text[]::timestamptz[])""")) {
            bind(con, ps, "uuid", ids, apps);
            bind(con, ps, 3, "text", types, names);
            bind(con, ps, 5, "uuid", deviceIds, userIds, notifications);
            bind(con, ps, 8, "text", metadata, occurred, received);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = con.prepareStatement("""
                insert into device_event_last (app_id, device_id, event_key, last_at)
                select app_id, device_id, event_key, max(last_at)
                from unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[]::timestamptz[]) as t(app_id, device_id, event_key, last_at)
                where device_id is not null
                group by app_id, event_key, device_id
                order by app_id, event_key, device_id
                on conflict (app_id, event_key, device_id) do update set last_at = excluded.last_at
                where device_event_last.last_at < excluded.last_at""")) {
            bind(con, ps, "uuid", apps, deviceIds);
            bind(con, ps, 3, "text", keys, occurred);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = con.prepareStatement("""
                insert into event_daily_counts (app_id, day, event_type, event_name, count)
                select app_id, day, event_type, event_name, count(*)
                from unnest(?::uuid[], ?::text[]::date[], ?::text[], ?::text[]) as t(app_id, day, event_type, event_name)
                group by app_id, day, event_type, event_name
                order by app_id, day, event_type, event_name
                on conflict (app_id, day, event_type, event_name) do update set count = event_daily_counts.count + excluded.count""")) {
            bind(con, ps, "uuid", apps);
            bind(con, ps, 2, "text", days, types, countNames);
            ps.executeUpdate();
        }
        return refused;
    }

    private record Device(UUID appId, UUID userId) {
    }

    /** The devices the batch names (any app; the caller checks the app), by primary key. */
    private static Map<UUID, Device> devices(Connection con, List<NewEvent> batch) throws SQLException {
        Set<UUID> wanted = new LinkedHashSet<>();
        for (NewEvent e : batch) if (e.deviceId() != null) wanted.add(e.deviceId());
        Map<UUID, Device> found = new HashMap<>();
        if (wanted.isEmpty()) return found;
        try (PreparedStatement ps = con.prepareStatement("select id, app_id, user_id from devices where id = any(?::uuid[])")) {
            bind(con, ps, "uuid", (Object[]) wanted.toArray(UUID[]::new));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.put(rs.getObject(1, UUID.class), new Device(rs.getObject(2, UUID.class), rs.getObject(3, UUID.class)));
                }
            }
        }
        return found;
    }

    /** The current time zone of every app in the batch, read in the batch's transaction (never stale). */
    private static Map<UUID, ZoneId> zones(Connection con, List<NewEvent> batch) throws SQLException {
        Set<UUID> apps = new LinkedHashSet<>();
        for (NewEvent e : batch) apps.add(e.appId());
        Map<UUID, ZoneId> zones = new HashMap<>();
        try (PreparedStatement ps = con.prepareStatement("select id, timezone from apps where id = any(?::uuid[])")) {
            bind(con, ps, "uuid", (Object[]) apps.toArray(UUID[]::new));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) zones.put(rs.getObject(1, UUID.class), zone(rs.getString(2)));
            }
        }
        return zones;
    }

    /** The calendar day the event happened on in its app's time zone (computed here, with the JDK's zone rules). */
    private static LocalDate day(NewEvent e, Map<UUID, ZoneId> zones) {
        return e.occurredAt().atZone(zones.getOrDefault(e.appId(), ZoneOffset.UTC)).toLocalDate();
    }

    /** Stored zones were validated when set; should one not parse, UTC keeps ingest going. */
    static ZoneId zone(String id) {
        if (id == null) return ZoneOffset.UTC;
        try {
            return ZoneId.of(id);
        } catch (DateTimeException e) {
            return ZoneOffset.UTC;
        }
    }

    private static void bind(Connection con, PreparedStatement ps, String type, Object[]... arrays) throws SQLException {
        bind(con, ps, 1, type, arrays);
    }

    private static void bind(Connection con, PreparedStatement ps, int first, String type, Object[]... arrays)
            throws SQLException {
        for (int i = 0; i < arrays.length; i++) {
            Array array = con.createArrayOf(type, arrays[i]);
            ps.setArray(first + i, array);
        }
    }
}
