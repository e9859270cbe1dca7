package dev.pushservice.dashboard;

import dev.pushservice.members.MemberLink;
import dev.pushservice.members.MemberService;
import dev.pushservice.platform.domain.Conflict;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Objects;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * Redeems a one-time link: a setup link (admin CLI) sets the member's password, an invite makes a
 * member. Open to visitors who are not signed in; the link's token is the credential.
 */
@Controller
class JoinController {

    private final MemberService members;

    JoinController(MemberService members) {
        this.members = members;
    }

    @GetMapping("/dashboard/join")
    String form(@RequestParam(name = "token", required = false) String token, Model model) {
        MemberLink link = members.pendingLink(token).orElseThrow(JoinController::spent);
        model.addAttribute("link", link);
        return "join";
    }

    @PostMapping("/dashboard/join")
    String join(@RequestParam(name = "token", required = false) String token,
                @RequestParam(name = "email", required = false) String email,
                @RequestParam(name = "password", required = false) String password,
                @RequestParam(name = "password_confirmation", required = false) String confirmation,
                Model model, HttpServletResponse response) {
        MemberLink link = members.pendingLink(token).orElseThrow(JoinController::spent);
        String problem = !Objects.equals(password, confirmation) ? "The two passwords differ" : null;
        if (problem == null) {
            try {
                members.redeem(token, email, password);
                return "redirect:" + DashboardSecurity.SIGN_IN + "?joined";
            } catch (InvalidInput e) {
                problem = e.violations().isEmpty() ? e.getMessage()
                        : e.violations().stream().map(v -> (v.field().equals("email") ? "E-mail " : "Password ") + v.message())
                        .reduce((a, b) -> a + "; " + b).orElseThrow();
            } catch (Conflict e) {
                problem = e.getMessage();
            }
        }
        response.setStatus(422);
        model.addAttribute("link", link);
        model.addAttribute("email", email);
        model.addAttribute("problem", problem);
        return "join";
    }

    private static NotFound spent() {
        return NotFound.saying("This link is not valid: it was used already, has expired or never existed");
    }
}
