package dev.pushservice.dashboard;

import dev.pushservice.platform.error.PathErrorPages;
import java.util.HashMap;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.stereotype.Component;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.View;

/**
 * Dashboard requests that no controller answered get the dashboard's problem page, not the API's
 * JSON error: a path nothing serves (404; with the signed-in member's header when there is one, an
 * unknown asset for a visitor not signed in), and a request that failed outside its controller (an
 * exception while its template renders, after the controller returned, which {@link DashboardErrors}
 * never sees): a message, never a stack trace (the container logs it). Other refusals are answered
 * by the dashboard's handlers and security.
 */
@Component
class DashboardErrorPage implements PathErrorPages {

    private static final MediaType HTML = new MediaType(MediaType.TEXT_HTML, java.nio.charset.StandardCharsets.UTF_8);

    @Override
    public ModelAndView page(String path, int status) {
        if (!(path.equals("/dashboard") || path.startsWith("/dashboard/"))) return null;
        Map<String, Object> model = new HashMap<>();
        if (status == 404) {
            model.put("title", "Not found");
            model.put("message", "There is no page at this address.");
            Authentication signedIn = SecurityContextHolder.getContext().getAuthentication();
            if (signedIn != null && signedIn.getPrincipal() instanceof DashboardMember me) model.put("me", me);
        } else if (status >= 500) {
            model.put("title", "Something went wrong");
            model.put("message", "The page could not be shown; the error was logged.");
        } else {
            return null;
        }
        // HTML whatever the path looks like: Thymeleaf would otherwise take text/css from ".../x.css"
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes a) {
            a.getRequest().setAttribute(View.SELECTED_CONTENT_TYPE, HTML);
        }
        return new ModelAndView("problem", model, HttpStatus.valueOf(status));
    }
}
