package dev.pushservice.delivery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.rules.Platform;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The breaker's state machine on its own: what opens a circuit, what a probe does, what a 429 pauses. */
class ProviderBreakersTests {

    private final Instant t0 = Instant.parse("2026-11-26T12:00:00Z");
    private final ProviderBreakers breakers = new ProviderBreakers(
            new BreakerProperties(3, Duration.ofSeconds(1), Duration.ofSeconds(8), Duration.ofSeconds(60), 2), (MeterRegistry) null);
    private final ProviderBreakers.Circuit ios = new ProviderBreakers.Circuit(UUID.randomUUID(), Platform.IOS, null);
    private final ProviderBreakers.Circuit android = new ProviderBreakers.Circuit(UUID.randomUUID(), Platform.ANDROID, null);

    private Instant fail(ProviderBreakers.Circuit c, boolean probe, ReasonCode code, Instant at) {
        return breakers.answered(c, probe, ProviderBreakers.classify(new DeliveryResult.Failed(code, null)), code.code(), null, at);
    }

    @Test
    void consecutiveOutageFailuresOpenTheCircuitAndOneProbeAtATimeTestsIt() {
        assertThat(fail(ios, false, ReasonCode.CONNECTION_FAILED, t0)).isNull();
        assertThat(fail(ios, false, ReasonCode.TIMEOUT, t0)).isNull();
        assertThat(fail(ios, false, ReasonCode.PROVIDER_UNAVAILABLE, t0)).isEqualTo(t0.plusSeconds(1));

        assertThat(breakers.admit(ios, t0.plusMillis(500))).isInstanceOf(ProviderBreakers.Wait.class);
        assertThat(breakers.admit(ios, t0.plusSeconds(1))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(breakers.admit(ios, t0.plusSeconds(1))).isInstanceOf(ProviderBreakers.Wait.class);
        assertThat(breakers.notClosed()).singleElement().satisfies(c -> assertThat(c.state()).isEqualTo("probing"));

        // a failed probe doubles the wait; an answer of the provider closes the circuit
        assertThat(fail(ios, true, ReasonCode.CONNECTION_FAILED, t0.plusSeconds(2))).isEqualTo(t0.plusSeconds(4));
        assertThat(breakers.admit(ios, t0.plusSeconds(4))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(breakers.answered(ios, true, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(5))).isNull();
        assertThat(breakers.admit(ios, t0.plusSeconds(5))).isEqualTo(new ProviderBreakers.Send(false));
        assertThat(breakers.notClosed()).isEmpty();
    }

    @Test
    void anAnswerOfTheProviderBetweenFailuresKeepsTheCircuitClosed() {
        fail(ios, false, ReasonCode.CONNECTION_FAILED, t0);
        fail(ios, false, ReasonCode.CONNECTION_FAILED, t0);
        breakers.answered(ios, false, ProviderBreakers.classify(new DeliveryResult.Rejected(ReasonCode.TOKEN_UNREGISTERED, null)),
                null, null, t0);
        assertThat(fail(ios, false, ReasonCode.CONNECTION_FAILED, t0)).isNull();
        assertThat(breakers.admit(ios, t0)).isEqualTo(new ProviderBreakers.Send(false));
    }

    @Test
    void aRateLimitWithoutRetryAfterPausesTheCircuitAtLeastSixtySecondsOnceForItsBurst() {
        assertThat(fail(android, false, ReasonCode.RATE_LIMITED, t0)).isEqualTo(t0.plusSeconds(60));
        // the other 429s of the same burst count once: 60 s from the last of them, not doubled
        assertThat(fail(android, false, ReasonCode.RATE_LIMITED, t0.plusMillis(10))).isEqualTo(t0.plusMillis(60_010));
        assertThat(breakers.admit(android, t0.plusSeconds(59))).isInstanceOf(ProviderBreakers.Wait.class);
        // the probe after the pause is limited again: twice as long
        assertThat(breakers.admit(android, t0.plusMillis(60_010))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(fail(android, true, ReasonCode.RATE_LIMITED, t0.plusSeconds(61))).isEqualTo(t0.plusSeconds(61 + 120));
    }

    @Test
    void anAcceptedAnswerDuringARateLimitPauseDoesNotLiftIt() {
        assertThat(fail(android, false, ReasonCode.RATE_LIMITED, t0)).isEqualTo(t0.plusSeconds(60));
        // requests sent before the 429 (the in-flight window) are accepted after it: the pause stands
        assertThat(breakers.answered(android, false, ProviderBreakers.Answer.UP, null, null, t0.plusMillis(5)))
                .isEqualTo(t0.plusSeconds(60));
        assertThat(breakers.admit(android, t0.plusSeconds(1))).isInstanceOf(ProviderBreakers.Wait.class);
        // a 429 with a short Retry-After does not shorten it either
        breakers.answered(android, false, ProviderBreakers.Answer.RATE_LIMITED, ReasonCode.RATE_LIMITED.code(),
                Duration.ofSeconds(5), t0.plusSeconds(2));
        assertThat(breakers.answered(android, false, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(10)))
                .isEqualTo(t0.plusSeconds(60));
        // after the pause the probe's acceptance closes the circuit
        assertThat(breakers.admit(android, t0.plusSeconds(60))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(breakers.answered(android, true, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(61))).isNull();
        assertThat(breakers.admit(android, t0.plusSeconds(61))).isEqualTo(new ProviderBreakers.Send(false));
    }

    @Test
    void oneDeviceRateLimitedByApnsPausesNothing() {
        for (int i = 0; i < 10; i++) {
            assertThat(fail(ios, false, ReasonCode.DEVICE_RATE_LIMITED, t0)).isNull();
        }
        assertThat(breakers.admit(ios, t0)).isEqualTo(new ProviderBreakers.Send(false));
        assertThat(breakers.notClosed()).isEmpty();
    }

    /**
     * What the claimers read: an app whose whole-app circuit is open is paused for its platform only,
     * due for a probe once its wait is over and until the probe is let out; a Web Push origin's circuit
     * pauses no app; closing the circuit tells the listeners.
     */
    @Test
    void anOpenWholeAppCircuitPausesItsAppOnItsPlatformUntilItClosesAndOneProbeIsClaimedForIt() {
        java.util.concurrent.atomic.AtomicInteger closed = new java.util.concurrent.atomic.AtomicInteger();
        breakers.onClosed(closed::incrementAndGet);
        ProviderBreakers.Circuit origin = new ProviderBreakers.Circuit(UUID.randomUUID(), Platform.WEB, "https://push.example");
        for (int i = 0; i < 3; i++) {
            fail(ios, false, ReasonCode.CONNECTION_FAILED, t0);
            fail(origin, false, ReasonCode.CONNECTION_FAILED, t0);
        }
        assertThat(breakers.paused(Platform.IOS, t0.plusMillis(500)))
                .isEqualTo(new ProviderBreakers.Paused(java.util.Set.of(ios.appId()), java.util.Set.of()));
        assertThat(breakers.paused(Platform.ANDROID, t0.plusMillis(500))).isEqualTo(ProviderBreakers.Paused.NONE);
        assertThat(breakers.paused(Platform.WEB, t0.plusMillis(500))).isEqualTo(ProviderBreakers.Paused.NONE);

        assertThat(breakers.paused(Platform.IOS, t0.plusSeconds(1)))
                .isEqualTo(new ProviderBreakers.Paused(java.util.Set.of(), java.util.Set.of(ios.appId())));
        assertThat(breakers.admit(ios, t0.plusSeconds(1))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(breakers.paused(Platform.IOS, t0.plusSeconds(1)).waiting()).containsExactly(ios.appId());

        assertThat(closed).hasValue(0);
        breakers.answered(ios, true, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(2));
        assertThat(closed).hasValue(1);
        assertThat(breakers.paused(Platform.IOS, t0.plusSeconds(2))).isEqualTo(ProviderBreakers.Paused.NONE);
        // an answer of a provider whose circuit is closed tells no one
        breakers.answered(ios, false, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(3));
        assertThat(closed).hasValue(1);
    }

    /**
     * A 429's pause lets transactional sends through at the priority rate (2 a second here, a second's
     * worth at once), while the other sends wait for the pause; a 429 to one of them neither extends
     * nor doubles the pause (before: the pause ran 60 s from that 429, and the probe after it was not the
     * first 429 after the burst).
     */
    @Test
    void aRateLimitPauseLetsPrioritySendsThroughAtTheirRateAndTheir429sDoNotExtendIt() {
        assertThat(fail(android, false, ReasonCode.RATE_LIMITED, t0)).isEqualTo(t0.plusSeconds(60));
        ProviderBreakers.Send priority = new ProviderBreakers.Send(false, true);

        assertThat(breakers.admit(android, t0.plusSeconds(1))).isEqualTo(new ProviderBreakers.Wait(t0.plusSeconds(60), "rate_limited"));
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isEqualTo(priority);
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isEqualTo(priority);
        // the third waits for the next free send (half a second at 2 a second), not for the pause
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isInstanceOfSatisfying(ProviderBreakers.Wait.class,
                w -> assertThat(w.until()).isAfter(t0.plusSeconds(1)).isBeforeOrEqualTo(t0.plusMillis(1_500)));
        assertThat(breakers.admit(android, t0.plusMillis(1_500), true)).isEqualTo(priority);
        assertThat(breakers.admit(android, t0.plusMillis(1_500), true)).isInstanceOf(ProviderBreakers.Wait.class);

        // its 429: the pause stays as it was, and the recipient is not held until its end
        assertThat(breakers.answered(android, false, true, ProviderBreakers.Answer.RATE_LIMITED, ReasonCode.RATE_LIMITED.code(),
                null, t0.plusSeconds(2))).isNull();
        assertThat(breakers.retryAt(android)).isEqualTo(t0.plusSeconds(60));
        // nor does its acceptance lift the pause
        breakers.answered(android, false, true, ProviderBreakers.Answer.UP, null, null, t0.plusSeconds(3));
        assertThat(breakers.admit(android, t0.plusSeconds(3))).isInstanceOf(ProviderBreakers.Wait.class);
        // the probe after the pause, limited again, doubles from the bulk's one burst: 120 s
        assertThat(breakers.admit(android, t0.plusSeconds(60))).isEqualTo(new ProviderBreakers.Send(true));
        assertThat(fail(android, true, ReasonCode.RATE_LIMITED, t0.plusSeconds(61))).isEqualTo(t0.plusSeconds(61 + 120));
    }

    /** A circuit open for an outage lets no priority send through: a dead provider gets only probes. */
    @Test
    void anOutageLetsNoPrioritySendThrough() {
        for (int i = 0; i < 3; i++) fail(android, false, ReasonCode.CONNECTION_FAILED, t0);
        assertThat(breakers.admit(android, t0.plusMillis(500), true)).isEqualTo(new ProviderBreakers.Wait(t0.plusSeconds(1), "connection_failed"));
        assertThat(breakers.paused(Platform.ANDROID, t0.plusMillis(500), true))
                .isEqualTo(new ProviderBreakers.Paused(java.util.Set.of(android.appId()), java.util.Set.of()));
        assertThat(breakers.reserve(android, 10, t0.plusMillis(500))).isZero();

        // paused by a 429, then failing (5xx) as many times as open a circuit: only probes from then on
        ProviderBreakers.Circuit other = new ProviderBreakers.Circuit(UUID.randomUUID(), Platform.ANDROID, null);
        fail(other, false, ReasonCode.RATE_LIMITED, t0);
        assertThat(breakers.admit(other, t0.plusSeconds(1), true)).isEqualTo(new ProviderBreakers.Send(false, true));
        for (int i = 0; i < 3; i++) {
            breakers.answered(other, false, true, ProviderBreakers.Answer.OUTAGE, ReasonCode.PROVIDER_UNAVAILABLE.code(), null,
                    t0.plusSeconds(2));
        }
        assertThat(breakers.admit(other, t0.plusSeconds(5), true)).isEqualTo(new ProviderBreakers.Wait(t0.plusSeconds(60), "rate_limited"));
    }

    /**
     * What the transactional lane's claimer reads: an app paused by a 429 is due for priority sends while
     * one is free, and a claim reserves them (let out by admit without taking another), giving back what
     * it did not use.
     */
    @Test
    void aTransactionalClaimReservesThePrioritySendsItsRecipientsUse() {
        fail(android, false, ReasonCode.RATE_LIMITED, t0);
        assertThat(breakers.paused(Platform.ANDROID, t0.plusSeconds(1)))
                .isEqualTo(new ProviderBreakers.Paused(java.util.Set.of(android.appId()), java.util.Set.of()));
        assertThat(breakers.paused(Platform.ANDROID, t0.plusSeconds(1), true))
                .isEqualTo(new ProviderBreakers.Paused(java.util.Set.of(), java.util.Set.of(), java.util.Set.of(android.appId())));

        assertThat(breakers.reserve(android, 10, t0.plusSeconds(1))).isEqualTo(2);
        assertThat(breakers.paused(Platform.ANDROID, t0.plusSeconds(1), true).priorityDue()).isEmpty();
        breakers.unreserve(android, 1); // one of the two was not claimed
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isEqualTo(new ProviderBreakers.Send(false, true));
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isEqualTo(new ProviderBreakers.Send(false, true));
        assertThat(breakers.admit(android, t0.plusSeconds(1), true)).isInstanceOf(ProviderBreakers.Wait.class);
        // a second later, a second's worth again, no more
        assertThat(breakers.reserve(android, 10, t0.plusSeconds(5))).isEqualTo(2);
    }
}
