package dev.pushservice.platform.jobs;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** SQL for {@code dead_letter_jobs}: where a task instance goes when its retries are used up. */
@Repository
class DeadLetterRepository {

    private final JdbcClient jdbc;

    DeadLetterRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    void insert(String taskName, String taskInstance, int attempts, String lastError) {
        jdbc.sql("""
                insert into dead_letter_jobs (task_name, task_instance, attempts, last_error)
                values (:name, :instance, :attempts, :error)""")
                .param("name", taskName)
                .param("instance", taskInstance)
                .param("attempts", attempts)
                .param("error", lastError)
                .update();
    }
}
