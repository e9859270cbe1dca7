package dev.pushservice.platform.auth;

import java.util.EnumSet;
import java.util.Set;

/**
 * Server keys ({@code ps_live_}) may hold any scope; public client keys ({@code ps_public_}) ship
 * inside apps and are fixed to {@code devices:write} and {@code events:write}, whatever is asked.
 */
public enum KeyKind {
    SERVER("ps_live_"),
    PUBLIC("ps_public_");

    private final String prefix;

    KeyKind(String prefix) {
        this.prefix = prefix;
    }

    public String prefix() {
        return prefix;
    }

    public String value() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The scopes a key of this kind actually gets when {@code requested} are asked for. */
    public Set<Scope> grantedScopes(Set<Scope> requested) {
        if (this == PUBLIC) return EnumSet.of(Scope.DEVICES_WRITE, Scope.EVENTS_WRITE);
        return requested.isEmpty() ? EnumSet.allOf(Scope.class) : EnumSet.copyOf(requested);
    }
}
