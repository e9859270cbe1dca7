package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.platform.domain.InvalidInput;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * An app's audit log, newest first, {@value #PAGE} entries a page, optionally of one action. Pages
 * are keyset pages ({@code before} names the last entry shown: its time and id), so a deep page costs
 * what the first does. Who acted: the member's address for dashboard changes, the API key's id and
 * kind, or the CLI.
 *
 * <p>Also the organisation's own log (membership changes), for owners and admins only (their role
 * as stored now): a plain member is refused (403), and each organisation sees only its own entries.
 */
@Controller
class AuditPages {

    static final int PAGE = 50;
    private static final Pattern CURSOR = Pattern.compile("(-?[0-9]{1,12})\\.([0-9]{1,9})-([0-9]{1,19})");
    private static final Pattern ACTION = Pattern.compile("[a-z_.]{1,64}");

    private final DashboardAccess access;
    private final AuditLog audit;
    private final MemberService members;

    AuditPages(DashboardAccess access, AuditLog audit, MemberService members) {
        this.access = access;
        this.audit = audit;
        this.members = members;
    }

    /** An entry as the page shows it: who in words. */
    record Row(AuditLog.Entry entry, String who) {
    }

    @GetMapping("/dashboard/apps/{appId}/audit")
    String audit(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                 @RequestParam(required = false) String action, @RequestParam(required = false) String before, Model model) {
        Tenants.App app = access.app(me, appId);
        String filter = action == null || action.isBlank() ? null : action.strip();
        if (filter != null && !ACTION.matcher(filter).matches()) {
            throw InvalidInput.of("action", "must be an action such as template.update");
        }
        AuditLog.Cursor cursor = cursor(before);
        List<AuditLog.Entry> entries = audit.newest(app.id(), filter, cursor, PAGE + 1);
        boolean more = entries.size() > PAGE;
        if (more) entries = entries.subList(0, PAGE);
        Map<UUID, String> emails = members.members(me.orgId()).stream().collect(Collectors.toMap(Member::id, Member::email));
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("action", filter);
        model.addAttribute("rows", entries.stream().map(e -> new Row(e, who(e, emails))).toList());
        model.addAttribute("next", more ? token(entries.getLast().occurredAt(), entries.getLast().id()) : null);
        model.addAttribute("first", cursor == null);
        return "audit";
    }

    /** An organisation entry as the page shows it: who acted and what the change was, in words. */
    record OrgRow(AuditLog.OrgEntry entry, String who, String target, String change) {
    }

    @GetMapping("/dashboard/members/audit")
    String organisation(@AuthenticationPrincipal DashboardMember me, @RequestParam(required = false) String before, Model model) {
        access.require(me, MemberRole.ADMIN);
        AuditLog.Cursor cursor = cursor(before);
        List<AuditLog.OrgEntry> entries = audit.newestOfOrganisation(me.orgId(), cursor, PAGE + 1);
        boolean more = entries.size() > PAGE;
        if (more) entries = entries.subList(0, PAGE);
        Map<UUID, String> emails = members.members(me.orgId()).stream().collect(Collectors.toMap(Member::id, Member::email));
        model.addAttribute("me", me);
        model.addAttribute("rows", entries.stream().map(e -> new OrgRow(e, who(e, emails), target(e, emails), change(e))).toList());
        model.addAttribute("next", more ? token(entries.getLast().occurredAt(), entries.getLast().id()) : null);
        model.addAttribute("first", cursor == null);
        return "org-audit";
    }

    private static String who(AuditLog.OrgEntry e, Map<UUID, String> emails) {
        return switch (e.actor()) {
            case "member" -> emails.getOrDefault(e.memberId(), "a former member (" + e.memberId().toString().substring(0, 8) + "…)");
            case "cli" -> "admin CLI";
            default -> e.actor();
        };
    }

    private static String target(AuditLog.OrgEntry e, Map<UUID, String> emails) {
        if (e.targetType().equals("invite")) return "invite link " + e.targetId().substring(0, Math.min(8, e.targetId().length())) + "…";
        String email = e.details().get("email");
        if (email == null) {
            UUID id = dev.pushservice.platform.json.Uuids.parse(e.targetId());
            email = id == null ? null : emails.get(id);
        }
        return email != null ? email : "member " + e.targetId();
    }

    private static String change(AuditLog.OrgEntry e) {
        Map<String, String> d = e.details();
        return switch (e.action()) {
            case "member.role_change" -> "role " + d.get("role_from") + " → " + d.get("role_to");
            case "member.invite" -> "as " + d.get("role");
            case "member.add", "member.join", "member.remove" -> "role " + d.get("role");
            case "member.activate" -> "password chosen";
            default -> String.join(", ", e.changedFields());
        };
    }

    private static String who(AuditLog.Entry e, Map<UUID, String> emails) {
        return switch (e.actor()) {
            case "member" -> emails.getOrDefault(e.memberId(), "a former member");
            case "api_key" -> e.keyKind() + " key " + (e.keyId() == null ? "" : e.keyId().toString().substring(0, 8) + "…");
            case "cli" -> "admin CLI";
            default -> e.actor();
        };
    }

    private static String token(Instant at, long id) {
        return at.getEpochSecond() + "." + at.getNano() + "-" + id;
    }

    private static AuditLog.Cursor cursor(String before) {
        if (before == null || before.isBlank()) return null;
        Matcher m = CURSOR.matcher(before);
        if (!m.matches()) throw InvalidInput.of("before", "is not a page of this list; start from the first page");
        try {
            return new AuditLog.Cursor(Instant.ofEpochSecond(Long.parseLong(m.group(1)), Long.parseLong(m.group(2))),
                    Long.parseLong(m.group(3)));
        } catch (RuntimeException e) {
            throw InvalidInput.of("before", "is not a page of this list; start from the first page");
        }
    }
}
