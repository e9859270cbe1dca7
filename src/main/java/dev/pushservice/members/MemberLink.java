package dev.pushservice.members;

import java.time.Instant;
import java.util.UUID;

/**
 * A one-time link just made: {@code token} is shown to its maker once and never stored (only its
 * SHA-256 is); the dashboard's {@code /dashboard/join?token=…} page redeems it.
 *
 * @param id     the link's id (audit entries name it; the token is never stored or logged)
 * @param member the member a setup link is for; null for an invite (the member is made on redemption)
 */
public record MemberLink(UUID id, Kind kind, UUID orgId, MemberRole role, Member member, String token, Instant expiresAt) {

    public enum Kind {
        /** An existing member (made by the admin CLI) chooses their password. */
        SETUP,
        /** A new member of the organisation signs up with their address and a password. */
        INVITE
    }

    /** The path that redeems it, relative to the service's base URL. */
    public String path() {
        return "/dashboard/join?token=" + token;
    }
}
