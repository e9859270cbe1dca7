package dev.pushservice.devices;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.error.ErrorCode;
import dev.pushservice.platform.json.TimeZones;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.users.UserService;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Device registration and reads. Registration is one transaction: find the token (locked), or
 * claim a staged migration record and insert; the organisation's active-device limit is checked
 * at commit by the database (trigger {@code devices_active_count}), so it stays exact under
 * concurrency. Two concurrent registrations of one new token: one inserts, the other finds the
 * insert on retry and refreshes it, so exactly one device exists.
 */
@Service
public class DeviceService {

    /** Namespace of the stable UUIDs given to non-UUID migration source ids (UUID v5). */
    private static final UUID MIGRATION_NAMESPACE = UUID.fromString("6f1c2a53-52c5-4f5e-9d8a-4b6c0e1f7a10");
    private static final int ATTEMPTS = 3;

    private final DeviceRepository devices;
    private final UserService users;
    private final TransactionTemplate transaction;
    private final JsonMapper json;

    DeviceService(DeviceRepository devices, UserService users, TransactionTemplate transaction, JsonMapper json) {
        this.devices = devices;
        this.users = users;
        this.transaction = transaction;
        this.json = json;
    }

    /** The outcome of a registration: the device and whether it was created (201) or refreshed (200). */
    public record Registered(DeviceView device, boolean created) {
    }

    Registered register(ApiPrincipal caller, Registration r, PushTokens.Checked token) {
        for (int attempt = 1; ; attempt++) {
            try {
                Registered result = transaction.execute(status -> registerOnce(caller.appId(), r, token));
                if (result != null) return result;
            } catch (RuntimeException e) {
                // the limit is checked at commit, so it surfaces as a commit failure, not a statement error
                if (isDeviceLimit(e)) {
                    throw new ApiException(ErrorCode.CONFLICT,
                            "The organisation's active-device limit is reached; disable devices or raise the limit");
                }
                throw e;
            }
            if (attempt == ATTEMPTS) {
                throw new IllegalStateException("Registration kept racing with concurrent registrations");
            }
        }
    }

    /** One attempt; null when a concurrent registration inserted the same token first (then retry). */
    private Registered registerOnce(UUID appId, Registration r, PushTokens.Checked token) {
        String platform = r.platform().value();
        var existing = devices.lockByToken(appId, platform, token.identityHash());
        if (existing.isPresent()) {
            UUID previous = existing.get().userId();
            UUID owner = users.ownerForRegistration(appId, r.externalUserId(), r.tags(), previous,
                    existing.get().anonymousUser());
            devices.refresh(appId, existing.get().id(), r, token, owner);
            if (previous != null && !previous.equals(owner)) users.releaseIfAnonymous(appId, previous);
            return new Registered(devices.find(appId, existing.get().id()).orElseThrow(), false);
        }
        var staged = devices.lockStaged(appId, platform, token.identityHash()).orElse(null);
        Registration effective = staged == null ? r : withStagedDefaults(r, staged);
        UUID id = staged == null ? UUID.randomUUID() : idFor(staged);
        if (staged != null && devices.idTaken(id)) id = UUID.randomUUID();
        UUID owner = users.ownerForRegistration(appId, effective.externalUserId(), effective.tags(), null, false);
        if (!devices.insert(id, appId, effective, token, owner, staged)) {
            return null;
        }
        if (staged != null) devices.claim(staged.id(), id);
        return new Registered(devices.find(appId, id).orElseThrow(), true);
    }

    /**
     * A staged source id that is a UUID carries forward; any other gets a stable UUID derived from
     * the provider and the id (same input, same UUID, every time).
     */
    static UUID idFor(DeviceRepository.Staged staged) {
        try {
            UUID uuid = UUID.fromString(staged.sourceDeviceId());
            if (uuid.toString().equalsIgnoreCase(staged.sourceDeviceId())) return uuid;
        } catch (IllegalArgumentException notUuid) {
            // derive below
        }
        return nameBased(staged.sourceProvider() + ":" + staged.sourceDeviceId());
    }

    /** RFC 4122 name-based UUID, version 5 (SHA-1), in {@link #MIGRATION_NAMESPACE}. */
    static UUID nameBased(String name) {
        try {
            var sha1 = java.security.MessageDigest.getInstance("SHA-1");
            java.nio.ByteBuffer ns = java.nio.ByteBuffer.allocate(16)
                    .putLong(MIGRATION_NAMESPACE.getMostSignificantBits())
                    .putLong(MIGRATION_NAMESPACE.getLeastSignificantBits());
            sha1.update(ns.array());
            byte[] h = sha1.digest(name.getBytes(StandardCharsets.UTF_8));
            h[6] = (byte) ((h[6] & 0x0f) | 0x50);
            h[8] = (byte) ((h[8] & 0x3f) | 0x80);
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(h, 0, 16);
            return new UUID(b.getLong(), b.getLong());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The registration's values win; the staged record fills what it leaves out (invalid staged values are ignored). */
    private Registration withStagedDefaults(Registration r, DeviceRepository.Staged s) {
        Map<String, String> tags = new LinkedHashMap<>();
        if (s.tags() != null) {
            JsonNode node = json.readTree(s.tags());
            if (node.isObject()) {
                for (var e : node.properties()) {
                    JsonNode v = e.getValue();
                    if (v.isNull()) tags.put(e.getKey(), "");
                    else if (v.isValueNode()) tags.put(e.getKey(), v.isString() ? v.stringValue() : v.toString());
                }
            }
        }
        if (r.tags() != null) tags.putAll(r.tags());
        String stagedZone = TimeZones.isValid(s.timezone()) ? s.timezone() : null;
        return new Registration(r.platform(), r.pushToken(),
                r.externalUserId() != null ? r.externalUserId() : s.externalUserId(), r.identityToken(),
                first(r.appVersion(), s.appVersion()), first(r.deviceModel(), s.deviceModel()),
                first(r.osVersion(), s.osVersion()), first(r.locale(), s.locale()), first(r.timezone(), stagedZone),
                tags.isEmpty() ? null : tags);
    }

    private static String first(String a, String b) {
        return a != null ? a : b;
    }

    private static boolean isDeviceLimit(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && "PS001".equals(sql.getSQLState())) return true;
        }
        return false;
    }

    public DeviceView get(UUID appId, UUID deviceId) {
        return devices.find(appId, deviceId).orElseThrow(() -> ApiException.notFound("Device"));
    }

    public Page<DeviceView> list(UUID appId, String platform, Boolean enabled, PageRequest page) {
        return Page.of(devices.list(appId, platform, enabled, page), page);
    }

    /** All devices of a user (for the user read). */
    public List<DeviceView> ofUser(UUID appId, UUID userId) {
        return devices.ofUser(appId, userId);
    }

    public DeviceView disable(UUID appId, UUID deviceId) {
        if (!devices.disable(appId, deviceId)) {
            throw new ApiException(ErrorCode.NOT_FOUND, "Device not found or already disabled");
        }
        return get(appId, deviceId);
    }
}
