package dev.pushservice.devices;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.IdentityVerification;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.db.DatabaseAdmission;
import dev.pushservice.platform.domain.Conflict;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.TimeZones;
import dev.pushservice.platform.storage.Uuid7;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Device registration and reads. A registration is one statement in autocommit: the database
 * function {@code register_device} (migration V9) finds the token (locked) and refreshes it, or
 * inserts a new device, with the user's tags, in one round trip. Claiming a staged migration record
 * takes a second call: the first reports the record, this class derives the device id and fills the
 * registration from it. The organisation's active-device limit is checked at commit by the database
 * (triggers {@code devices_active_count} and {@code devices_active_count_changed}), so it stays
 * exact under concurrency. Two concurrent registrations of one new token: one inserts, the other's
 * insert meets the conflict and refreshes that device, so exactly one device exists. When the app verifies identities, a registration that
 * names an {@code external_user_id} must prove it with an {@code identity_token} before anything is stored.
 */
@Service
public class DeviceService {

    /** Namespace of the stable UUIDs given to non-UUID migration source ids (UUID v5). */
    private static final UUID MIGRATION_NAMESPACE = UUID.fromString("6f1c2a53-52c5-4f5e-9d8a-4b6c0e1f7a10");

    private final DeviceRepository devices;
    private final DatabaseAdmission admission;
    private final AppSettingsService settings;
    private final IdentityTokens identityTokens;
    private final JsonMapper json;
    private final LifecycleEventRepository lifecycle;
    private final java.time.Clock clock;
    /** The dashboard overview's per-platform counts, per app (see {@link #countsByPlatform}). */
    private final com.github.benmanes.caffeine.cache.LoadingCache<UUID, List<DeviceCounts>> counts;

    DeviceService(DeviceRepository devices, DatabaseAdmission admission, AppSettingsService settings,
                  IdentityTokens identityTokens, JsonMapper json, LifecycleEventRepository lifecycle, java.time.Clock clock,
                  @org.springframework.beans.factory.annotation.Value("${push.dashboard.device-counts-refresh:30s}")
                  java.time.Duration countsRefresh) {
        this.counts = !countsRefresh.isPositive() ? null : com.github.benmanes.caffeine.cache.Caffeine.newBuilder()
                .refreshAfterWrite(countsRefresh)
                .expireAfterAccess(java.time.Duration.ofMinutes(15))
                .maximumSize(10_000)
                .build(devices::countsByPlatform);
        this.lifecycle = lifecycle;
        this.clock = clock;
        this.devices = devices;
        this.admission = admission;
        this.settings = settings;
        this.identityTokens = identityTokens;
        this.json = json;
    }

    /** The outcome of a registration: the device and whether it was created (201) or refreshed (200). */
    public record Registered(DeviceView device, boolean created) {
    }

    /** The VAPID key the app's web device with this endpoint recorded, if it exists and recorded one. */
    java.util.Optional<String> recordedServerKey(UUID appId, PushTokens.Checked token) {
        return devices.recordedServerKey(appId, token.identityHash());
    }

    Registered register(ApiPrincipal caller, Registration r, PushTokens.Checked token) {
        UUID appId = caller.appId();
        verifyIdentity(appId, r);
        return registerVerified(appId, r, token);
    }

    /**
     * Registers without asking for an identity token: for callers the app trusts with its users
     * already (an import of a previous provider's subscriptions with a server key).
     */
    Registered registerVerified(UUID appId, Registration r, PushTokens.Checked token) {
        try {
            var result = admission.call(() -> devices.register(appId, r, token, null, null));
            if (result.outcome() == DeviceRepository.Outcome.STAGED) {
                // claim: the staged record fills what the registration left out and names the device
                var staged = devices.staged(appId, result.stagedId()).orElse(null);
                Registration effective = staged == null ? r : withStagedDefaults(r, staged);
                UUID id = staged == null ? Uuid7.at(clock.instant()) : idFor(staged);
                var first = result;
                result = admission.call(() -> devices.register(appId, effective, token, first.stagedId(), id));
            }
            return new Registered(result.device(), result.outcome() == DeviceRepository.Outcome.CREATED);
        } catch (RuntimeException e) {
            // the limit is checked at commit, so it surfaces as a commit failure, not a statement error
            if (hasState(e, "PS001")) {
                throw new Conflict(
                        "The organisation's active-device limit is reached; disable devices or raise the limit");
            }
            if (hasState(e, "PS002")) {
                throw new IllegalStateException("Registration kept racing with concurrent registrations", e);
            }
            throw e;
        }
    }

    /** Refuses a registration that names a user without proving it, when the app requires proof. */
    private void verifyIdentity(UUID appId, Registration r) {
        if (r.externalUserId() == null) return;
        IdentityVerification iv = settings.identityVerification(appId);
        if (!iv.required()) return;
        if (r.identityToken() == null) {
            throw InvalidInput.of("identity_token", "is required: this app verifies the identity of external_user_id");
        }
        String problem = identityTokens.problem(iv, appId, r.identityToken(), r.externalUserId());
        if (problem != null) throw InvalidInput.of("identity_token", problem);
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

    private static boolean hasState(Throwable e, String sqlState) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && sqlState.equals(sql.getSQLState())) return true;
        }
        return false;
    }

    public DeviceView get(UUID appId, UUID deviceId) {
        return devices.find(appId, deviceId).orElseThrow(() -> new NotFound("Device"));
    }

    public Page<DeviceView> list(UUID appId, String platform, Boolean enabled, PageRequest page) {
        return Page.of(devices.list(appId, platform, enabled, page), page);
    }

    /**
     * The app's devices per platform: subscribed, disabled, invalid (the dashboard's overview). Counting
     * reads every device of the app (0.3-0.7 s at 1,000,000 devices, bench/dashboard.sh), so the
     * counts are kept per app and served from memory: read more than {@code push.dashboard.device-counts-refresh} (30 s) after
     * they were counted, they are served as they are once more while a recount runs in the background;
     * an app not viewed for 15 minutes is dropped and counted again, while its viewer waits, at its next
     * view. Each instance keeps its own; {@code 0} counts at every view. No write path pays for them
     * (a counter row kept by trigger would be one more row every registration and every set-based
     * invalidation updates). docs/dashboard.md, "Page speed".
     */
    public List<DeviceCounts> countsByPlatform(UUID appId) {
        return counts == null ? devices.countsByPlatform(appId) : counts.get(appId);
    }

    /** All devices of a user (for the user read). */
    public List<DeviceView> ofUser(UUID appId, UUID userId) {
        return devices.ofUser(appId, userId);
    }

    /**
     * Disables and detaches every device of a user that is being deleted, in the caller's
     * transaction; returns how many were enabled.
     */
    public int detachUser(UUID appId, UUID userId) {
        return devices.detachUser(appId, userId);
    }

    /**
     * Invalidates devices whose provider said their token is dead ({@code reason}: the provider's
     * reason code), set-based, with a {@code device.invalidated} lifecycle fact per device in the same
     * transaction. {@code registeredBefore} maps each device to the time its token is known dead from:
     * the provider's own invalidation time when it gives one (APNs), else the time of the send that was
     * refused. A device (re)registered at or after that time is left valid: the app registered its token
     * again after the provider gave up on it, so a late answer must not undo that registration (a new
     * token is a new device, so this concerns the same token registered again). Devices already
     * invalidated are left as they are. Every later fan-out and estimate leaves the invalidated ones out
     * (both select only non-invalidated devices). On the API pool; delivery invalidates through
     * {@link DeviceInvalidation}, on its own pool.
     *
     * @param at when the invalidation is recorded (the devices' {@code invalidated_at})
     * @return the devices invalidated now
     */
    @Transactional
    public List<UUID> invalidate(UUID appId, Map<UUID, java.time.Instant> registeredBefore, String reason,
                                 java.time.Instant at) {
        return DeviceInvalidation.invalidate(devices, lifecycle, appId, registeredBefore, reason, at);
    }

    @Transactional
    public DeviceView disable(UUID appId, UUID deviceId) {
        if (!devices.disable(appId, deviceId)) {
            throw NotFound.saying("Device not found or already disabled");
        }
        lifecycle.record(appId, LifecycleEventRepository.Kind.DEVICE_DISABLED, deviceId,
                Map.of("device_id", deviceId), clock.instant());
        return get(appId, deviceId);
    }
}
