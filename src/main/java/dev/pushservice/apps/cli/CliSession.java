package dev.pushservice.apps.cli;

import dev.pushservice.apps.TenantService;
import java.io.PrintWriter;
import java.time.Clock;
import java.time.Instant;
import java.util.function.Supplier;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One CLI invocation: its output streams and, started on first use, the application context that
 * gives access to the database. Closing it closes the context (and stops the embedded PostgreSQL if
 * this process started it). Not thread-safe; one command uses it.
 */
final class CliSession implements AutoCloseable {

    private final PrintWriter out;
    private final PrintWriter err;
    private final Supplier<ConfigurableApplicationContext> starter;
    private final Clock clock;
    private ConfigurableApplicationContext context;

    CliSession(PrintWriter out, PrintWriter err, Supplier<ConfigurableApplicationContext> starter, Clock clock) {
        this.out = out;
        this.err = err;
        this.starter = starter;
        this.clock = clock;
    }

    PrintWriter out() {
        return out;
    }

    PrintWriter err() {
        return err;
    }

    Instant now() {
        return clock.instant();
    }

    TenantService tenants() {
        return bean(TenantService.class);
    }

    /** A service of the application, started on first use. */
    <T> T bean(Class<T> type) {
        if (context == null) context = starter.get();
        return context.getBean(type);
    }

    @Override
    public void close() {
        out.flush();
        err.flush();
        if (context != null) context.close();
    }
}
