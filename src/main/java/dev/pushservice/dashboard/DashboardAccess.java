package dev.pushservice.dashboard;

import dev.pushservice.apps.TenantService;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.apps.Tenants;
import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.json.Uuids;
import java.util.NoSuchElementException;
import java.util.UUID;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.stereotype.Component;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The two checks every dashboard page makes before it reads or changes anything: the app belongs to
 * the member's organisation (otherwise "not found", never "forbidden", as the API does), and the
 * member's role allows the action (docs/dashboard.md "Roles").
 *
 * <p>Reading pages trust the role in the session (a snapshot taken at sign-in); every change checks
 * the role stored now ({@link #require}), so a member whose role was lowered or who was removed
 * cannot change anything with a session opened before.
 */
@Component
class DashboardAccess {

    private final TenantService tenants;
    private final MemberService members;

    DashboardAccess(TenantService tenants, MemberService members) {
        this.tenants = tenants;
        this.members = members;
    }

    /** The app with this id when it exists and belongs to the member's organisation. */
    Tenants.App app(DashboardMember me, String rawId) {
        UUID id = Uuids.parse(rawId);
        if (id == null) throw new NotFound("App");
        try {
            Tenants.App app = tenants.app(id);
            if (!app.orgId().equals(me.orgId())) throw new NotFound("App");
            return app;
        } catch (NoSuchElementException e) {
            throw new NotFound("App");
        }
    }

    /**
     * The member as stored now, when their role includes {@code needed}; otherwise the request is
     * refused (403 page). A member removed since sign-in is refused too. Changes the request makes
     * afterwards are audited with this member as the actor ({@link AuditLog#MEMBER_ATTRIBUTE}).
     */
    Member require(DashboardMember me, MemberRole needed) {
        Member current = members.member(me.memberId()).filter(m -> m.orgId().equals(me.orgId()))
                .orElseThrow(() -> new AccessDeniedException("member removed"));
        if (!current.role().includes(needed)) throw new AccessDeniedException("role " + current.role() + " may not");
        // the changes this request makes are audited with this member as the actor
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes a) {
            a.getRequest().setAttribute(AuditLog.MEMBER_ATTRIBUTE, current.id());
        }
        return current;
    }
}
