package dev.pushservice.apps.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import picocli.CommandLine;

/**
 * Entry point of {@code push-service admin …}. Parses the arguments first (a usage error never
 * starts anything), then starts the application without web server, scheduler or bootstrap,
 * runs one command against the configured database and returns the exit status:
 * 0 done, 1 not found / refused / database unreachable, 2 usage error.
 *
 * <p>Errors are reported as one line on stderr followed by usage; no stack trace is ever printed,
 * because the audience is an operator at a terminal or a deployment script.
 */
public final class AdminCli {

    static final int FAILED = 1;
    static final int USAGE = 2;

    private AdminCli() {
    }

    /**
     * Runs the CLI in this process and exits it with the command's status. {@code application} is
     * the Spring Boot application class the commands start (passed in, so that this package does not
     * depend on the entry point that depends on it).
     */
    public static void main(Class<?> application, String[] args) {
        PrintStream stdout = System.out;
        // Whatever libraries print (log lines included) goes to stderr: stdout carries only the command's output.
        System.setOut(System.err);
        int status;
        try {
            status = run(application, args, stdout, System.err);
        } catch (RuntimeException | Error e) {
            // a defect in the CLI itself: still one line, no stack trace
            System.err.println("Error: the admin CLI failed: " + rootMessage(e));
            status = FAILED;
        }
        System.exit(status);
    }

    /** Runs one command; {@code args} are what follows {@code admin}. */
    public static int run(Class<?> application, String[] args, PrintStream stdout, PrintStream stderr) {
        PrintWriter out = new PrintWriter(stdout, true, stdout.charset());
        PrintWriter err = new PrintWriter(stderr, true, stderr.charset());
        try (CliSession session = new CliSession(out, err, () -> startApplication(application), Clock.systemUTC())) {
            CommandLine cli = new CommandLine(new AdminCommands.Admin(), new SessionFactory(session));
            cli.setOut(out);
            cli.setErr(err);
            cli.setParameterExceptionHandler(AdminCli::usageError);
            cli.setExecutionExceptionHandler((e, command, parsed) -> failure(e, command, err));
            return cli.execute(args);
        }
    }

    private static int usageError(CommandLine.ParameterException e, String[] args) {
        CommandLine command = e.getCommandLine();
        PrintWriter err = command.getErr();
        String message = e.getMessage();
        if (e instanceof CommandLine.UnmatchedArgumentException unmatched && !command.getSubcommands().isEmpty()
                && !unmatched.getUnmatched().isEmpty() && !unmatched.getUnmatched().getFirst().startsWith("-")) {
            message = "Unknown command '" + unmatched.getUnmatched().getFirst() + "' for '"
                    + command.getCommandSpec().qualifiedName() + "'";
        }
        if (e instanceof CommandLine.UnmatchedArgumentException unmatched && !unmatched.getSuggestions().isEmpty()) {
            message += " (did you mean " + String.join(" or ", unmatched.getSuggestions()) + "?)";
        }
        err.println("Error: " + message);
        err.println();
        command.usage(err);
        return USAGE;
    }

    private static int failure(Exception e, CommandLine command, PrintWriter err) {
        if (e instanceof NoSuchElementException || e instanceof IllegalArgumentException) {
            // not found, or refused by the service (e.g. rotating a revoked key)
            err.println("Error: " + e.getMessage());
            CommandLine.Help help = command.getHelp();
            err.print(help.synopsisHeading() + help.synopsis(help.synopsisHeadingLength()));
            err.println("Run '" + command.getCommandSpec().qualifiedName() + " --help' for details.");
        } else if (e instanceof dev.pushservice.platform.domain.InvalidInput invalid) {
            // refused by the same validation the API applies (e.g. a bad provider credential)
            err.println("Error: " + invalid.getMessage());
            invalid.violations().forEach(v -> err.println("  " + (v.field() == null ? "" : v.field() + ": ") + v.message()));
        } else if (e instanceof dev.pushservice.platform.domain.DomainException domain) {
            err.println("Error: " + domain.getMessage());
        } else if (e instanceof StartFailure) {
            err.println("Error: " + e.getMessage());
        } else {
            err.println("Error: the command failed unexpectedly: " + rootMessage(e));
        }
        return FAILED;
    }

    /** Starts the application for admin work: no web server, scheduler, bootstrap or log noise. */
    private static ConfigurableApplicationContext startApplication(Class<?> application) {
        List<String> settings = new ArrayList<>(List.of(
                "--push.bootstrap.enabled=false",
                "--db-scheduler.enabled=false",
                "--push.roles=api", // no worker role: a CLI run never executes background work
                "--push.database.pool-size=2",
                "--spring.main.lazy-initialization=true",
                "--PUSH_LOG_FORMAT=text",
                "--logging.level.root=WARN",
                // these report start-up failures with stack traces; the CLI reports them in one line
                "--logging.level.org.springframework.boot.SpringApplication=OFF",
                "--logging.level.org.springframework.boot.diagnostics=OFF",
                "--logging.level.com.zaxxer.hikari=OFF",
                "--logging.level.org.springframework.context=ERROR",
                "--logging.pattern.console=%-5level %logger{36} - %msg%n%nopex"));
        if (System.getenv("PUSH_DB_STARTUP_WAIT") == null) {
            // an operator waiting at a terminal wants an answer, not the service's 30 s of retries
            settings.add("--push.database.startup-wait=5s");
        }
        try {
            return new SpringApplicationBuilder(application)
                    .web(WebApplicationType.NONE)
                    .bannerMode(Banner.Mode.OFF)
                    .logStartupInfo(false)
                    .run(settings.toArray(String[]::new));
        } catch (RuntimeException e) {
            throw new StartFailure(describeStartFailure(e));
        }
    }

    static String describeStartFailure(Throwable e) {
        SQLException sql = null;
        boolean poolFailed = false;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof IllegalArgumentException && t.getMessage() != null && t.getMessage().startsWith("DATABASE_URL")) {
                return t.getMessage();
            }
            if (t.getClass().getSimpleName().equals("PoolInitializationException")) poolFailed = true;
            if (t instanceof SQLException s) sql = s;
            if (t instanceof UncheckedIOException io && io.getMessage() != null && io.getMessage().contains("embedded PostgreSQL")) {
                return io.getMessage() + ": " + rootMessage(io);
            }
            if (t.getClass().getName().startsWith("org.flywaydb")) {
                return "Database migration failed: " + t.getMessage();
            }
        }
        if (poolFailed || sql != null) {
            String where = System.getenv("DATABASE_URL") == null || System.getenv("DATABASE_URL").isBlank()
                    ? "the embedded PostgreSQL" : "DATABASE_URL";
            return "Cannot connect to the database (" + where + "): " + (sql != null ? sql.getMessage() : rootMessage(e));
        }
        return "Could not start: " + rootMessage(e);
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
    }

    /** The application could not start (database unreachable, bad settings): reported in one line. */
    static final class StartFailure extends RuntimeException {
        StartFailure(String message) {
            super(message, null, false, false);
        }
    }

    /** Gives leaf commands the session through their constructor. */
    private record SessionFactory(CliSession session) implements CommandLine.IFactory {
        @Override
        public <K> K create(Class<K> type) throws Exception {
            for (Constructor<?> c : type.getDeclaredConstructors()) {
                if (c.getParameterCount() == 1 && c.getParameterTypes()[0] == CliSession.class) {
                    return type.cast(c.newInstance(session));
                }
            }
            return CommandLine.defaultFactory().create(type);
        }
    }
}
