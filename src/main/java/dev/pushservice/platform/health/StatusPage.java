package dev.pushservice.platform.health;

import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import org.springframework.web.util.HtmlUtils;

/**
 * Renders a {@link HealthReport} as one self-contained HTML page (inline CSS, no scripts, no
 * external assets). Every value is HTML-escaped; state is shown by words and symbols, colour only
 * repeats it.
 */
final class StatusPage {

    private static final DateTimeFormatter GENERATED =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'", Locale.ROOT).withZone(ZoneOffset.UTC);

    private static final String CSS = """
            body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
            main{max-width:44rem;margin:2rem auto;padding:0 1rem}
            h1{font-size:1.5rem;margin:0 0 1rem}
            h2{font-size:1.1rem;margin:1.75rem 0 .5rem}
            .banner{padding:1rem 1.25rem;border-radius:.5rem;font-weight:600;font-size:1.15rem;color:#fff}
            .banner.ok{background:#1f7a3a}.banner.degraded{background:#a15c00}.banner.down{background:#b42318}
            table{width:100%;border-collapse:collapse;background:#fff;border-radius:.5rem;overflow:hidden}
            th,td{text-align:left;padding:.6rem 1rem;border-bottom:1px solid #e6e8ec}
            tr:last-child th,tr:last-child td{border-bottom:0}
            th{font-weight:500}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
            .badge{display:inline-block;padding:.1rem .6rem;border-radius:1rem;font-weight:600;font-size:.9rem}
            .badge.up{background:#dcf5e3;color:#14532d}.badge.down{background:#fde2e0;color:#8a1c12}
            .badge.not_configured{background:#eceef2;color:#414a5a}
            .muted{color:#5b6475;font-size:.875rem}footer{margin:1.5rem 0}
            """;

    private StatusPage() {
    }

    static String render(HealthReport r) {
        StringBuilder html = new StringBuilder(4096);
        String headline = switch (r.status()) {
            case HealthReport.OK -> "All systems operational";
            case HealthReport.DEGRADED -> "Degraded: Redis is unreachable; rate limits are not shared between instances";
            default -> "Down: the database is unreachable";
        };
        String symbol = switch (r.status()) {
            case HealthReport.OK -> "✓";
            case HealthReport.DEGRADED -> "!";
            default -> "✕";
        };
        html.append("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
                .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
                .append("<meta http-equiv=\"refresh\" content=\"30\">")
                .append("<title>Push Service status: ").append(esc(label(r.status()))).append("</title>")
                .append("<style>").append(CSS).append("</style></head>\n<body><main>\n")
                .append("<h1>Push Service status</h1>\n")
                .append("<p class=\"banner ").append(esc(r.status())).append("\" id=\"overall\">")
                .append(esc(symbol)).append(' ').append(esc(headline)).append("</p>\n");

        html.append("<h2>Components</h2>\n<table>\n");
        component(html, "API", r.api(), "Answering HTTP requests");
        component(html, "Database", r.database(), "PostgreSQL; latency of one query");
        component(html, "Redis", r.redis(), "Shared rate limits; latency of one PING");
        html.append("</table>\n");

        html.append("<h2>Providers</h2>\n");
        if (r.providerCircuits().isEmpty()) {
            html.append("<p id=\"providers\">✓ Every provider circuit is closed: sends go out.</p>\n");
        } else {
            html.append("<table id=\"providers\">\n<tr><th>Provider circuit</th><th>State</th><th>Since</th><th>Next probe</th></tr>\n");
            for (ProviderCircuits.Circuit c : r.providerCircuits()) {
                String scope = c.scope().isEmpty() ? "" : " " + c.scope();
                html.append("<tr><th>").append(esc(c.platform() + scope)).append("<br><span class=\"muted\">app ")
                        .append(esc(c.appId())).append("</span></th><td><span class=\"badge down\">✕ ")
                        .append(esc(c.state())).append("</span> ").append(esc(c.reason() == null ? "" : c.reason()))
                        .append("</td><td>").append(esc(GENERATED.format(c.openedAt()))).append("</td><td>")
                        .append(esc(GENERATED.format(c.retryAt()))).append("</td></tr>\n");
            }
            html.append("</table>\n<p class=\"muted\">Sends to an open circuit wait (pending, no attempt spent) while one probe at a time tests it.</p>\n");
        }

        html.append("<h2>Background jobs</h2>\n<table>\n");
        HealthReport.Jobs jobs = r.jobs();
        if (jobs == null) {
            html.append("<tr><td>").append(esc(r.databaseUp()
                    ? "Unknown: the counts could not be read in time"
                    : "Unknown while the database is unreachable")).append("</td></tr>\n");
        } else {
            row(html, "Queue depth", "Due now, waiting for a worker", count(jobs.queueDepth()));
            row(html, "Oldest due job waiting", "How long the longest-waiting due job has waited", age(jobs.oldestDueAgeSeconds()));
            row(html, "Pending", "All scheduled jobs not yet running, due now or later", count(jobs.pending()));
            row(html, "Running", "Being executed by a worker", count(jobs.running()));
            row(html, "Retrying", "Last attempt failed; will be tried again", count(jobs.retrying()));
            row(html, "Dead-lettered", "Gave up after exhausting retries", count(jobs.deadLettered()));
        }
        html.append("</table>\n");
        if (jobs != null) {
            html.append("<p class=\"muted\">Counted ").append(esc(GENERATED.format(jobs.countedAt())))
                    .append("; counts are refreshed at most every 5 s.</p>\n");
        }

        html.append("<footer class=\"muted\">Generated ").append(esc(GENERATED.format(r.checkedAt())))
                .append(" · instance roles: ").append(esc(String.join(", ", r.roles())))
                .append(" · refreshes every 30 s · machine-readable: <a href=\"/health\">/health</a></footer>\n")
                .append("</main></body></html>\n");
        return html.toString();
    }

    private static void component(StringBuilder html, String name, HealthReport.Component c, String note) {
        String latency = c.latencyMs() == null ? "—" : String.format(Locale.ROOT, "%.2f ms", c.latencyMs());
        html.append("<tr><th>").append(esc(name)).append("<div class=\"muted\">").append(esc(note)).append("</div></th>")
                .append("<td><span class=\"badge ").append(esc(c.status())).append("\">")
                .append(esc(badge(c.status()))).append("</span></td>")
                .append("<td class=\"num\">").append(esc(latency)).append("</td></tr>\n");
    }

    private static void row(StringBuilder html, String name, String note, String value) {
        html.append("<tr><th>").append(esc(name)).append("<div class=\"muted\">").append(esc(note)).append("</div></th>")
                .append("<td class=\"num\">").append(esc(value)).append("</td></tr>\n");
    }

    private static String badge(String status) {
        return switch (status) {
            case HealthReport.Component.UP -> "✓ Up";
            case HealthReport.Component.DOWN -> "✕ Down";
            case HealthReport.Component.NOT_CONFIGURED -> "– Not configured";
            default -> status;
        };
    }

    private static String label(String status) {
        return switch (status) {
            case HealthReport.OK -> "Operational";
            case HealthReport.DEGRADED -> "Degraded";
            default -> "Down";
        };
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d %s", n, n == 1 ? "job" : "jobs");
    }

    static String age(long seconds) {
        if (seconds < 60) return seconds + " s";
        if (seconds < 3600) return seconds / 60 + " min " + seconds % 60 + " s";
        if (seconds < 86_400) return seconds / 3600 + " h " + seconds % 3600 / 60 + " min";
        return seconds / 86_400 + " d " + seconds % 86_400 / 3600 + " h";
    }

    private static String esc(String s) {
        return HtmlUtils.htmlEscape(s, "UTF-8");
    }
}
