package dev.pushservice.platform.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.platform.domain.Unavailable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class DatabaseAdmissionTests {

    @Test
    void callersBeyondThePermitsWaitAndAreAdmittedInArrivalOrder() throws Exception {
        DatabaseAdmission admission = new DatabaseAdmission(1, Duration.ofSeconds(10));
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = holdThePermit(admission, release);

        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int n = i;
            waiters.add(Thread.ofVirtual().start(() -> admission.call(() -> order.add(n))));
            // each waiter is queued before the next one arrives
            waitUntilQueued(waiters.get(i));
        }
        assertThat(order).isEmpty();
        release.countDown();
        holder.join(5000);
        for (Thread t : waiters) t.join(5000);
        assertThat(order).containsExactly(0, 1, 2, 3, 4);
    }

    @Test
    void aCallerThatWaitsLongerThanTheTimeoutGetsA503WithRetryAfter() throws Exception {
        DatabaseAdmission admission = new DatabaseAdmission(1, Duration.ofMillis(50));
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = holdThePermit(admission, release);
        assertThatThrownBy(() -> admission.call(() -> "never"))
                .isInstanceOfSatisfying(Unavailable.class, e -> assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(1)));
        release.countDown();
        holder.join(5000);
        // the permit came back: the next caller is admitted at once
        assertThat(admission.call(() -> "ok")).isEqualTo("ok");
    }

    /** Takes the only permit on another thread and keeps it until {@code release} opens. */
    private static Thread holdThePermit(DatabaseAdmission admission, CountDownLatch release) throws InterruptedException {
        CountDownLatch holding = new CountDownLatch(1);
        Thread holder = Thread.ofVirtual().start(() -> admission.call(() -> {
            holding.countDown();
            await(release);
            return null;
        }));
        assertThat(holding.await(5, TimeUnit.SECONDS)).isTrue();
        return holder;
    }

    private static void waitUntilQueued(Thread t) {
        Awaitility.await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
                .until(t::getState, state -> state == Thread.State.TIMED_WAITING);
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
