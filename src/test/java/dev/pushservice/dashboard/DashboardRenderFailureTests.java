package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.members.MemberRole;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;

/**
 * An exception thrown while a dashboard page renders (in its template, after the controller returned,
 * where {@link DashboardErrors} cannot catch it) reaches the servlet container's {@code /error}; the
 * member gets the dashboard's HTML problem page with a 500, never the API's JSON error or a stack trace.
 * The failing page is this test's own controller (its template is the real problem page, given a
 * value that throws when the template prints it); the API's errors stay JSON.
 */
@Import(DashboardRenderFailureTests.FailingPage.class)
class DashboardRenderFailureTests extends DashboardTest {

    static final String SECRET = "detail-that-must-not-leak";

    /** Returns a view whose rendering throws. Scanned only through {@code @Import} (nested in a test class). */
    @Controller
    static class FailingPage {

        @GetMapping("/dashboard/render-failure-for-tests")
        String page(Model model) {
            model.addAttribute("title", new Object() {
                @Override
                public String toString() {
                    throw new IllegalStateException(SECRET);
                }
            });
            model.addAttribute("message", "never shown");
            return "problem";
        }
    }

    @Test
    void anExceptionWhileAPageRendersGivesTheDashboardsHtmlProblemPageWithoutAStackTrace() {
        TestApp app = newApp();
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);

        HttpResponse<String> page = browser.get("/dashboard/render-failure-for-tests");

        assertThat(page.statusCode()).isEqualTo(500);
        assertThat(page.headers().firstValue("Content-Type").orElse("")).startsWith("text/html");
        assertThat(page.body()).startsWith("<!DOCTYPE html>").contains("Something went wrong", "the error was logged")
                .doesNotContain(SECRET, "IllegalStateException", "TemplateProcessingException", "\tat ", "\"code\"", "never shown");
        assertThat(page.headers().firstValue("Content-Security-Policy").orElse(""))
                .as("the dashboard's strict policy").contains("script-src 'self'");
        // the API's own errors keep their JSON shape
        HttpResponse<String> api = browser.get("/v1/no-such-route");
        assertThat(api.body()).doesNotContain("<!DOCTYPE html>");
    }
}
