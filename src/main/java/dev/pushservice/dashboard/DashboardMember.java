package dev.pushservice.dashboard;

import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import java.io.Serial;
import java.io.Serializable;
import java.security.Principal;
import java.util.List;
import java.util.UUID;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.authority.SimpleGrantedAuthority;

/**
 * The signed-in member as their session holds it (serialized into the session's row): a snapshot
 * taken at sign-in. Rules that must see a change at once (who may invite) read the member again.
 * {@link #getName()} is the address, which Spring Session indexes as the principal name.
 */
public record DashboardMember(UUID memberId, UUID orgId, String email, MemberRole role) implements Principal, Serializable {

    @Serial
    private static final long serialVersionUID = 1L;

    static DashboardMember of(Member member) {
        return new DashboardMember(member.id(), member.orgId(), member.email(), member.role());
    }

    @Override
    public String getName() {
        return email;
    }

    List<GrantedAuthority> authorities() {
        return List.of(new SimpleGrantedAuthority("ROLE_" + role.name()));
    }

    public boolean isOwner() {
        return role == MemberRole.OWNER;
    }

    /** An owner or an admin (as at sign-in): who is shown the organisation's audit log. */
    public boolean isAdmin() {
        return role.includes(MemberRole.ADMIN);
    }
}
