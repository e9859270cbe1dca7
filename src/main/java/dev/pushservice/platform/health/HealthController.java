package dev.pushservice.platform.health;

import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code /health} and {@code /status}: 200 while the database answers (Redis down only degrades),
 * 503 when it does not. Never cached by clients or proxies.
 */
@RestController
class HealthController {

    private final HealthService health;

    HealthController(HealthService health) {
        this.health = health;
    }

    @GetMapping(path = "/health", produces = MediaType.APPLICATION_JSON_VALUE)
    ResponseEntity<HealthReport> health() {
        HealthReport report = health.snapshot();
        return ResponseEntity.status(code(report)).cacheControl(CacheControl.noStore()).body(report);
    }

    @GetMapping(path = "/status", produces = MediaType.TEXT_HTML_VALUE)
    ResponseEntity<String> status() {
        HealthReport report = health.snapshot();
        return ResponseEntity.status(code(report))
                .cacheControl(CacheControl.noStore())
                .contentType(new MediaType(MediaType.TEXT_HTML, java.nio.charset.StandardCharsets.UTF_8))
                .header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
                .header("X-Content-Type-Options", "nosniff")
                .body(StatusPage.render(report));
    }

    private static HttpStatus code(HealthReport report) {
        return report.databaseUp() ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE;
    }
}
