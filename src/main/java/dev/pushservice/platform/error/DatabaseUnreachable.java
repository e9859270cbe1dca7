package dev.pushservice.platform.error;

import java.sql.SQLException;
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
     * True when {@code e} or one of its causes says the database could not be reached: a connection
     * failure Spring translated, a driver error of SQLSTATE class 08 (connection exception) or 57P01-03
     * (the server shutting down or starting), a transaction's rollback that failed on the closed
     * connection after such a failure (Spring then throws the rollback's
     * {@link TransactionSystemException}, the failure kept as its application exception), or a
     * rollback after a failed <em>commit</em>: Spring drops the commit's exception then, and what is
     * left is the rollback's failure on the connection the pool closed because the commit lost it
     * (drills/database-restart.sh: a restart that cuts a connection inside its commit).
     */
    public static boolean causes(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof DataAccessResourceFailureException || t instanceof TransientDataAccessResourceException
                    || t instanceof CannotCreateTransactionException
                    || t instanceof SQLException sql && connectionLost(sql.getSQLState())) {
                return true;
            }
            if (t instanceof TransactionSystemException tx) {
                Throwable failure = tx.getApplicationException();
                if (failure != null && failure != e && causes(failure)) return true;
                if (failure == null && tx.getCause() instanceof SQLException sql && closedByThePool(sql)) return true;
            }
        }
        return false;
    }

    private static boolean connectionLost(String sqlState) {
        return sqlState != null && (sqlState.startsWith("08") || sqlState.equals("57P01") || sqlState.equals("57P02")
                || sqlState.equals("57P03"));
    }

    /**
     * HikariCP's answer on a connection it closed itself, which it does when a statement or commit on it
     * failed with a connection error (HikariCP 7: a plain {@code SQLException("Connection is closed")},
     * no SQLSTATE).
     */
    private static boolean closedByThePool(SQLException e) {
        return connectionLost(e.getSQLState()) || e.getSQLState() == null && "Connection is closed".equals(e.getMessage());
    }

    /** The 503 for a request path that runs before routing (the API key's lookup). */
    public static ApiException unavailable() {
        return new ApiException(ErrorCode.SERVICE_UNAVAILABLE, MESSAGE, List.of(),
                Map.of(HttpHeaders.RETRY_AFTER, RETRY_AFTER_SECONDS));
    }
}
