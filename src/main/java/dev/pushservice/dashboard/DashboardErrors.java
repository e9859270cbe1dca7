package dev.pushservice.dashboard;

import dev.pushservice.platform.domain.DomainException;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Errors of dashboard pages as a page with a message, never a stack trace (the API's JSON error
 * shape stays the API's). Another organisation's resource is "not found", like one that does not exist.
 */
@ControllerAdvice(basePackageClasses = DashboardErrors.class)
@Order(Ordered.HIGHEST_PRECEDENCE)
class DashboardErrors {

    private static final Logger log = LoggerFactory.getLogger(DashboardErrors.class);

    @ExceptionHandler(NotFound.class)
    String notFound(NotFound e, Model model, HttpServletResponse response) {
        return problem(404, "Not found", e.getMessage(), model, response);
    }

    @ExceptionHandler(AccessDeniedException.class)
    String forbidden(Model model, HttpServletResponse response) {
        return problem(403, "Not allowed", "Your role does not allow this.", model, response);
    }

    @ExceptionHandler(InvalidInput.class)
    String invalid(InvalidInput e, Model model, HttpServletResponse response) {
        String message = e.violations().isEmpty() ? e.getMessage()
                : e.violations().stream().map(v -> v.field() + ": " + v.message()).reduce((a, b) -> a + "; " + b).orElseThrow();
        return problem(422, "Not accepted", message, model, response);
    }

    /** A multipart body Spring refused (larger than the migration upload takes, or malformed): nothing was changed. */
    @ExceptionHandler(org.springframework.web.multipart.MultipartException.class)
    String multipart(org.springframework.web.multipart.MultipartException e, Model model, HttpServletResponse response) {
        boolean tooLarge = e instanceof org.springframework.web.multipart.MaxUploadSizeExceededException;
        return problem(tooLarge ? 413 : 400, tooLarge ? "Too large" : "Not accepted",
                tooLarge ? "The file is larger than a migration upload takes (docs/dashboard.md \"Migration upload\"); nothing was changed."
                        : "The upload could not be read as a form with a file; nothing was changed.", model, response);
    }

    @ExceptionHandler(DomainException.class)
    String refused(DomainException e, Model model, HttpServletResponse response) {
        return problem(409, "Not possible", e.getMessage(), model, response);
    }

    @ExceptionHandler(Exception.class)
    String failed(Exception e, Model model, HttpServletResponse response) {
        log.error("Dashboard page failed", e);
        return problem(500, "Something went wrong", "The page could not be shown; the error was logged.", model, response);
    }

    private static String problem(int status, String title, String message, Model model, HttpServletResponse response) {
        response.setStatus(status);
        model.addAttribute("title", title);
        model.addAttribute("message", message);
        return "problem";
    }
}
