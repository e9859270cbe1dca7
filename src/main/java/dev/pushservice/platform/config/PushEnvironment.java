package dev.pushservice.platform.config;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Settings derived from environment variables before logging starts: JSON logs (with
 * {@code request_id}) unless {@code PUSH_LOG_FORMAT=text}.
 */
public class PushEnvironment implements EnvironmentPostProcessor {

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Map<String, Object> derived = new HashMap<>();
        String format = environment.getProperty("PUSH_LOG_FORMAT", "json").toLowerCase(Locale.ROOT);
        if (!format.equals("text")) {
            derived.put("logging.structured.format.console", "logstash");
        }
        environment.getPropertySources().addLast(new MapPropertySource("push-derived", derived));
    }
}
