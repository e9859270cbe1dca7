package dev.pushservice.platform.error;

import java.util.List;
import java.util.Map;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.http.HttpHeaders;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;

/**
 * Whether a request failed because the database could not be reached (no connection within the
 * pool's timeout, the connection cut by a restart): such a request answers 503 {@code
 * service_unavailable} with {@code Retry-After: 1}, as the client should simply try again, never a 500
 * (drills/database-restart.sh). Stateless.
 */
public final class DatabaseUnreachable {

    /** What a refused caller is told to wait before retrying. */
    static final String RETRY_AFTER_SECONDS = "1";
    static final String MESSAGE = "The database is unreachable; retry shortly";

    private DatabaseUnreachable() {
    }

    /**
     * True when {@code e} or one of its causes says the database could not be reached; also when a
     * transaction's rollback failed on the closed connection after such a failure (Spring then throws
     * the rollback's {@link TransactionSystemException}, the failure kept as its application exception).
     */
    public static boolean causes(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof DataAccessResourceFailureException || t instanceof TransientDataAccessResourceException
                    || t instanceof CannotCreateTransactionException) {
                return true;
            }
            if (t instanceof TransactionSystemException tx && tx.getApplicationException() != null
                    && tx.getApplicationException() != e && causes(tx.getApplicationException())) {
                return true;
            }
        }
        return false;
    }

    /** The 503 for a request path that runs before routing (the API key's lookup). */
    public static ApiException unavailable() {
        return new ApiException(ErrorCode.SERVICE_UNAVAILABLE, MESSAGE, List.of(),
                Map.of(HttpHeaders.RETRY_AFTER, RETRY_AFTER_SECONDS));
    }
}
