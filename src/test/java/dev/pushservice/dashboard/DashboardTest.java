package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.members.MemberLink;
import dev.pushservice.members.MemberRole;
import dev.pushservice.members.MemberService;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** Base of dashboard page tests: members made as the CLI and links make them, browsers signed in over real HTTP. */
abstract class DashboardTest extends ApiTest {

    static final String PASSWORD = "correct horse battery";

    @Autowired
    MemberService members;

    /** Web Push to the tests' loopback receivers, so pages can show notifications really accepted by a push service. */
    @DynamicPropertySource
    static void localPushServices(DynamicPropertyRegistry registry) {
        registry.add("push.webpush.allow-insecure-endpoints", () -> "true");
    }

    DashboardClient browser() {
        return new DashboardClient("http://127.0.0.1:" + port);
    }

    /** A member of {@code org} with {@link #PASSWORD}; returns their address. */
    String member(UUID org, MemberRole role) {
        String email = TestTokens.unique("m").toLowerCase() + "@example.com";
        MemberLink link = members.addMember(org, email, role);
        members.redeem(link.token(), null, PASSWORD);
        return email;
    }

    DashboardClient signedIn(String email) {
        DashboardClient browser = browser();
        HttpResponse<String> r = browser.signIn(email, PASSWORD);
        assertThat(r.statusCode()).isEqualTo(302);
        assertThat(DashboardClient.location(r)).isEqualTo("/dashboard");
        return browser;
    }

    /** A new member of {@code app}'s organisation with {@code role}, signed in. */
    DashboardClient signedIn(TestApp app, MemberRole role) {
        return signedIn(member(app.orgId(), role));
    }
}
