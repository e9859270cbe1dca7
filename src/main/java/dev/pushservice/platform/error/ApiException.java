package dev.pushservice.platform.error;

import java.util.List;
import java.util.Map;

/**
 * An answer in HTTP terms, for the request-path filters and interceptors of {@code platform.web}
 * (size, media type, API key, scope, rate limit) that refuse a request before any controller runs.
 * Everything below them (controllers, services, parsers) throws {@code platform.domain} exceptions
 * instead; {@link ApiExceptionHandler} maps both. {@code headers} carries extras such as {@code Retry-After}.
 */
public class ApiException extends RuntimeException {

    private final ErrorCode code;
    private final List<ErrorDetail> details;
    private final Map<String, String> headers;

    public ApiException(ErrorCode code, String message) {
        this(code, message, List.of(), Map.of());
    }

    public ApiException(ErrorCode code, String message, List<ErrorDetail> details) {
        this(code, message, details, Map.of());
    }

    public ApiException(ErrorCode code, String message, List<ErrorDetail> details, Map<String, String> headers) {
        super(message, null, false, false);
        this.code = code;
        this.details = List.copyOf(details);
        this.headers = Map.copyOf(headers);
    }

    public static ApiException notFound(String what) {
        return new ApiException(ErrorCode.NOT_FOUND, what + " not found");
    }

    /** A 422 naming one field. */
    public static ApiException invalid(String field, String message) {
        return new ApiException(ErrorCode.VALIDATION_FAILED, "Request validation failed",
                List.of(new ErrorDetail(field, message)));
    }

    public ErrorCode code() {
        return code;
    }

    public List<ErrorDetail> details() {
        return details;
    }

    public Map<String, String> headers() {
        return headers;
    }
}
