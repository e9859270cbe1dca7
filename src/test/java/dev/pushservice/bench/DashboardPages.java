package dev.pushservice.bench;

import dev.pushservice.support.Chromium;
import java.io.IOException;
import java.net.CookieManager;
import java.net.CookiePolicy;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.support.ui.ExpectedConditions;

/**
 * The dashboard's pages of one app, found by following links, for two hand-run programs (not tests):
 *
 * <ul>
 *   <li>{@code speed BASE SETUP_LINK PASSWORD APP_ID [requests=50]} ({@code bench/dashboard.sh}): sets the
 *   member's password through the setup link, signs in, discovers the pages and times {@code requests}
 *   sequential GETs of each (after 5 unmeasured), printing p50, p95 and max per page. Asserts nothing.
 *   <li>{@code screenshots BASE SETUP_LINK PASSWORD APP_ID DIR} ({@code bench/dashboard-screenshots.sh}):
 *   in headless Chromium, the setup page, the sign-in page, then every discovered page, each at a
 *   laptop's and a phone's width, as {@code DIR/NAME-laptop.png} and {@code DIR/NAME-phone.png}.
 * </ul>
 *
 * <p>Discovery: from the apps page, the members page and the app's overview, every link to a page of
 * the app ({@code /dashboard/apps/APP...}), two links deep, one page per shape (ids replaced by
 * {@code {id}}, so ten thousand report pages count as one): a page added to the app's navigation, or
 * linked from one of its pages, is covered without a change here.
 */
public final class DashboardPages {

    private static final Pattern HREF = Pattern.compile("href=\"([^\"#]+)\"");
    private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");
    private static final Pattern UUID_SEGMENT = Pattern.compile("/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    /** Per page shape, the time of its first request (made by {@link #discover}). */
    private static final Map<String, Double> FIRST_MS = new java.util.concurrent.ConcurrentHashMap<>();

    private DashboardPages() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: DashboardPages speed|screenshots BASE SETUP_LINK PASSWORD APP_ID [requests | DIR]");
            System.exit(2);
        }
        String base = args[1].replaceAll("/+$", "");
        String link = args[2].replaceFirst("^https?://[^/]+", "");
        String password = args[3];
        String app = args[4];
        switch (args[0]) {
            case "speed" -> speed(base, link, password, app, args.length > 5 ? Integer.parseInt(args[5]) : 50);
            case "screenshots" -> screenshots(base, link, password, app, Path.of(args.length > 5 ? args[5] : "docs/dashboard"));
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    // ------------------------------------------------------------------------------------- speed

    static void speed(String base, String setupLink, String password, String app, int requests) throws Exception {
        Http http = new Http(base);
        String email = http.join(setupLink, password);
        http.signIn(email, password);
        Map<String, String> pages = discover(http, app);
        System.out.printf("%d pages found by following links from the overview%n%n", pages.size());
        System.out.printf("%-52s %6s %9s %9s %9s %9s %9s%n", "page", "status", "KiB", "first ms", "p50 ms", "p95 ms", "max ms");
        for (Map.Entry<String, String> page : pages.entrySet()) {
            // "first": the page's first request, made while finding links (cold caches); then 5 unmeasured
            double first = FIRST_MS.get(page.getKey());
            for (int i = 0; i < 5; i++) http.get(page.getValue());
            double[] ms = new double[requests];
            int status = 0;
            long bytes = 0;
            for (int i = 0; i < requests; i++) {
                long t0 = System.nanoTime();
                HttpResponse<String> r = http.get(page.getValue());
                ms[i] = (System.nanoTime() - t0) / 1e6;
                status = r.statusCode();
                bytes = r.body().getBytes(StandardCharsets.UTF_8).length;
            }
            Arrays.sort(ms);
            System.out.printf("%-52s %6d %9.1f %9.1f %9.1f %9.1f %9.1f%n", page.getKey(), status, bytes / 1024.0, first,
                    percentile(ms, 0.50), percentile(ms, 0.95), ms[ms.length - 1]);
        }
    }

    private static double percentile(double[] sorted, double p) {
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    /**
     * Page shape (ids as {@code {id}}, the app as {@code {app}}) to one path of that shape: the apps
     * page, the members page, and the app's pages reachable from its overview in two steps that answer
     * 200 with HTML.
     */
    static Map<String, String> discover(Http http, String app) {
        String prefix = "/dashboard/apps/" + app;
        Map<String, String> found = new LinkedHashMap<>();
        Set<String> seenShapes = new LinkedHashSet<>();
        Deque<String[]> queue = new ArrayDeque<>(); // path, depth
        for (String start : List.of("/dashboard", "/dashboard/members", prefix)) {
            queue.add(new String[] {start, "0"});
            seenShapes.add(shape(start, app));
        }
        while (!queue.isEmpty()) {
            String[] next = queue.poll();
            long t0 = System.nanoTime();
            HttpResponse<String> r = http.get(next[0]);
            FIRST_MS.put(shape(next[0], app), (System.nanoTime() - t0) / 1e6);
            if (r.statusCode() != 200 || !r.headers().firstValue("Content-Type").orElse("").startsWith("text/html")) {
                continue; // a link to a page not built yet (404), or a download
            }
            found.put(shape(next[0], app), next[0]);
            int depth = Integer.parseInt(next[1]);
            if (depth >= 2) continue;
            Matcher m = HREF.matcher(r.body());
            while (m.find()) {
                String href = m.group(1).replace("&amp;", "&").replaceFirst("^https?://[^/]+", "");
                if (!href.startsWith(prefix)) continue;
                String s = shape(href, app);
                if (seenShapes.add(s)) queue.add(new String[] {href, String.valueOf(depth + 1)});
            }
        }
        return found;
    }

    static String shape(String path, String app) {
        return UUID_SEGMENT.matcher(path.replace(app, "{app}")).replaceAll("/{id}");
    }

    /** A file name for a page shape: {@code /dashboard/apps/{app}/notifications/{id}} → {@code notifications-report}. */
    static String fileName(String shape) {
        if (shape.equals("/dashboard")) return "apps";
        if (shape.equals("/dashboard/apps/{app}")) return "overview";
        String name = shape.replaceFirst("^/dashboard/(apps/\\{app}/)?", "").replace("/{id}", "-item").replaceAll("[^A-Za-z0-9-]+", "-");
        return name.replaceAll("-+$", "");
    }

    // ------------------------------------------------------------------------------ screenshots

    static void screenshots(String base, String setupLink, String password, String app, Path dir) throws Exception {
        Path profiles = Files.createTempDirectory("dashboard-screenshots");
        Files.createDirectories(dir);
        Http http = new Http(base);
        try (Chromium c = new Chromium(profiles, Chromium.LAPTOP)) {
            // the setup page and the sign-in page as a new member sees them, then the password set in the browser
            for (Dimension size : List.of(Chromium.PHONE, Chromium.LAPTOP)) {
                c.resize(size);
                c.get(base + setupLink);
                shot(c, dir, "join", size);
                c.get(base + "/dashboard/sign-in");
                shot(c, dir, "sign-in", size);
            }
            c.get(base + setupLink);
            String email = c.driver.findElement(By.cssSelector("form strong")).getText();
            c.driver.findElement(By.name("password")).sendKeys(password);
            c.driver.findElement(By.name("password_confirmation")).sendKeys(password);
            c.driver.findElement(By.cssSelector("form button[type=submit]")).click();
            c.waiting().until(ExpectedConditions.urlContains("/dashboard/sign-in?joined"));
            c.driver.findElement(By.name("email")).sendKeys(email);
            c.driver.findElement(By.name("password")).sendKeys(password);
            c.driver.findElement(By.cssSelector("form button[type=submit]")).click();
            c.waiting().until(ExpectedConditions.urlToBe(base + "/dashboard"));

            http.signIn(email, password);
            Map<String, String> pages = discover(http, app);
            List<String> problems = new ArrayList<>();
            for (Dimension size : List.of(Chromium.PHONE, Chromium.LAPTOP)) {
                c.resize(size);
                for (Map.Entry<String, String> page : pages.entrySet()) {
                    c.get(base + page.getValue());
                    shot(c, dir, fileName(page.getKey()), size);
                    c.consoleProblems().forEach(p -> problems.add(page.getValue() + ": " + p));
                }
            }
            // an invite link, shown once on the members page (owners)
            c.resize(Chromium.LAPTOP);
            c.get(base + "/dashboard/members");
            if (!c.driver.findElements(By.xpath("//button[normalize-space()='Make an invite link']")).isEmpty()) {
                c.driver.findElement(By.xpath("//button[normalize-space()='Make an invite link']")).click();
                c.waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("invite-link")));
                shot(c, dir, "members-invite", Chromium.LAPTOP);
            }
            System.out.println("pages: " + String.join(", ", pages.values()));
            problems.forEach(p -> System.out.println("console: " + p));
        } finally {
            try (var walk = Files.walk(profiles)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void shot(Chromium c, Path dir, String name, Dimension size) {
        Path png = dir.resolve(name + (size.equals(Chromium.PHONE) ? "-phone" : "-laptop") + ".png");
        c.fullPageScreenshot(png, size);
        System.out.println("wrote " + png);
    }

    // ---------------------------------------------------------------------------------- HTTP

    /** A browser stand-in: cookie jar, redirects not followed, forms with the page's CSRF token. */
    static final class Http {
        final String base;
        private final HttpClient client;

        Http(String base) {
            this.base = base;
            this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .cookieHandler(new CookieManager(null, CookiePolicy.ACCEPT_ALL))
                    .followRedirects(HttpClient.Redirect.NEVER).connectTimeout(Duration.ofSeconds(5)).build();
        }

        HttpResponse<String> get(String path) {
            return send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60)).GET().build());
        }

        HttpResponse<String> submit(String page, String action, Map<String, String> form) {
            Matcher m = CSRF.matcher(get(page).body());
            if (!m.find()) throw new IllegalStateException("no CSRF token on " + page);
            Map<String, String> all = new LinkedHashMap<>(form);
            all.put("_csrf", m.group(1));
            String body = all.entrySet().stream().map(e -> URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + "="
                    + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8)).collect(Collectors.joining("&"));
            return send(HttpRequest.newBuilder(URI.create(base + action)).timeout(Duration.ofSeconds(60))
                    .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(body)).build());
        }

        /** Sets the password through a setup link; returns the member's address. */
        String join(String link, String password) {
            String page = get(link).body();
            Matcher email = Pattern.compile("<strong>([^<]+@[^<]+)</strong>").matcher(page);
            if (!email.find()) throw new IllegalStateException("not a setup page: " + link);
            String token = link.substring(link.indexOf("token=") + 6);
            HttpResponse<String> r = submit(link, "/dashboard/join", Map.of("token", token, "password", password,
                    "password_confirmation", password));
            if (r.statusCode() != 302) throw new IllegalStateException("join answered " + r.statusCode());
            return email.group(1);
        }

        void signIn(String email, String password) {
            HttpResponse<String> r = submit("/dashboard/sign-in", "/dashboard/sign-in", Map.of("email", email, "password", password));
            String to = r.headers().firstValue("Location").orElse("");
            if (!to.endsWith("/dashboard")) throw new IllegalStateException("sign-in answered " + r.statusCode() + " " + to);
        }

        private HttpResponse<String> send(HttpRequest request) {
            try {
                return client.send(request, HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }
}
