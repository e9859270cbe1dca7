package dev.pushservice.platform.error;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.transaction.TransactionSystemException;

/** Which failures count as the database being unreachable (503) rather than a bug (500). */
class DatabaseUnreachableCausesTests {

    @Test
    void aConnectionFailureAnywhereInTheCausesCounts() {
        assertThat(DatabaseUnreachable.causes(new IllegalStateException("batch not written",
                new DataAccessResourceFailureException("connection refused")))).isTrue();
        assertThat(DatabaseUnreachable.causes(new DataIntegrityViolationException("duplicate key"))).isFalse();
        assertThat(DatabaseUnreachable.causes(new IllegalStateException("a bug"))).isFalse();
    }

    /** Seen by drills/database-restart.sh: the statement failed with the connection cut, then its rollback failed too. */
    @Test
    void aRollbackThatFailedAfterAConnectionFailureCounts() {
        TransactionSystemException rollback = new TransactionSystemException("JDBC rollback failed",
                new SQLException("Connection is closed"));
        rollback.initApplicationException(new DataAccessResourceFailureException("I/O error"));
        assertThat(DatabaseUnreachable.causes(new IllegalStateException("batch not written", rollback))).isTrue();

        TransactionSystemException afterABug = new TransactionSystemException("JDBC rollback failed",
                new SQLException("Connection is closed"));
        afterABug.initApplicationException(new IllegalArgumentException("a bug"));
        assertThat(DatabaseUnreachable.causes(afterABug)).isFalse();
    }

    /**
     * Seen by drills/database-restart.sh at 100,000 devices: the restart cut the connection inside an
     * event batch's commit; Spring's rollback then found the connection closed by the pool and threw
     * the rollback's exception, the commit's lost (no application exception).
     */
    @Test
    void aRollbackAfterACommitThatLostTheConnectionCounts() {
        TransactionSystemException afterCommit = new TransactionSystemException("JDBC rollback failed",
                new SQLException("Connection is closed"));
        assertThat(DatabaseUnreachable.causes(new IllegalStateException("Event batch was not written", afterCommit))).isTrue();

        TransactionSystemException otherRollbackFailure = new TransactionSystemException("JDBC rollback failed",
                new SQLException("cannot roll back: a bug", "XX000"));
        assertThat(DatabaseUnreachable.causes(otherRollbackFailure)).isFalse();
    }

    @Test
    void aDriverErrorOfTheConnectionClassOrAServerShutdownCounts() {
        assertThat(DatabaseUnreachable.causes(new IllegalStateException(new SQLException("I/O error", "08006")))).isTrue();
        assertThat(DatabaseUnreachable.causes(new SQLException("terminating connection due to administrator command", "57P01"))).isTrue();
        assertThat(DatabaseUnreachable.causes(new SQLException("duplicate key", "23505"))).isFalse();
        assertThat(DatabaseUnreachable.causes(new SQLException("Connection is closed"))).as("only as a failed rollback's cause").isFalse();
    }
}
