package dev.pushservice.devices;

import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.platform.db.DeliveryDatabase;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link DeviceService#invalidate} for the delivery engine: the same statements, in a transaction on
 * the delivery pool ({@link DeliveryDatabase}), so a lane's recorder never waits for a connection of
 * the API pool (an API overload must not stall recording). Thread-safe.
 */
@Component
public class DeviceInvalidation {

    private final DeliveryDatabase db;
    private final DeviceRepository devices;
    private final LifecycleEventRepository lifecycle;

    DeviceInvalidation(DeliveryDatabase db, JsonMapper json, LifecycleEventRepository lifecycle) {
        this.db = db;
        this.devices = new DeviceRepository(db.jdbc(), json);
        this.lifecycle = lifecycle.on(db.jdbc());
    }

    /** As {@link DeviceService#invalidate}, in its own transaction on the delivery pool. */
    public List<UUID> invalidate(UUID appId, Map<UUID, Instant> registeredBefore, String reason, Instant at) {
        return db.transactions().execute(status -> invalidate(devices, lifecycle, appId, registeredBefore, reason, at));
    }

    /** Invalidates the devices and records a {@code device.invalidated} fact for each (one statement), in the caller's transaction. */
    static List<UUID> invalidate(DeviceRepository devices, LifecycleEventRepository lifecycle, UUID appId,
                                 Map<UUID, Instant> registeredBefore, String reason, Instant at) {
        List<UUID> invalidated = devices.invalidate(appId, registeredBefore, reason, at);
        // one statement for the facts of the whole batch, never one per device
        lifecycle.recordEach(appId, LifecycleEventRepository.Kind.DEVICE_INVALIDATED, invalidated,
                invalidated.stream().map(id -> Map.of("device_id", id, "reason", reason)).toList(), at);
        return invalidated;
    }
}
