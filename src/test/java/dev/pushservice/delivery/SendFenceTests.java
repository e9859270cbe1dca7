package dev.pushservice.delivery;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** The cancel's wait for sends past their check ({@link SendFence}): waits for them, and only for them. */
class SendFenceTests {

    @Test
    void nothingInProgressIsNoWait() {
        SendFence fence = new SendFence();
        fence.enter().run();
        assertThat(fence.awaitEarlier(Duration.ofMillis(1))).isTrue();
    }

    @Test
    void aSendThatEnteredBeforeIsWaitedForUntilItExits() throws Exception {
        SendFence fence = new SendFence();
        SendFence.Pass send = fence.enter(); // past its check, not yet written
        assertThat(fence.awaitEarlier(Duration.ofMillis(50))).as("still in progress").isFalse();

        CompletableFuture<Boolean> waited = CompletableFuture.supplyAsync(() -> fence.awaitEarlier(Duration.ofSeconds(30)));
        Thread.sleep(50);
        assertThat(waited).as("waits while it is in progress").isNotDone();
        send.run();
        send.run(); // once only: a second run lets go of nothing more
        assertThat(waited.get(30, TimeUnit.SECONDS)).isTrue();

        SendFence.Pass next = fence.enter();
        assertThat(fence.awaitEarlier(Duration.ofMillis(50))).as("the second run let go of no other send's hold").isFalse();
        next.run();
        assertThat(fence.awaitEarlier(Duration.ofMillis(50))).isTrue();
    }

    /** Sends that overlap without end (one always in progress) never hold a cancel: each turn drains its own slot. */
    @Test
    void aStreamOfNewSendsDoesNotHoldTheWaitUp() throws Exception {
        SendFence fence = new SendFence();
        AtomicBoolean stop = new AtomicBoolean();
        Thread stream = Thread.ofPlatform().start(() -> {
            SendFence.Pass previous = fence.enter();
            while (!stop.get()) {
                SendFence.Pass next = fence.enter();
                previous.run();
                previous = next;
            }
            previous.run();
        });
        try {
            for (int i = 0; i < 100; i++) {
                assertThat(fence.awaitEarlier(Duration.ofSeconds(30))).as("wait %d", i).isTrue();
            }
        } finally {
            stop.set(true);
            stream.join();
        }
    }
}
