package dev.pushservice.dashboard;

import dev.pushservice.platform.error.PathErrorPages;
import java.util.HashMap;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.stereotype.Component;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.View;
import org.springframework.web.servlet.ViewResolver;
import org.springframework.web.servlet.support.RequestContextUtils;

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

    /**
     * The problem page as HTML whatever the path looks like. Resolved by name, the view's content
     * type would be negotiated ({@code *}{@code /*} for most clients) and Thymeleaf would then take
     * it from the path's extension: {@code text/css} for an unknown {@code …/x.css}.
     */
    private static final View PROBLEM = (model, request, response) -> {
        request.setAttribute(View.SELECTED_CONTENT_TYPE, HTML);
        ViewResolver views = RequestContextUtils.findWebApplicationContext(request)
                .getBean("thymeleafViewResolver", ViewResolver.class);
        View page = views.resolveViewName("problem", RequestContextUtils.getLocale(request));
        if (page == null) throw new IllegalStateException("no template 'problem'");
        page.render(model, request, response);
    };

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
        ModelAndView page = new ModelAndView(PROBLEM, model);
        page.setStatus(HttpStatus.valueOf(status));
        return page;
    }
}
