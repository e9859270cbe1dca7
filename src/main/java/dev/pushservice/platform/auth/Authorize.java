package dev.pushservice.platform.auth;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Required on every {@code /v1} handler: the scope the key needs, and whether a public client key
 * may call it at all (only device registration, device disable and event submission allow it).
 * A handler without it is refused, so a forgotten annotation fails closed.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
public @interface Authorize {
    Scope value();

    boolean publicKeyAllowed() default false;
}
