package dev.pushservice.platform.auth;

import java.util.Set;
import java.util.UUID;

/**
 * Who is calling: the key and the app (and organisation) it belongs to. Every {@code /v1}
 * query is scoped by {@link #appId()}. Controllers receive it as a method argument.
 */
public record ApiPrincipal(UUID keyId, UUID appId, UUID orgId, KeyKind kind, Set<Scope> scopes) {

    /** The request attribute holding the authenticated caller of a {@code /v1} request. */
    public static final String REQUEST_ATTRIBUTE = ApiPrincipal.class.getName();

    public boolean has(Scope scope) {
        return scopes.contains(scope);
    }
}
