package dev.pushservice.members;

import java.time.Instant;

/**
 * The answer to a sign-in attempt. A refusal never says whether the address belongs to a member:
 * an unknown address, a wrong password and a member without a password yet are all {@link Refused}.
 */
public sealed interface SignIn {

    record Success(Member member) implements SignIn {
    }

    record Refused() implements SignIn {
    }

    /** Too many failures: refused without looking at the password until {@code until}. */
    record Locked(Instant until) implements SignIn {
    }
}
