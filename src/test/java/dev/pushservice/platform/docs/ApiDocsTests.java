package dev.pushservice.platform.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ApiDocsTests extends ApiTest {

    @Test
    void contractIsServedWithoutAKey() throws IOException {
        TestApi.Response r = api.get("/openapi.yaml", null);
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("application/yaml");
        try (InputStream in = getClass().getClassLoader().getResourceAsStream("openapi.yaml")) {
            assertThat(r.body()).isEqualTo(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        assertThat(r.body()).startsWith("openapi: 3.1.0");
    }

    @Test
    void contractRouteRefusesOtherMethods() {
        TestApi.Response r = api.send(api.request("/openapi.yaml", null).DELETE());
        assertThat(r.status()).isEqualTo(405);
        assertThat(r.header("Allow").orElseThrow()).contains("GET");
    }

    /**
     * The page and everything it loads come from this server: no CDN, so the docs work offline.
     * The assets are fetched with a plain client because static files are not API operations.
     */
    @Test
    void docsPageLoadsSwaggerUiFromTheJar() throws Exception {
        TestApi.Response page = api.get("/docs", null);
        assertThat(page.status()).isEqualTo(200);
        assertThat(page.header("Content-Type").orElseThrow()).startsWith("text/html");
        assertThat(page.body()).contains("url: \"openapi.yaml\"").doesNotContain("http://").doesNotContain("https://");

        List<String> assets = new ArrayList<>();
        Matcher m = Pattern.compile("(?:src|href)=\"([^\"]+)\"").matcher(page.body());
        while (m.find()) assets.add(m.group(1));
        assertThat(assets).contains("webjars/swagger-ui/swagger-ui-bundle.js", "webjars/swagger-ui/swagger-ui.css");

        HttpClient client = HttpClient.newHttpClient();
        URI base = URI.create(api.base() + "/docs");
        for (String asset : assets) {
            HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(base.resolve(asset)).GET().build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            assertThat(r.statusCode()).as(asset).isEqualTo(200);
            assertThat(r.body().length).as(asset).isGreaterThan(100);
            String type = r.headers().firstValue("Content-Type").orElse("");
            if (asset.endsWith(".js")) assertThat(type).as(asset).contains("javascript");
            if (asset.endsWith(".css")) assertThat(type).as(asset).startsWith("text/css");
            assertThat(r.headers().firstValue("X-Request-ID")).as(asset).isPresent();
        }
    }

    @Test
    void missingWebjarFileIsNotFound() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(api.base() + "/webjars/swagger-ui/nope.js")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.body()).contains("\"not_found\"");
    }
}
