package dev.pushservice.platform.jobs;

/**
 * Thrown by a task when retrying cannot help (its data refers to something that no longer exists,
 * a provider rejected the request for good): the {@link DeadLetters#handler} dead-letters the
 * instance at once instead of spending its remaining attempts. The message is stored in
 * {@code dead_letter_jobs.last_error}, so it must not contain secrets or push tokens.
 */
public class PermanentJobFailure extends RuntimeException {

    public PermanentJobFailure(String message) {
        super(message);
    }

    public PermanentJobFailure(String message, Throwable cause) {
        super(message, cause);
    }
}
