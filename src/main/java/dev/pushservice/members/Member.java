package dev.pushservice.members;

import java.time.Instant;
import java.util.UUID;

/**
 * A member as shown and as signed in: never their password hash.
 *
 * @param passwordSet false until the member has used their setup link (they cannot sign in before)
 */
public record Member(UUID id, UUID orgId, String email, MemberRole role, boolean passwordSet, Instant createdAt) {
}
