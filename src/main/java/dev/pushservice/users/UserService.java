package dev.pushservice.users;

import dev.pushservice.audit.AuditLog;
import java.util.List;
import dev.pushservice.devices.DeviceService;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.platform.domain.NotFound;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.json.JsonMapper;

/**
 * Users and their aliases: reads, PATCH, deletion and alias changes, each write in one transaction.
 * PATCH and alias creation create the named user when it does not exist yet. A user's devices are
 * read and detached through {@link DeviceService}, never through the devices' tables. Arguments are
 * already validated by the caller.
 */
@Service
class UserService {

    private final UserRepository users;
    private final DeviceService devices;
    private final JsonMapper json;
    private final AuditLog audit;

    private final LifecycleEventRepository lifecycle;
    private final java.time.Clock clock;

    UserService(UserRepository users, DeviceService devices, JsonMapper json, AuditLog audit,
                LifecycleEventRepository lifecycle, java.time.Clock clock) {
        this.lifecycle = lifecycle;
        this.clock = clock;
        this.users = users;
        this.devices = devices;
        this.json = json;
        this.audit = audit;
    }

    /**
     * What a PATCH changes: {@code locale} and {@code timezone} are set (possibly to null) when their
     * {@code set…} flag is true; {@code tags} and {@code properties} replace the stored objects whole
     * when not null.
     */
    record Patch(String locale, boolean setLocale, String timezone, boolean setTimezone,
                 Map<String, String> tags, Map<String, Object> properties) {
    }

    /** The user with aliases and devices; {@link NotFound} when the app has no such user. */
    @Transactional(readOnly = true)
    UserView get(UUID appId, String externalUserId) {
        UserRepository.UserRow row = users.find(appId, externalUserId).orElseThrow(UserService::notFound);
        var aliases = users.aliases(appId, row.id()).stream().map(a -> new UserView.Alias(a.label(), a.value())).toList();
        return new UserView(row.externalUserId(), row.locale(), row.timezone(), json.readTree(row.tags()),
                json.readTree(row.properties()), aliases, devices.ofUser(appId, row.id()),
                row.createdAt().toInstant(), row.updatedAt().toInstant());
    }

    @Transactional
    UserView patch(UUID appId, String externalUserId, Patch patch) {
        users.patch(appId, externalUserId, patch.locale(), patch.setLocale(), patch.timezone(), patch.setTimezone(),
                patch.tags(), patch.properties());
        List<String> changed = new java.util.ArrayList<>();
        if (patch.setLocale()) changed.add("locale");
        if (patch.setTimezone()) changed.add("timezone");
        if (patch.tags() != null) changed.add("tags");
        if (patch.properties() != null) changed.add("properties");
        audit.record(appId, "user.update", "user", externalUserId, changed);
        return get(appId, externalUserId);
    }

    /** Deletes the user (aliases go with it) after disabling and detaching its devices; returns how many were enabled. */
    @Transactional
    int delete(UUID appId, String externalUserId) {
        UUID userId = users.lockId(appId, externalUserId).orElseThrow(UserService::notFound);
        int disabled = devices.detachUser(appId, userId);
        users.delete(appId, userId);
        audit.record(appId, "user.delete", "user", externalUserId);
        lifecycle.record(appId, LifecycleEventRepository.Kind.USER_DELETED, userId,
                Map.of("external_user_id", externalUserId, "devices_disabled", disabled), clock.instant());
        return disabled;
    }

    /** Adds the alias to the user (created if missing); true when it moved from another user. */
    @Transactional
    boolean addAlias(UUID appId, String externalUserId, UserView.Alias alias) {
        UUID userId = users.upsertNamed(appId, externalUserId, Map.of());
        return users.putAlias(appId, userId, alias.label(), alias.value());
    }

    /** Removes the alias from the user; false when the user did not have it, {@link NotFound} when there is no such user. */
    @Transactional
    boolean deleteAlias(UUID appId, String externalUserId, UserView.Alias alias) {
        UUID userId = users.find(appId, externalUserId).map(UserRepository.UserRow::id).orElseThrow(UserService::notFound);
        return users.deleteAlias(appId, userId, alias.label(), alias.value());
    }

    private static NotFound notFound() {
        return new NotFound("User");
    }
}
