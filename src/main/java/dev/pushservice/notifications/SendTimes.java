package dev.pushservice.notifications;

import dev.pushservice.apps.DeliveryTiming;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.HashMap;
import java.util.Map;

/**
 * When a recipient in a given time zone becomes due, and until when it may be sent, for one
 * notification: pure, computed once per distinct zone (zones are few; recipients are many) and
 * handed to the set-based insert. Not thread-safe (a per-run cache); make one per fan-out run.
 *
 * <ul>
 *   <li><b>Intended time</b>: the notification's send time, or with {@code local_delivery_time} the
 *       first occurrence of that wall-clock time in the zone at or after the local-time origin (its
 *       {@code scheduled_at}, else its send time). A time in a DST gap (02:30 on a spring-forward day)
 *       means the first valid instant after the gap (03:00 local; {@code java.time} alone would give
 *       03:30); a time in an overlap means its earlier instant, so it is sent once.</li>
 *   <li><b>Expiry</b>: intended time + TTL. The TTL counts from the recipient's own intended time,
 *       so a local-time recipient due tomorrow keeps all of its TTL, while holding it (quiet hours)
 *       or spreading it (throttling) uses its TTL up.</li>
 *   <li><b>Due time</b>: the intended time, or for a non-transactional push whose intended time falls
 *       in the recipient's quiet hours the end of that window (the next occurrence of its end time,
 *       with the same DST rule). Throttling then gives each recipient a slot at or after it.</li>
 *   <li>A recipient held until or past its expiry is {@link Plan#expired()}: it ends {@code expired}
 *       at once, never sent.</li>
 * </ul>
 */
final class SendTimes {

    /**
     * One zone's answer.
     *
     * @param intended the time the notification meant for this zone (before quiet hours and throttling)
     * @param due the time it may be sent first (quiet hours applied)
     * @param expiresAt intended + TTL, or null without a TTL
     */
    record Plan(Instant intended, Instant due, Instant expiresAt) {

        /** Held until or past its expiry: never sent. A TTL of 0 not held is still tried once. */
        boolean expired() {
            return expiresAt != null && due.isAfter(intended) && !due.isBefore(expiresAt);
        }

        /** Whether a send at {@code slot} is still within the TTL (a TTL of 0: only at the intended time). */
        boolean sendable(Instant slot) {
            return expiresAt == null || slot.isBefore(expiresAt) || slot.equals(intended);
        }
    }

    private final Instant sendTime;
    private final Instant localOrigin;
    private final LocalTime localTime;
    private final Integer ttlSeconds;
    private final DeliveryTiming.QuietHours quietHours;
    private final Map<ZoneId, Plan> plans = new HashMap<>();

    /**
     * @param sendTime when the notification became due (its queued time)
     * @param localOrigin from when a local delivery time is looked for (scheduled_at, else sendTime)
     * @param localTime the notification's local delivery time, or null
     * @param quietHours the app's quiet hours when they apply to this notification, else null
     */
    SendTimes(Instant sendTime, Instant localOrigin, LocalTime localTime, Integer ttlSeconds,
              DeliveryTiming.QuietHours quietHours) {
        this.sendTime = sendTime;
        this.localOrigin = localOrigin;
        this.localTime = localTime;
        this.ttlSeconds = ttlSeconds;
        this.quietHours = quietHours;
    }

    /** Whether recipients' times depend on their zone at all. */
    boolean zoned() {
        return localTime != null || quietHours != null;
    }

    Plan plan(ZoneId zone) {
        return plans.computeIfAbsent(zone, this::compute);
    }

    private Plan compute(ZoneId zone) {
        Instant intended = localTime == null ? sendTime : next(localOrigin, localTime, zone);
        Instant due = intended;
        if (quietHours != null && quietHours.contains(intended.atZone(zone).toLocalTime())) {
            due = next(intended, quietHours.end(), zone);
        }
        return new Plan(intended, due, ttlSeconds == null ? null : intended.plusSeconds(ttlSeconds));
    }

    /** The first instant at or after {@code from} at which the wall clock in {@code zone} shows {@code time}. */
    static Instant next(Instant from, LocalTime time, ZoneId zone) {
        LocalDate day = from.atZone(zone).toLocalDate();
        Instant candidate = resolve(day, time, zone);
        return candidate.isBefore(from) ? resolve(day.plusDays(1), time, zone) : candidate;
    }

    /**
     * {@code day} at {@code time} in {@code zone}: in a gap the first valid instant after it (the
     * transition), in an overlap the earlier instant.
     */
    static Instant resolve(LocalDate day, LocalTime time, ZoneId zone) {
        LocalDateTime local = LocalDateTime.of(day, time);
        ZoneRules rules = zone.getRules();
        if (rules.getValidOffsets(local).isEmpty()) {
            ZoneOffsetTransition gap = rules.getTransition(local);
            return gap.getInstant();
        }
        return local.atZone(zone).toInstant(); // ZonedDateTime.of keeps the earlier offset in an overlap
    }
}
