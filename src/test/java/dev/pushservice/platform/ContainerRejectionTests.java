package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Requests the servlet container refuses before any of our code runs still get {@code X-Request-ID}
 * and the spec's error shape, never Tomcat's HTML page. Sent over a raw socket: {@code java.net.http}
 * refuses to send them.
 */
class ContainerRejectionTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String UUID_SHAPE = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";

    record RawResponse(int status, Map<String, String> headers, String body) {
        JsonNode json() {
            return JSON.readTree(body);
        }
    }

    @Test
    void nulInThePathIsAJsonError() throws IOException {
        assertShapedError(send("GET /v1/users/a%00b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void malformedPercentEscapeInThePathIsAJsonError() throws IOException {
        assertShapedError(send("GET /v1/devices/%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
        assertShapedError(send("GET /v1/users/abc%2 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void aPathThatIsNotUtf8IsAJsonError() throws IOException {
        // a surrogate encoded on its own (CESU-8) is not UTF-8: Tomcat refuses the path before routing
        assertShapedError(send("GET /v1/users/a%ED%A0%80b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
        assertShapedError(send("GET /v1/users/a%FFb HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void aPathAboveTheRootIsAJsonError() throws IOException {
        assertShapedError(send("GET /v1/../../etc/passwd HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void aHeaderSectionOverTheLimitIsAJsonError() throws IOException {
        String big = "X-Filler: " + "a".repeat(64 * 1024) + "\r\n";
        assertShapedError(send("GET /health HTTP/1.1\r\nHost: localhost\r\n" + big + "Connection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void aBadRequestLineIsAJsonError() throws IOException {
        assertShapedError(send("G@T /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
        assertShapedError(send("GET /he alth HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void anInvalidHostHeaderIsAJsonError() throws IOException {
        assertShapedError(send("GET /health HTTP/1.1\r\nHost: bad host\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
    }

    @Test
    void anUnsupportedHttpVersionIsAJsonError() throws IOException {
        RawResponse r = send("GET /health HTTP/1.7\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        assertShapedError(r, 505, "malformed_request");
    }

    @Test
    void aMalformedQueryStringIsAJsonErrorNeverA500() throws IOException {
        TestApp app = newApp();
        for (String query : new String[] {"limit=%zz", "page=%", "platform=%ED%A0%80", "a=%00&limit=5"}) {
            RawResponse r = send("GET /v1/devices?" + query + " HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + app.serverKey()
                    + "\r\nConnection: close\r\n\r\n");
            assertThat(r.status()).as(query + " -> " + r).isIn(400, 422);
            assertShapedError(r, r.status(), r.status() == 400 ? "malformed_request" : "validation_failed");
        }
    }

    @Test
    void aValidClientRequestIdIsEchoedOnARefusedRequest() throws IOException {
        String id = UUID.randomUUID().toString();
        RawResponse r = send("GET /v1/devices/%zz HTTP/1.1\r\nHost: localhost\r\nX-Request-ID: " + id + "\r\nConnection: close\r\n\r\n");
        assertShapedError(r, 400, "malformed_request");
        assertThat(r.headers().get("x-request-id")).isEqualTo(id);
    }

    private static void assertShapedError(RawResponse r, int status, String code) {
        assertThat(r.status()).as(r.toString()).isEqualTo(status);
        assertThat(r.headers().get("content-type")).as(r.toString()).startsWith("application/json");
        String id = r.headers().get("x-request-id");
        assertThat(id).as(r.toString()).isNotNull().matches("[0-9a-f-]{36}");
        JsonNode body = r.json();
        assertThat(body.path("error").path("code").asString()).as(r.toString()).isEqualTo(code);
        assertThat(body.path("error").path("message").asString()).isNotBlank();
        assertThat(body.path("error").path("details").isArray()).isTrue();
        assertThat(body.path("request_id").asString()).isEqualTo(id);
        assertThat(body.size()).isEqualTo(2);
    }

    private RawResponse send(String request) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            socket.shutdownOutput();
            return parse(socket.getInputStream().readAllBytes());
        }
    }

    /** An HTTP/1.1 response: status line, headers (names lower-cased), body (de-chunked). */
    static RawResponse parse(byte[] raw) {
        String text = new String(raw, StandardCharsets.UTF_8);
        int end = text.indexOf("\r\n\r\n");
        assertThat(end).as(text).isPositive();
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        String body = text.substring(end + 4);
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) body = dechunk(body);
        return new RawResponse(status, headers, body);
    }

    private static String dechunk(String chunked) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = 0;
        while (true) {
            int lineEnd = chunked.indexOf("\r\n", at);
            int size = Integer.parseInt(chunked.substring(at, lineEnd).split(";")[0].trim(), 16);
            if (size == 0) break;
            out.writeBytes(chunked.substring(lineEnd + 2, lineEnd + 2 + size).getBytes(StandardCharsets.UTF_8));
            at = lineEnd + 2 + size + 2;
        }
        return out.toString(StandardCharsets.UTF_8);
    }

}
