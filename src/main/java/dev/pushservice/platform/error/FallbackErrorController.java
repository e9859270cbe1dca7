package dev.pushservice.platform.error;

import dev.pushservice.platform.requestid.RequestIds;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.ModelAndView;

/**
 * Errors raised outside MVC (the servlet container refusing a request, a filter failing) land
 * on {@code /error}; they are answered in the same shape as every other error, except on the paths
 * of a part with its own error page ({@link PathErrorPages}: the dashboard's HTML page, also for an
 * exception thrown while a page renders, after its controller returned).
 */
@RestController
class FallbackErrorController implements ErrorController {

    private final ObjectProvider<PathErrorPages> pages;

    FallbackErrorController(ObjectProvider<PathErrorPages> pages) {
        this.pages = pages;
    }

    @RequestMapping("/error")
    Object error(HttpServletRequest request) {
        Object status = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        int code = status instanceof Integer i ? i : 500;
        if (request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI) instanceof String uri) {
            String path = uri.startsWith(request.getContextPath()) ? uri.substring(request.getContextPath().length()) : uri;
            for (PathErrorPages part : pages) {
                ModelAndView page = part.page(path, code);
                if (page != null) return page;
            }
        }
        ErrorCode error = ErrorCode.forStatus(code);
        String message = error == ErrorCode.INTERNAL_ERROR
                ? "Internal error; quote the request id when reporting it"
                : "Request could not be processed (" + code + ")";
        return ResponseEntity.status(error.status())
                .body(ErrorBody.of(error, message, List.of(), RequestIds.current(request)));
    }
}
