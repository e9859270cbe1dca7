package dev.pushservice.members;

import java.time.Instant;
import java.util.UUID;

/**
 * A one-time link just made: {@code token} is shown to its maker once and never stored (only its
 * SHA-256 is); the dashboard's {@code /dashboard/join?token=…} page redeems it.
 *
 * @param member the member a setup link is for; null for an invite (the member is made on redemption)
 */
public record MemberLink(Kind kind, UUID orgId, MemberRole role, Member member, String token, Instant expiresAt) {

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
