package dev.pushservice.members;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The dashboard's sign-in throttle (README "Dashboard").
 *
 * @param maxFailures failed sign-ins for one address, within {@code lockout} of each other, after
 *                    which that address is locked
 * @param lockout how long a locked address is refused, whatever password is sent; also the window in
 *                which failures are counted
 * @param failureDelay how long each failed attempt waits before it is answered, so that guessing is
 *                     slow even before the lock-out (request threads are virtual: a wait costs no
 *                     platform thread)
 */
@ConfigurationProperties(prefix = "push.dashboard.sign-in")
public record SignInPolicy(int maxFailures, Duration lockout, Duration failureDelay) {

    public SignInPolicy {
        if (maxFailures <= 0) maxFailures = 5;
        if (lockout == null || lockout.isZero() || lockout.isNegative()) lockout = Duration.ofMinutes(15);
        if (failureDelay == null || failureDelay.isNegative()) failureDelay = Duration.ofSeconds(1);
    }
}
