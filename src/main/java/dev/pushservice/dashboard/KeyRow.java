package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import java.time.Instant;

/**
 * A key as the keys page shows it: never the raw key, only its hint (prefix and last four characters).
 *
 * @param state {@code active}, {@code expired} or {@code revoked}
 * @param ends when it was revoked or expires, or "—"
 */
public record KeyRow(String id, String kind, String name, String hint, String scopes, String state,
                     String created, String lastUsed, String ends) {

    static KeyRow of(Tenants.Key key, Instant now) {
        Instant end = key.revokedAt() != null ? key.revokedAt() : key.expiresAt();
        return new KeyRow(key.id().toString(), key.kind(), key.name(), key.hint(), String.join(" ", key.scopes()),
                key.state(now), DashboardFormat.minute(key.createdAt()),
                key.lastUsedAt() == null ? "never" : DashboardFormat.minute(key.lastUsedAt()),
                end == null ? "—" : DashboardFormat.minute(end));
    }

    public boolean active() {
        return "active".equals(state);
    }
}
