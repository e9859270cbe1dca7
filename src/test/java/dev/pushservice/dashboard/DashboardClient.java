package dev.pushservice.dashboard;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.CookieManager;
import java.net.CookiePolicy;
import java.net.HttpCookie;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A browser stand-in for dashboard tests: real HTTP with a cookie jar, redirects not followed (tests
 * look at them), forms posted as {@code application/x-www-form-urlencoded} with the page's CSRF token.
 */
final class DashboardClient {

    private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

    final String base;
    final CookieManager cookies = new CookieManager(null, CookiePolicy.ACCEPT_ALL);
    private final HttpClient http;

    DashboardClient(String base) {
        this.base = base;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).cookieHandler(cookies)
                .followRedirects(HttpClient.Redirect.NEVER).connectTimeout(Duration.ofSeconds(5)).build();
    }

    HttpResponse<String> get(String path, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).GET();
        if (headers.length > 0) b.headers(headers);
        return send(b);
    }

    /** Posts {@code form} as is (add "_csrf" yourself, or use {@link #submit}). */
    HttpResponse<String> post(String path, Map<String, String> form) {
        String body = form.entrySet().stream()
                .map(e -> URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                .collect(Collectors.joining("&"));
        return send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    /** Loads {@code page}, takes its CSRF token and posts {@code form} with it to {@code action}. */
    HttpResponse<String> submit(String page, String action, Map<String, String> form) {
        Map<String, String> withToken = new LinkedHashMap<>(form);
        withToken.put("_csrf", csrf(get(page).body()));
        return post(action, withToken);
    }

    /**
     * Posts a {@code multipart/form-data} body as a browser sends a form with a file input: the text
     * fields, then the file as part {@code fileField} named {@code fileName} with its bytes as they are.
     * Add "_csrf" to {@code fields} yourself, or use {@link #upload}.
     */
    HttpResponse<String> multipart(String path, Map<String, String> fields, String fileField, String fileName, byte[] file) {
        String boundary = "----PushServiceTest" + java.util.UUID.randomUUID().toString().replace("-", "");
        java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
        for (Map.Entry<String, String> e : fields.entrySet()) {
            body.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + e.getKey() + "\"\r\n\r\n"
                    + e.getValue() + "\r\n").getBytes(StandardCharsets.UTF_8));
        }
        body.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + fileField + "\"; filename=\"" + fileName
                + "\"\r\nContent-Type: text/csv\r\n\r\n").getBytes(StandardCharsets.UTF_8));
        body.writeBytes(file);
        body.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
        return send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofMinutes(5))
                .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray())));
    }

    /** Loads {@code page}, takes its CSRF token and posts {@code fields} and the file to {@code action} as multipart. */
    HttpResponse<String> upload(String page, String action, Map<String, String> fields, String fileField, String fileName, byte[] file) {
        Map<String, String> withToken = new LinkedHashMap<>(fields);
        withToken.put("_csrf", csrf(get(page).body()));
        return multipart(action, withToken, fileField, fileName, file);
    }

    /** Signs in; returns the answer to the form (a redirect). */
    HttpResponse<String> signIn(String email, String password) {
        return submit("/dashboard/sign-in", "/dashboard/sign-in", Map.of("email", email, "password", password));
    }

    Optional<HttpCookie> sessionCookie() {
        return cookies.getCookieStore().getCookies().stream().filter(c -> c.getName().equals(DashboardSecurity.COOKIE)).findFirst();
    }

    static String csrf(String html) {
        Matcher m = CSRF.matcher(html);
        if (!m.find()) throw new AssertionError("no CSRF token in:\n" + html);
        return m.group(1);
    }

    static String location(HttpResponse<?> response) {
        return response.headers().firstValue("Location").orElseThrow(() -> new AssertionError("no redirect: " + response.statusCode()))
                .replaceFirst("^https?://[^/]+", "");
    }

    private HttpResponse<String> send(HttpRequest.Builder builder) {
        try {
            return http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
