package dev.pushservice.dashboard;

import dev.pushservice.platform.error.PathErrorPages;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.servlet.ModelAndView;

/**
 * A dashboard request that failed outside its controller (an exception while its template renders,
 * after the controller returned, which {@link DashboardErrors} never sees) gets the dashboard's
 * problem page, not the API's JSON error: a message, never a stack trace (the container logs it).
 * Only server errors: what the dashboard refuses is answered by its handlers and security.
 */
@Component
class DashboardErrorPage implements PathErrorPages {

    @Override
    public ModelAndView page(String path, int status) {
        if (status < 500 || !(path.equals("/dashboard") || path.startsWith("/dashboard/"))) return null;
        return new ModelAndView("problem", Map.of("title", "Something went wrong",
                "message", "The page could not be shown; the error was logged."), HttpStatus.valueOf(status));
    }
}
