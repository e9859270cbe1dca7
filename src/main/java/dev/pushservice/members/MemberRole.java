package dev.pushservice.members;

import java.util.Locale;

/**
 * What a member may do in the dashboard (docs/dashboard.md "Roles"). Each role includes the ones
 * after it: an owner may do everything an admin may, an admin everything a member may.
 */
public enum MemberRole {
    /** Everything, and: invites members, uploads migrations (issue 27 part 3). */
    OWNER,
    /** Configures apps: keys, settings and provider credentials, templates, segments, journeys, webhooks. */
    ADMIN,
    /** Reads every page of the organisation's apps; composes, sends and cancels notifications. */
    MEMBER;

    /** The stored and displayed name: {@code owner}, {@code admin}, {@code member}. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The role named {@code value} ({@code owner}, {@code admin}, {@code member}); IllegalArgumentException otherwise. */
    public static MemberRole of(String value) {
        for (MemberRole role : values()) {
            if (role.value().equals(value)) return role;
        }
        throw new IllegalArgumentException("'" + value + "' is not a role; use owner, admin or member");
    }

    /** True when this role includes {@code other}'s rights. */
    public boolean includes(MemberRole other) {
        return ordinal() <= other.ordinal();
    }
}
