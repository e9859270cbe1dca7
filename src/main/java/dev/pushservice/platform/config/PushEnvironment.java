package dev.pushservice.platform.config;

import java.io.Console;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Settings derived from environment variables before logging starts: the console log format.
 * {@code PUSH_LOG_FORMAT=json} (one JSON object per line, with {@code request_id}) or {@code text}
 * decides when set. Unset, a person at a terminal gets text and anything else (a container, a
 * service manager, a pipe into a log shipper) gets JSON: a terminal is read by people, everything
 * else by machines.
 */
public class PushEnvironment implements EnvironmentPostProcessor {

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Map<String, Object> derived = new HashMap<>();
        String format = environment.getProperty("PUSH_LOG_FORMAT", "").trim().toLowerCase(Locale.ROOT);
        boolean json = switch (format) {
            case "text" -> false;
            case "json" -> true;
            default -> !attachedToTerminal();
        };
        if (json) {
            derived.put("logging.structured.format.console", "logstash");
        }
        environment.getPropertySources().addLast(new MapPropertySource("push-derived", derived));
    }

    /**
     * Whether standard input and output are a terminal. {@link System#console()} says so up to JDK 21;
     * from JDK 22 it may return a console for redirected streams too, and {@code Console.isTerminal()}
     * (looked up reflectively, the build targets 21) tells the two apart.
     */
    public static boolean attachedToTerminal() {
        Console console = System.console();
        if (console == null) return false;
        try {
            Method isTerminal = Console.class.getMethod("isTerminal");
            return (Boolean) isTerminal.invoke(console);
        } catch (ReflectiveOperationException e) {
            return true;
        }
    }
}
