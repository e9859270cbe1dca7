package dev.pushservice.delivery;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The per-origin bounds of a lane's sends on their own: each origin its own open and waiting limits. */
class OriginGatesTests {

    @Test
    void aFullOriginQueuesThenRefusesWhileAnotherOriginStillSends() {
        OriginGates<String> gates = new OriginGates<>(2, 1);
        assertThat(gates.admit("https://slow", "s1")).isEqualTo(OriginGates.Admission.SEND);
        assertThat(gates.admit("https://slow", "s2")).isEqualTo(OriginGates.Admission.SEND);
        assertThat(gates.admit("https://slow", "s3")).isEqualTo(OriginGates.Admission.WAIT);
        assertThat(gates.admit("https://slow", "s4")).isEqualTo(OriginGates.Admission.FULL);
        assertThat(gates.admit("https://fast", "f1")).isEqualTo(OriginGates.Admission.SEND);

        assertThat(gates.answered("https://slow")).as("the waiting send takes the freed slot").isEqualTo("s3");
        assertThat(gates.admit("https://slow", "s5")).isEqualTo(OriginGates.Admission.WAIT);
        assertThat(gates.drain()).containsExactly("s5");
        assertThat(gates.answered("https://slow")).isNull();
        assertThat(gates.answered("https://slow")).isNull();
        assertThat(gates.admit("https://slow", "s6")).as("a slot freed by an answer").isEqualTo(OriginGates.Admission.SEND);
    }

    @Test
    void anOriginGetsHalfTheBudgetOpenAndAQuarterWaiting() {
        OriginGates<Integer> gates = OriginGates.forBudget(100);
        int open = 0;
        int waiting = 0;
        for (int i = 0; i < 100; i++) {
            switch (gates.admit("https://push.example", i)) {
                case SEND -> open++;
                case WAIT -> waiting++;
                case FULL -> {
                }
            }
        }
        assertThat(open).isEqualTo(50);
        assertThat(waiting).isEqualTo(25);
    }
}
