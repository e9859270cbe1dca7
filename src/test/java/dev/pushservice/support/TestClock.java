package dev.pushservice.support;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * The application's clock in API tests: system time plus an offset a test can move forward
 * ({@link #advance}), e.g. to make a scheduled notification due; db-scheduler reads it too. A test
 * that moves it must {@link #reset} it when done (tests share one application).
 */
public final class TestClock extends Clock {

    private volatile Duration offset = Duration.ZERO;

    @Override
    public Instant instant() {
        return Instant.now().plus(offset);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return Clock.offset(Clock.system(zone), offset);
    }

    public void advance(Duration by) {
        if (by.isNegative()) throw new IllegalArgumentException("the test clock only moves forward");
        offset = offset.plus(by);
    }

    public void reset() {
        offset = Duration.ZERO;
    }

    @TestConfiguration(proxyBeanMethods = false)
    public static class Config {

        @Bean
        @Primary
        TestClock testClock() {
            return new TestClock();
        }
    }
}
