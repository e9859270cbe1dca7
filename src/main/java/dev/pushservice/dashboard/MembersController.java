package dev.pushservice.dashboard;

import dev.pushservice.members.MemberLink;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.platform.domain.InvalidInput;
import java.util.UUID;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.servlet.support.ServletUriComponentsBuilder;

/**
 * The organisation's members; owners make invite links here (each shown once), change roles and
 * remove members. Every member sees the list. The rules (owners only, as stored now; the last owner
 * stays; a removed member's sessions end) are {@link MemberService}'s.
 */
@Controller
class MembersController {

    private final MemberService members;

    MembersController(MemberService members) {
        this.members = members;
    }

    @GetMapping("/dashboard/members")
    String members(@AuthenticationPrincipal DashboardMember me, Model model) {
        model.addAttribute("me", me);
        model.addAttribute("members", members.members(me.orgId()));
        model.addAttribute("roles", MemberRole.values());
        return "members";
    }

    /**
     * Makes an invite link and shows it in this response only (a reload does not make or show it
     * again: the browser asks before re-posting, and a re-post makes a new link).
     */
    /** Gives a member of the organisation another role; back to the list. */
    @PostMapping("/dashboard/members/{memberId}/role")
    String changeRole(@AuthenticationPrincipal DashboardMember me, @PathVariable String memberId,
                      @RequestParam(name = "role", required = false) String role) {
        UUID target = Forms.id(memberId, "Member");
        MemberRole chosen = role(role);
        members.changeRole(me.memberId(), target, chosen);
        return "redirect:/dashboard/members?changed";
    }

    /** Removes a member of the organisation and ends their sessions; back to the list (or to sign-in, for oneself). */
    @PostMapping("/dashboard/members/{memberId}/remove")
    String remove(@AuthenticationPrincipal DashboardMember me, @PathVariable String memberId) {
        UUID target = Forms.id(memberId, "Member");
        members.remove(me.memberId(), target);
        return target.equals(me.memberId()) ? "redirect:" + DashboardSecurity.SIGN_IN + "?removed" : "redirect:/dashboard/members?removed";
    }


    private static MemberRole role(String role) {
        try {
            return MemberRole.of(role);
        } catch (IllegalArgumentException e) {
            throw InvalidInput.of("role", e.getMessage());
        }
    }

    @PostMapping("/dashboard/members/invites")
    String invite(@AuthenticationPrincipal DashboardMember me, @RequestParam(name = "role", required = false) String role,
                  Model model) {
        MemberRole chosen = role(role);
        MemberLink link = members.invite(me.memberId(), chosen);
        model.addAttribute("inviteLink", ServletUriComponentsBuilder.fromCurrentContextPath().build().toUriString() + link.path());
        model.addAttribute("invite", link);
        return members(me, model);
    }
}
