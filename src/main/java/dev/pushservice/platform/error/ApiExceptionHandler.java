package dev.pushservice.platform.error;

import dev.pushservice.platform.domain.Conflict;
import dev.pushservice.platform.domain.DomainException;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Malformed;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Unavailable;
import dev.pushservice.platform.requestid.RequestIds;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.tomcat.util.http.InvalidParameterException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotAcceptableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * The one place that turns exceptions into the spec's error shape. Controllers just throw. Every
 * answer here presets {@code Content-Type: application/json}, so Spring does not negotiate it against
 * {@code Accept}: an error is JSON whatever the client asked for (negotiating made a 404 or 406 with
 * {@code Accept: text/plain} an empty 406 with a stack trace in the log).
 */
@RestControllerAdvice
class ApiExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

    private final ObjectProvider<PathErrorPages> pages;

    ApiExceptionHandler(ObjectProvider<PathErrorPages> pages) {
        this.pages = pages;
    }

    /** Thrown only by the request-path filters and interceptors of {@code platform.web}. */
    @ExceptionHandler(ApiException.class)
    ResponseEntity<ErrorBody> api(ApiException e, HttpServletRequest request) {
        ResponseEntity.BodyBuilder builder = json(e.code());
        e.headers().forEach((name, value) -> builder.header(name, value));
        return builder.body(ErrorBody.of(e.code(), e.getMessage(), e.details(), RequestIds.current(request)));
    }

    /** Domain code says why in its own terms; this is where those terms become HTTP. */
    @ExceptionHandler(DomainException.class)
    ResponseEntity<ErrorBody> domain(DomainException e, HttpServletRequest request) {
        String id = RequestIds.current(request);
        return switch (e) {
            case Malformed malformed -> error(ErrorCode.MALFORMED_REQUEST, malformed.getMessage(), request);
            case InvalidInput invalid -> json(ErrorCode.VALIDATION_FAILED)
                    .body(ErrorBody.of(ErrorCode.VALIDATION_FAILED, invalid.getMessage(),
                            invalid.violations().stream().map(v -> new ErrorDetail(v.field(), v.message())).toList(), id));
            case NotFound notFound -> error(ErrorCode.NOT_FOUND, notFound.getMessage(), request);
            case Conflict conflict -> error(ErrorCode.CONFLICT, conflict.getMessage(), request);
            case Unavailable unavailable -> json(ErrorCode.SERVICE_UNAVAILABLE)
                    .header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, (unavailable.retryAfter().toMillis() + 999) / 1000)))
                    .body(ErrorBody.of(ErrorCode.SERVICE_UNAVAILABLE, unavailable.getMessage(), List.of(), id));
        };
    }

    @ExceptionHandler(HttpMessageNotReadableException.class)
    ResponseEntity<ErrorBody> unreadable(HttpMessageNotReadableException e, HttpServletRequest request) {
        ErrorDetail duplicate = DuplicateKeys.detail(e.getMostSpecificCause());
        if (duplicate != null) {
            return json(ErrorCode.MALFORMED_REQUEST).body(ErrorBody.of(ErrorCode.MALFORMED_REQUEST,
                    "Request body has a key twice in one object; JSON object keys must be unique",
                    List.of(duplicate), RequestIds.current(request)));
        }
        String message = e.getMessage() != null && e.getMessage().startsWith("Required request body is missing")
                ? "Request body is required"
                : "Request body is not valid JSON";
        return error(ErrorCode.MALFORMED_REQUEST, message, request);
    }

    /** Tomcat decodes the query string on first use; a malformed escape or bytes that are not UTF-8 end up here. */
    @ExceptionHandler(InvalidParameterException.class)
    ResponseEntity<ErrorBody> unreadableQuery(InvalidParameterException e, HttpServletRequest request) {
        return error(ErrorCode.MALFORMED_REQUEST,
                "The query string could not be decoded: every % must be followed by two hex digits, and the text must be UTF-8", request);
    }

    /**
     * A path nothing serves: the API's JSON 404, except under a part with its own pages
     * ({@link PathErrorPages}: an unknown {@code /dashboard} path is the dashboard's HTML 404 page).
     */
    @ExceptionHandler({NoHandlerFoundException.class, NoResourceFoundException.class})
    Object noRoute(Exception e, HttpServletRequest request) {
        String uri = request.getRequestURI();
        String path = uri.startsWith(request.getContextPath()) ? uri.substring(request.getContextPath().length()) : uri;
        for (PathErrorPages part : pages) {
            ModelAndView page = part.page(path, 404);
            if (page != null) return page;
        }
        return error(ErrorCode.NOT_FOUND, "No route for " + request.getMethod() + " " + request.getRequestURI(), request);
    }

    @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
    ResponseEntity<ErrorBody> method(HttpRequestMethodNotSupportedException e, HttpServletRequest request) {
        String allowed = e.getSupportedHttpMethods() == null ? "" : e.getSupportedHttpMethods().stream()
                .map(Object::toString).sorted().collect(Collectors.joining(", "));
        return json(ErrorCode.METHOD_NOT_ALLOWED)
                .header(HttpHeaders.ALLOW, allowed)
                .body(ErrorBody.of(ErrorCode.METHOD_NOT_ALLOWED,
                        "Method " + request.getMethod() + " is not allowed here; allowed: " + allowed,
                        List.of(), RequestIds.current(request)));
    }

    @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
    ResponseEntity<ErrorBody> mediaType(HttpMediaTypeNotSupportedException e, HttpServletRequest request) {
        return error(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                "Request bodies must be sent with Content-Type: application/json", request);
    }

    @ExceptionHandler(HttpMediaTypeNotAcceptableException.class)
    ResponseEntity<ErrorBody> notAcceptable(HttpMediaTypeNotAcceptableException e, HttpServletRequest request) {
        return error(ErrorCode.NOT_ACCEPTABLE, "This route answers with application/json", request);
    }

    @ExceptionHandler(MissingServletRequestParameterException.class)
    ResponseEntity<ErrorBody> missingParameter(MissingServletRequestParameterException e, HttpServletRequest request) {
        return validation(e.getParameterName(), "is required", request);
    }

    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    ResponseEntity<ErrorBody> typeMismatch(MethodArgumentTypeMismatchException e, HttpServletRequest request) {
        String expected = e.getRequiredType() == null ? "a valid value" : switch (e.getRequiredType().getSimpleName()) {
            case "UUID" -> "a UUID";
            case "Integer", "int", "Long", "long" -> "an integer";
            case "Boolean", "boolean" -> "true or false";
            default -> "a valid value";
        };
        return validation(e.getName(), "must be " + expected, request);
    }

    @ExceptionHandler(Exception.class)
    ResponseEntity<ErrorBody> unexpected(Exception e, HttpServletRequest request) {
        if (DatabaseUnreachable.causes(e)) {
            // a restart or outage of the database: the client retries; one line, no stack trace
            log.warn("Database unreachable on {} {}: {}", request.getMethod(), request.getRequestURI(), e.getClass().getSimpleName());
            return json(ErrorCode.SERVICE_UNAVAILABLE).header(HttpHeaders.RETRY_AFTER, DatabaseUnreachable.RETRY_AFTER_SECONDS)
                    .body(ErrorBody.of(ErrorCode.SERVICE_UNAVAILABLE, DatabaseUnreachable.MESSAGE, List.of(), RequestIds.current(request)));
        }
        log.error("Unhandled error on {} {}", request.getMethod(), request.getRequestURI(), e);
        return error(ErrorCode.INTERNAL_ERROR, "Internal error; quote the request id when reporting it", request);
    }

    private static ResponseEntity<ErrorBody> validation(String field, String message, HttpServletRequest request) {
        return json(ErrorCode.VALIDATION_FAILED)
                .body(ErrorBody.of(ErrorCode.VALIDATION_FAILED, "Request validation failed",
                        List.of(new ErrorDetail(field, message)), RequestIds.current(request)));
    }

    /** Every answer of this class starts here: its status, and JSON whatever the client's {@code Accept}. */
    private static ResponseEntity.BodyBuilder json(ErrorCode code) {
        return ResponseEntity.status(code.status()).contentType(MediaType.APPLICATION_JSON);
    }

    private static ResponseEntity<ErrorBody> error(ErrorCode code, String message, HttpServletRequest request) {
        return json(code)
                .body(ErrorBody.of(code, message, List.of(), RequestIds.current(request)));
    }
}
