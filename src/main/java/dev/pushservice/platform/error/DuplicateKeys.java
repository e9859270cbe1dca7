package dev.pushservice.platform.error;

import tools.jackson.core.JsonParser;
import tools.jackson.core.exc.StreamReadException;

/**
 * A request body with a key twice in one object ({@code {"title":"a","title":"b"}}). RFC 8259 leaves
 * its meaning to the reader, and readers disagree (first wins, last wins, error): a body that a
 * proxy, a signature check or an audit log reads one way could be stored another. The service's JSON
 * reader refuses it ({@code spring.jackson.read.strict-duplicate-detection} in application.yaml),
 * and {@link ApiExceptionHandler} answers 400 naming the key. Stateless and thread-safe.
 */
final class DuplicateKeys {

    static final String MESSAGE = "appears more than once in the same object";

    /** How Jackson's duplicate detection words its refusal (the only signal it gives). */
    private static final String PREFIX = "Duplicate Object property";

    private DuplicateKeys() {
    }

    /** The detail naming the repeated key by its path ({@code content.title}) when {@code cause} is such a refusal, else null. */
    static ErrorDetail detail(Throwable cause) {
        if (!(cause instanceof StreamReadException e) || e.getOriginalMessage() == null
                || !e.getOriginalMessage().startsWith(PREFIX)) {
            return null;
        }
        // the parser stops on the repeated key, so its context's path ends with it
        String path = e.processor() instanceof JsonParser parser ? JsonPaths.of(parser.streamReadContext()) : "";
        return new ErrorDetail(path.isEmpty() ? null : path, MESSAGE);
    }
}
