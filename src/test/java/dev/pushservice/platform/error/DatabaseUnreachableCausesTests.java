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
}
