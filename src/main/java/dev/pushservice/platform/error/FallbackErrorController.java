package dev.pushservice.platform.error;

import dev.pushservice.platform.requestid.RequestIds;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Errors raised outside MVC (the servlet container refusing a request, a filter failing) land
 * on {@code /error}; they are answered in the same shape as every other error.
 */
@RestController
class FallbackErrorController implements ErrorController {

    @RequestMapping("/error")
    ResponseEntity<ErrorBody> error(HttpServletRequest request) {
        Object status = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        int code = status instanceof Integer i ? i : 500;
        ErrorCode error = ErrorCode.forStatus(code);
        String message = error == ErrorCode.INTERNAL_ERROR
                ? "Internal error; quote the request id when reporting it"
                : "Request could not be processed (" + code + ")";
        return ResponseEntity.status(error.status())
                .body(ErrorBody.of(error, message, List.of(), RequestIds.current(request)));
    }
}
