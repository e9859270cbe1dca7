package dev.pushservice.platform.error;

import java.util.List;

/** The spec's error shape: {@code {"error":{"code","message","details"},"request_id"}}. */
record ErrorBody(Error error, String request_id) {

    public record Error(String code, String message, List<ErrorDetail> details) {
    }

    public static ErrorBody of(ErrorCode code, String message, List<ErrorDetail> details, String requestId) {
        return new ErrorBody(new Error(code.code(), message, details), requestId);
    }
}
