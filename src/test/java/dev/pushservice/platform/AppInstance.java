package dev.pushservice.platform;

import dev.pushservice.PushServiceApplication;
import dev.pushservice.support.TestApi;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A whole application instance of its own, started the way {@code java -jar} starts it (settings
 * as command-line arguments, which outrank application.yaml and the environment), on a random
 * port. For tests that need their own database, data dir or roles, away from the shared
 * {@code ApiTest} context. Closing it shuts it down as SIGTERM would.
 */
final class AppInstance implements AutoCloseable {

    private final ConfigurableApplicationContext context;
    final TestApi api;

    private AppInstance(ConfigurableApplicationContext context) {
        this.context = context;
        int port = Integer.parseInt(context.getEnvironment().getProperty("local.server.port"));
        this.api = new TestApi("http://127.0.0.1:" + port);
    }

    static Builder with() {
        return new Builder();
    }

    <T> T bean(Class<T> type) {
        return context.getBean(type);
    }

    <T> T bean(String name, Class<T> type) {
        return context.getBean(name, type);
    }

    /** Stops every lifecycle bean and starts them again, as a paused and resumed context does. */
    void stopAndStart() {
        context.stop();
        context.start();
    }

    JdbcClient jdbc() {
        return bean(JdbcClient.class);
    }

    @Override
    public void close() {
        context.close();
    }

    static final class Builder {
        // deterministic regardless of the machine's environment (CI sets REDIS_URL, DATABASE_URL may be set)
        private final Map<String, String> settings = new LinkedHashMap<>(Map.of(
                "server.port", "0",
                "push.redis-url", "",
                "push.bootstrap.enabled", "false"));
        private final List<Consumer<GenericApplicationContext>> beans = new ArrayList<>();

        Builder set(String key, String value) {
            settings.put(key, value);
            return this;
        }

        /** Registers extra beans (test tasks) without component scanning, which would leak them into other contexts. */
        Builder beans(Consumer<GenericApplicationContext> registration) {
            beans.add(registration);
            return this;
        }

        AppInstance start() {
            String[] args = settings.entrySet().stream().map(e -> "--" + e.getKey() + "=" + e.getValue())
                    .toArray(String[]::new);
            SpringApplicationBuilder builder = new SpringApplicationBuilder(PushServiceApplication.class)
                    .web(WebApplicationType.SERVLET);
            for (Consumer<GenericApplicationContext> registration : beans) {
                builder.initializers(ctx -> registration.accept((GenericApplicationContext) ctx));
            }
            return new AppInstance(builder.run(args));
        }
    }
}
