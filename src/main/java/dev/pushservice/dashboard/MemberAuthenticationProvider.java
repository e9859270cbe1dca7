package dev.pushservice.dashboard;

import dev.pushservice.members.MemberService;
import dev.pushservice.members.SignIn;
import org.springframework.security.authentication.AuthenticationProvider;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.authentication.LockedException;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.Authentication;

/**
 * Spring Security's side of {@link MemberService#signIn}: the sign-in form's address and password
 * become a {@link DashboardMember}, or the exception the failure handler turns into a message.
 * Not a bean: only the dashboard's filter chain uses it, so nothing else can sign in with it.
 */
final class MemberAuthenticationProvider implements AuthenticationProvider {

    private final MemberService members;

    MemberAuthenticationProvider(MemberService members) {
        this.members = members;
    }

    @Override
    public Authentication authenticate(Authentication authentication) {
        String password = authentication.getCredentials() == null ? "" : authentication.getCredentials().toString();
        return switch (members.signIn(authentication.getName(), password)) {
            case SignIn.Success success -> {
                DashboardMember member = DashboardMember.of(success.member());
                yield UsernamePasswordAuthenticationToken.authenticated(member, null, member.authorities());
            }
            case SignIn.Locked locked -> throw new LockedException("Too many failed sign-ins");
            case SignIn.Refused refused -> throw new BadCredentialsException("Wrong address or password");
        };
    }

    @Override
    public boolean supports(Class<?> authentication) {
        return UsernamePasswordAuthenticationToken.class.isAssignableFrom(authentication);
    }
}
