package dev.pushservice.dashboard;

import dev.pushservice.members.MemberLink;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.platform.domain.InvalidInput;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.servlet.support.ServletUriComponentsBuilder;

/** The organisation's members; owners make invite links here, each shown once. */
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
    @PostMapping("/dashboard/members/invites")
    String invite(@AuthenticationPrincipal DashboardMember me, @RequestParam(name = "role", required = false) String role,
                  Model model) {
        MemberRole chosen;
        try {
            chosen = MemberRole.of(role);
        } catch (IllegalArgumentException e) {
            throw InvalidInput.of("role", e.getMessage());
        }
        MemberLink link = members.invite(me.memberId(), chosen);
        model.addAttribute("inviteLink", ServletUriComponentsBuilder.fromCurrentContextPath().build().toUriString() + link.path());
        model.addAttribute("invite", link);
        return members(me, model);
    }
}
