package dev.pushservice.notifications;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.LongPredicate;

/**
 * Send slots of one app's throttle, taken by one fan-out page inside its transaction, with the
 * app's throttle row locked ({@link SendThrottleRepository#lock}), so pages of every notification
 * and instance take slots one after another and never the same one.
 *
 * <p>A minute has {@code perMinute} evenly spaced positions; a slot is a position not taken yet.
 * Within a minute positions are taken in order (a minute remembers only how many are taken), so
 * no two slots are closer than 60 s / {@code perMinute} and any 60 s hold at most {@code perMinute}
 * of them. A recipient due mid-minute gets the first free position at or after its due time; the
 * positions it skips stay unused. Minutes are read from the database a day at a time as the walk
 * reaches them; {@link #flush} writes the minutes changed, in one statement. Not thread-safe.
 *
 * <p>Linear in recipients plus minutes walked: minutes only fill up, so a full minute remembers a later
 * minute to try next ({@link #skip}, shortened along every walk), and a recipient due at a full minute
 * jumps over the run of full minutes behind it instead of walking it again.
 */
final class SendSlots {

    static final long MINUTE_MICROS = 60_000_000L;
    private static final long DAY_MICROS = 1440 * MINUTE_MICROS;

    private final SendThrottleRepository repository;
    private final UUID appId;
    private final int perMinute;
    private final Map<Long, Integer> used = new HashMap<>();
    private final Set<Long> loadedDays = new HashSet<>();
    private final Map<Long, Integer> changed = new TreeMap<>();
    /** full minute → a later minute, every full minute before it full too (a minute never empties here) */
    private final Map<Long, Long> skip = new HashMap<>();

    SendSlots(SendThrottleRepository repository, UUID appId, int perMinute) {
        if (perMinute < 1) throw new IllegalArgumentException("perMinute must be at least 1");
        this.repository = repository;
        this.appId = appId;
        this.perMinute = perMinute;
    }

    /**
     * Takes the first free slot at or after {@code dueMicros} (epoch microseconds) and returns it,
     * or returns -1 and takes nothing when that slot fails {@code sendable} (it would come after the
     * recipient's TTL: later ones would too).
     */
    long take(long dueMicros, LongPredicate sendable) {
        long minute = Math.floorDiv(dueMicros, MINUTE_MICROS) * MINUTE_MICROS;
        long position = ceilDiv((dueMicros - minute) * perMinute, MINUTE_MICROS);
        long p = Math.max(used(minute), position);
        if (p >= perMinute) {
            minute = firstWithRoom(minute + MINUTE_MICROS);
            p = used(minute);
        }
        long slot = minute + p * MINUTE_MICROS / perMinute;
        if (!sendable.test(slot)) return -1;
        used.put(minute, (int) p + 1);
        changed.put(minute, (int) p + 1);
        return slot;
    }

    /**
     * The first minute at or after {@code from} with a free position: follows the skips of full
     * minutes and points every full minute walked at the answer, so the next walk from any of them
     * is one step.
     */
    private long firstWithRoom(long from) {
        long minute = from;
        ArrayList<Long> walked = null;
        while (used(minute) >= perMinute) {
            if (walked == null) walked = new ArrayList<>();
            walked.add(minute);
            Long next = skip.get(minute);
            minute = next != null ? next : minute + MINUTE_MICROS;
        }
        if (walked != null) for (Long full : walked) skip.put(full, minute);
        return minute;
    }

    /** Writes the minutes whose slots were taken. */
    void flush() {
        repository.save(appId, changed);
        changed.clear();
    }

    private int used(long minute) {
        long day = Math.floorDiv(minute, DAY_MICROS);
        if (loadedDays.add(day)) {
            Instant from = Instant.ofEpochSecond(day * (DAY_MICROS / 1_000_000L));
            repository.minutes(appId, from, from.plusSeconds(DAY_MICROS / 1_000_000L)).forEach(used::putIfAbsent);
        }
        return used.getOrDefault(minute, 0);
    }

    private static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }
}
