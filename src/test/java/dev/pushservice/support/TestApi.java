package dev.pushservice.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A real HTTP client for the running app. Every response it returns has been checked against
 * {@code src/main/resources/openapi.yaml} by {@link OpenApiContract}; a response the contract
 * does not describe fails the test.
 */
public final class TestApi {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private final String base;

    public TestApi(String base) {
        this.base = base;
    }

    public String base() {
        return base;
    }

    public Response get(String path, String key) {
        return send(request(path, key).GET());
    }

    public Response post(String path, String key, String json) {
        return send(request(path, key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    public Response patch(String path, String key, String json) {
        return send(request(path, key).header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofString(json)));
    }

    public Response delete(String path, String key) {
        return send(request(path, key).DELETE());
    }

    public Response delete(String path, String key, String json) {
        return send(request(path, key).header("Content-Type", "application/json")
                .method("DELETE", HttpRequest.BodyPublishers.ofString(json)));
    }

    /** A request builder for {@code path} with the key (if any) already set; send it with {@link #send}. */
    public HttpRequest.Builder request(String path, String key) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30));
        if (key != null) b.header("Authorization", "Bearer " + key);
        return b;
    }

    public Response send(HttpRequest.Builder builder) {
        HttpRequest request = builder.build();
        try {
            HttpResponse<String> r = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
            Response response = new Response(r.statusCode(), r.headers().map(), r.body());
            OpenApiContract.check(request.method(), request.uri(), response);
            return response;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public record Response(int status, java.util.Map<String, List<String>> headers, String body) {

        public Optional<String> header(String name) {
            return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name))
                    .flatMap(e -> e.getValue().stream()).findFirst();
        }

        public JsonNode json() {
            return JSON.readTree(body);
        }

        /** {@code error.code} of an error response. */
        public String errorCode() {
            return json().path("error").path("code").asString();
        }

        @Override
        public String toString() {
            return status + " " + body;
        }
    }
}
