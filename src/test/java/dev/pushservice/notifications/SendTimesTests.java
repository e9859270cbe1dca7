package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.apps.DeliveryTiming.QuietHours;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Send times per zone, across DST changes, and throttle slots, without the database. */
class SendTimesTests {

    private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    private static final ZoneId SYDNEY = ZoneId.of("Australia/Sydney");

    @Test
    void aLocalTimeInASpringForwardGapMeansTheFirstInstantAfterIt() {
        // 2027-03-14: New York skips 02:00-03:00; java.time alone would say 03:30 EDT (07:30Z)
        Instant sent = Instant.parse("2027-03-13T19:00:00Z");
        assertThat(SendTimes.next(sent, LocalTime.of(2, 30), NEW_YORK)).isEqualTo(Instant.parse("2027-03-14T07:00:00Z"));
        // 2027-10-03: Sydney skips 02:00-03:00 AEST
        assertThat(SendTimes.next(Instant.parse("2027-10-02T04:00:00Z"), LocalTime.of(2, 30), SYDNEY))
                .isEqualTo(Instant.parse("2027-10-02T16:00:00Z"));
    }

    @Test
    void aLocalTimeInAFallBackOverlapMeansItsEarlierInstantOnly() {
        // 2027-11-07: New York shows 01:00-02:00 twice; 01:30 EDT is 05:30Z, 01:30 EST 06:30Z
        Instant sent = Instant.parse("2027-11-06T18:00:00Z");
        assertThat(SendTimes.next(sent, LocalTime.of(1, 30), NEW_YORK)).isEqualTo(Instant.parse("2027-11-07T05:30:00Z"));
        // after the first 01:30 has passed, the next one is the next day's, never the repeated hour's
        assertThat(SendTimes.next(Instant.parse("2027-11-07T05:31:00Z"), LocalTime.of(1, 30), NEW_YORK))
                .isEqualTo(Instant.parse("2027-11-08T06:30:00Z"));
        // 2027-04-04: Sydney shows 02:00-03:00 twice; 02:30 AEDT is 15:30Z the day before
        assertThat(SendTimes.next(Instant.parse("2027-04-03T04:00:00Z"), LocalTime.of(2, 30), SYDNEY))
                .isEqualTo(Instant.parse("2027-04-03T15:30:00Z"));
    }

    @Test
    void theTimeItselfCountsAsItsNextOccurrence() {
        Instant nine = Instant.parse("2026-12-01T09:00:00Z");
        assertThat(SendTimes.next(nine, LocalTime.of(9, 0), ZoneId.of("UTC"))).isEqualTo(nine);
        assertThat(SendTimes.next(nine.plusSeconds(1), LocalTime.of(9, 0), ZoneId.of("UTC"))).isEqualTo(nine.plusSeconds(86_400));
    }

    @Test
    void quietHoursAcrossMidnightHoldUntilTheirEndAndATtlThatRunsOutFirstExpires() {
        QuietHours night = new QuietHours(LocalTime.of(22, 0), LocalTime.of(7, 0));
        assertThat(night.contains(LocalTime.of(23, 59))).isTrue();
        assertThat(night.contains(LocalTime.of(0, 0))).isTrue();
        assertThat(night.contains(LocalTime.of(6, 59))).isTrue();
        assertThat(night.contains(LocalTime.of(7, 0))).isFalse();
        assertThat(night.contains(LocalTime.of(21, 59))).isFalse();
        QuietHours lunch = new QuietHours(LocalTime.of(12, 0), LocalTime.of(13, 0));
        assertThat(lunch.contains(LocalTime.of(12, 30))).isTrue();
        assertThat(lunch.contains(LocalTime.of(13, 0))).isFalse();

        Instant sent = Instant.parse("2026-12-01T23:30:00Z"); // 18:30 in New York, 10:30 next day in Sydney
        SendTimes times = new SendTimes(sent, sent, null, 3600, night);
        assertThat(times.plan(NEW_YORK).due()).isEqualTo(sent);
        assertThat(times.plan(ZoneId.of("UTC")).due()).isEqualTo(Instant.parse("2026-12-02T07:00:00Z"));
        assertThat(times.plan(ZoneId.of("UTC")).expired()).as("held 7.5 h with a 1 h TTL").isTrue();
        assertThat(times.plan(NEW_YORK).expired()).isFalse();

        SendTimes noTtl = new SendTimes(sent, sent, null, null, night);
        assertThat(noTtl.plan(ZoneId.of("UTC")).expired()).isFalse();
        SendTimes nowOrNever = new SendTimes(sent, sent, null, 0, night);
        assertThat(nowOrNever.plan(NEW_YORK).expired()).as("ttl 0, not held: tried once").isFalse();
        assertThat(nowOrNever.plan(ZoneId.of("UTC")).expired()).as("ttl 0, held").isTrue();
    }

    @Test
    void throttleSlotsAreEvenlySpacedSharedAndNeverPastTheTtl() {
        FakeThrottle store = new FakeThrottle();
        UUID app = UUID.randomUUID();
        long minute = 60_000_000L;
        long t0 = Instant.parse("2026-12-01T10:00:00Z").getEpochSecond() * 1_000_000L;
        SendSlots first = new SendSlots(store, app, 4); // a slot every 15 s
        List<Long> slots = new ArrayList<>();
        for (int i = 0; i < 6; i++) slots.add(first.take(t0 + 1, t -> true));
        first.flush();
        assertThat(slots).containsExactly(t0 + 15_000_000, t0 + 30_000_000, t0 + 45_000_000, t0 + minute,
                t0 + minute + 15_000_000, t0 + minute + 30_000_000);
        // another page (another notification) continues after them, and stops at a TTL
        SendSlots second = new SendSlots(store, app, 4);
        assertThat(second.take(t0, t -> true)).isEqualTo(t0 + minute + 45_000_000);
        assertThat(second.take(t0, t -> t < t0 + 2 * minute)).isEqualTo(-1);
        assertThat(second.take(t0, t -> true)).as("a refused slot is not taken").isEqualTo(t0 + 2 * minute);
        // a recipient due later takes the first free slot at or after its time
        assertThat(second.take(t0 + 10 * minute + 20_000_000, t -> true)).isEqualTo(t0 + 10 * minute + 30_000_000);
    }

    /**
     * Many recipients over minutes another page already filled in part: every slot is the one the
     * plain walk (each recipient walking minute by minute from its due time) would give, whatever
     * order the due times come in.
     */
    @Test
    void manyRecipientsGetTheSlotsOfTheMinuteByMinuteWalk() {
        long minute = 60_000_000L;
        long t0 = Instant.parse("2026-12-01T10:00:00Z").getEpochSecond() * 1_000_000L;
        int perMinute = 7;
        java.util.Random random = new java.util.Random(29);
        Map<Long, Integer> before = new HashMap<>();
        for (int m = 0; m < 4_000; m += 1 + random.nextInt(3)) before.put(t0 + m * minute, random.nextInt(perMinute + 1));
        FakeThrottle store = new FakeThrottle();
        store.minutes.putAll(before);
        SendSlots slots = new SendSlots(store, UUID.randomUUID(), perMinute);
        Map<Long, Integer> walked = new HashMap<>(before);
        for (int i = 0; i < 30_000; i++) {
            // mostly due at once (a campaign), some later, a few in a TTL that runs out
            long due = i % 5 == 0 ? t0 + random.nextLong(600 * minute) : t0 + random.nextInt(1_000);
            long ttlEnd = i % 97 == 0 ? due + 30 * minute : Long.MAX_VALUE;
            long expected = walk(walked, perMinute, due, ttlEnd);
            assertThat(slots.take(due, t -> t < ttlEnd)).as("recipient %d", i).isEqualTo(expected);
        }
        slots.flush();
        Map<Long, Integer> stored = new HashMap<>(store.minutes);
        stored.values().forEach(n -> assertThat(n).isBetween(0, perMinute));
        walked.forEach((m, n) -> assertThat(stored.getOrDefault(m, 0)).as("minute %d", m).isEqualTo(n));
    }

    /** The plain walk: minute by minute from the due time to the first free position (-1: past the TTL, nothing taken). */
    private static long walk(Map<Long, Integer> used, int perMinute, long due, long ttlEnd) {
        long minuteLength = 60_000_000L;
        long minute = Math.floorDiv(due, minuteLength) * minuteLength;
        long position = -Math.floorDiv(-(due - minute) * perMinute, minuteLength);
        while (true) {
            long p = Math.max(used.getOrDefault(minute, 0), position);
            if (p < perMinute) {
                long slot = minute + p * minuteLength / perMinute;
                if (slot >= ttlEnd) return -1;
                used.put(minute, (int) p + 1);
                return slot;
            }
            minute += minuteLength;
            position = 0;
        }
    }

    /** The throttle's minutes in memory. */
    private static final class FakeThrottle extends SendThrottleRepository {
        final Map<Long, Integer> minutes = new HashMap<>();

        FakeThrottle() {
            super(null);
        }

        @Override
        Map<Long, Integer> minutes(UUID appId, Instant from, Instant to) {
            Map<Long, Integer> out = new HashMap<>();
            long f = from.getEpochSecond() * 1_000_000L;
            long t = to.getEpochSecond() * 1_000_000L;
            minutes.forEach((m, n) -> {
                if (m >= f && m < t) out.put(m, n);
            });
            return out;
        }

        @Override
        void save(UUID appId, Map<Long, Integer> used) {
            minutes.putAll(used);
        }
    }
}
