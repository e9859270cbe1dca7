package dev.pushservice.platform.jobs;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL for {@code dead_letter_jobs}: where a task instance goes when its retries are used up, and
 * where work that is not a db-scheduler task but ends the same way is recorded ({@link #insertAll}).
 */
@Repository
public class DeadLetterRepository {

    /** One unit of work given up. {@code instance} names what it worked on (ids, never a token or secret). */
    public record Entry(String instance, int attempts, String lastError) {
    }

    /**
     * Records given-up work that db-scheduler does not run (a delivery recipient whose retries ran
     * out), in one statement on {@code jdbc}, so it joins the caller's transaction on whichever pool
     * that is. {@code /health} counts these rows with the rest.
     */
    public static void insertAll(JdbcClient jdbc, String taskName, java.util.List<Entry> entries) {
        if (entries.isEmpty()) return;
        tools.jackson.databind.node.ArrayNode rows = tools.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
        for (Entry e : entries) {
            String error = e.lastError();
            if (error != null && error.length() > DeadLetters.MAX_ERROR_LENGTH) {
                error = error.substring(0, DeadLetters.MAX_ERROR_LENGTH - 1) + "…";
            }
            rows.addObject().put("i", e.instance()).put("a", e.attempts()).put("e", error);
        }
        jdbc.sql("""
                insert into dead_letter_jobs (task_name, task_instance, attempts, last_error)
                select :name, v.i, v.a, v.e from jsonb_to_recordset(cast(:rows as jsonb)) as v(i text, a int, e text)""")
                .param("name", taskName).param("rows", rows.toString()).update();
    }

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
