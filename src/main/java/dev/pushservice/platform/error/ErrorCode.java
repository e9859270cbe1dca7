package dev.pushservice.platform.error;

import org.springframework.http.HttpStatus;

/** Every error code the API answers with, and its status (DESIGN.md section 4). */
public enum ErrorCode {
    MALFORMED_REQUEST(HttpStatus.BAD_REQUEST),
    UNAUTHORIZED(HttpStatus.UNAUTHORIZED),
    FORBIDDEN(HttpStatus.FORBIDDEN),
    NOT_FOUND(HttpStatus.NOT_FOUND),
    METHOD_NOT_ALLOWED(HttpStatus.METHOD_NOT_ALLOWED),
    NOT_ACCEPTABLE(HttpStatus.NOT_ACCEPTABLE),
    CONFLICT(HttpStatus.CONFLICT),
    PAYLOAD_TOO_LARGE(HttpStatus.CONTENT_TOO_LARGE),
    UNSUPPORTED_MEDIA_TYPE(HttpStatus.UNSUPPORTED_MEDIA_TYPE),
    VALIDATION_FAILED(HttpStatus.UNPROCESSABLE_CONTENT),
    RATE_LIMITED(HttpStatus.TOO_MANY_REQUESTS),
    INTERNAL_ERROR(HttpStatus.INTERNAL_SERVER_ERROR),
    SERVICE_UNAVAILABLE(HttpStatus.SERVICE_UNAVAILABLE);

    private final HttpStatus status;

    ErrorCode(HttpStatus status) {
        this.status = status;
    }

    public HttpStatus status() {
        return status;
    }

    /**
     * The code for a response whose status someone else chose (the servlet container, a forward to
     * {@code /error}): the code of that status, else {@code malformed_request} for other 4xx and
     * {@code internal_error} for 5xx. A 5xx about the request itself (501, 505) is the client's
     * doing, so {@code malformed_request} too.
     */
    public static ErrorCode forStatus(int status) {
        for (ErrorCode code : values()) {
            if (code.status.value() == status) return code;
        }
        return status >= 500 && status != 501 && status != 505 ? INTERNAL_ERROR : MALFORMED_REQUEST;
    }

    /** The wire value, e.g. {@code validation_failed}. */
    public String code() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
