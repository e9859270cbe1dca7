package dev.pushservice.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The checker must reject what breaks the contract, or every API test would pass vacuously. Each
 * case feeds {@link OpenApiContract} a hand-made response to a real operation of openapi.yaml.
 * The last tests hold the document itself to the project's rules.
 */
class OpenApiContractTests {

    private static final OpenApiContract CONTRACT = OpenApiContract.get();
    private static final tools.jackson.databind.json.JsonMapper JSON = tools.jackson.databind.json.JsonMapper.builder().build();
    private static final String SETTINGS = "{\"name\":\"My app\",\"timezone\":\"Europe/Berlin\","
            + "\"identity_verification\":{\"required\":false,\"issuer\":null,\"keys\":[]},\"apns\":null,\"fcm\":null,"
            + "\"webpush\":{\"vapid_public_key\":\"" + "B".repeat(87) + "\"},"
            + "\"notification_defaults\":{\"ttl\":null,\"sound\":null,\"interruption_level\":null,\"priority\":null},"
            + "\"frequency_cap\":null,\"quiet_hours\":null,\"throttle_per_minute\":null}";
    private static final String DEVICE = """
            {"device_id":"%s","platform":"ios","enabled":true,"invalidated_at":null,"external_user_id":%s,
             "app_version":"1.2","device_model":null,"os_version":null,"locale":"de-DE","timezone":"Europe/Berlin",
             "tags":{"plan":"pro"},"last_seen_at":"2025-01-02T03:04:05Z","created_at":%s,
             "updated_at":"2025-01-02T03:04:05.123Z","migrated_from":null}""";

    @Test
    void acceptsResponseThatKeepsTheContract() {
        assertThat(violations("GET", "/v1/app/settings", json(200, SETTINGS))).isEmpty();
        assertThat(violations("PATCH", "/v1/app/settings", json(200, SETTINGS))).isEmpty();
    }

    @Test
    void rejectsWrongFieldType() {
        assertThat(violations("GET", "/v1/app/settings", json(200, SETTINGS.replace("\"My app\"", "5"))))
                .anySatisfy(p -> assertThat(p).contains("/name"));
    }

    @Test
    void rejectsMissingRequiredField() {
        assertThat(violations("GET", "/v1/app/settings", json(200, SETTINGS.replace(",\"timezone\":\"Europe/Berlin\"", ""))))
                .anySatisfy(p -> assertThat(p).contains("timezone"));
    }

    @Test
    void rejectsUndocumentedField() {
        assertThat(violations("GET", "/v1/app/settings",
                json(200, SETTINGS.replace("{\"name\"", "{\"secret\":\"x\",\"name\""))))
                .anySatisfy(p -> assertThat(p).contains("secret"));
    }

    @Test
    void rejectsUndocumentedStatus() {
        assertThat(violations("GET", "/v1/app/settings", json(201, SETTINGS)))
                .anySatisfy(p -> assertThat(p).contains("status 201 is not documented"));
        assertThat(violations("PATCH", "/v1/app/settings", error(409, "conflict")))
                .anySatisfy(p -> assertThat(p).contains("status 409 is not documented"));
    }

    @Test
    void rejectsMissingOrInvalidRequestId() {
        TestApi.Response noId = new TestApi.Response(200, Map.of("Content-Type", List.of("application/json")), SETTINGS);
        assertThat(violations("GET", "/v1/app/settings", noId)).contains("no X-Request-ID header");
        TestApi.Response badId = new TestApi.Response(200, Map.of("Content-Type", List.of("application/json"),
                "X-Request-ID", List.of("not-a-uuid")), SETTINGS);
        assertThat(violations("GET", "/v1/app/settings", badId)).isNotEmpty();
    }

    @Test
    void rejectsBodyWithUndocumentedContentType() {
        TestApi.Response text = response(200, "text/plain", SETTINGS);
        assertThat(violations("GET", "/v1/app/settings", text))
                .anySatisfy(p -> assertThat(p).contains("Content-Type 'text/plain' is not documented"));
        assertThat(violations("GET", "/v1/app/settings", json(200, "{\"name\":"))).anySatisfy(p -> assertThat(p).contains("not JSON"));
    }

    @Test
    void unknownPathMayOnlyAnswerNotFound() {
        assertThat(violations("GET", "/v1/nothing", json(200, SETTINGS)))
                .anySatisfy(p -> assertThat(p).contains("path is not in the contract"));
        assertThat(violations("GET", "/v1/nothing", error(404, "not_found"))).isEmpty();
        assertThat(violations("GET", "/v1/nothing", error(401, "unauthorized", "WWW-Authenticate", "Bearer"))).isEmpty();
        assertThat(violations("GET", "/nothing", error(401, "unauthorized", "WWW-Authenticate", "Bearer"))).isNotEmpty();
        assertThat(violations("GET", "/v1/nothing", error(404, "forbidden"))).isNotEmpty();
    }

    @Test
    void undocumentedMethodMayOnlyAnswerMethodNotAllowed() {
        assertThat(violations("PUT", "/v1/app/settings", json(200, SETTINGS)))
                .anySatisfy(p -> assertThat(p).contains("PUT is not an operation"));
        assertThat(violations("PUT", "/v1/app/settings", error(405, "method_not_allowed", "Allow", "GET, PATCH"))).isEmpty();
        assertThat(violations("PUT", "/v1/app/settings", error(405, "method_not_allowed")))
                .contains("required header Allow is missing");
    }

    @Test
    void rejectsMissingRequiredHeaders() {
        assertThat(violations("GET", "/v1/app/settings", error(401, "unauthorized")))
                .contains("required header WWW-Authenticate is missing");
        assertThat(violations("GET", "/v1/app/settings", error(429, "rate_limited", "RateLimit", "\"app\";r=0;t=1",
                "RateLimit-Policy", "\"app\";q=1;w=1")))
                .contains("required header Retry-After is missing");
        assertThat(violations("GET", "/v1/app/settings", error(429, "rate_limited", "Retry-After", "soon",
                "RateLimit", "\"app\";r=0;t=1", "RateLimit-Policy", "\"app\";q=1;w=1")))
                .anySatisfy(p -> assertThat(p).startsWith("header Retry-After"));
        assertThat(violations("GET", "/v1/app/settings", error(429, "rate_limited", "Retry-After", "3",
                "RateLimit", "\"app\";r=0;t=1", "RateLimit-Policy", "\"app\";q=1;w=1"))).isEmpty();
    }

    @Test
    void errorCodeMustMatchTheStatus() {
        assertThat(violations("GET", "/v1/app/settings", error(403, "forbidden"))).isEmpty();
        assertThat(violations("GET", "/v1/app/settings", error(403, "unauthorized")))
                .anySatisfy(p -> assertThat(p).contains("/error/code"));
    }

    @Test
    void errorShapeIsEnforced() {
        String noDetails = "{\"error\":{\"code\":\"forbidden\",\"message\":\"no\"},\"request_id\":\"" + UUID.randomUUID() + "\"}";
        assertThat(violations("GET", "/v1/app/settings", json(403, noDetails))).anySatisfy(p -> assertThat(p).contains("details"));
        String badRequestId = "{\"error\":{\"code\":\"forbidden\",\"message\":\"no\",\"details\":[]},\"request_id\":\"abc\"}";
        assertThat(violations("GET", "/v1/app/settings", json(403, badRequestId))).anySatisfy(p -> assertThat(p).contains("request_id"));
        String detailWithoutMessage = "{\"error\":{\"code\":\"validation_failed\",\"message\":\"bad\",\"details\":[{\"field\":\"name\"}]},"
                + "\"request_id\":\"" + UUID.randomUUID() + "\"}";
        assertThat(violations("PATCH", "/v1/app/settings", json(422, detailWithoutMessage))).isNotEmpty();
    }

    /** OpenAPI 3.1 specifics a draft-04 validator ignores: type arrays with "null", const, formats. */
    @Test
    void openApi31KeywordsAreEnforced() {
        String id = UUID.randomUUID().toString();
        String path = "/v1/devices/" + id;
        String good = DEVICE.formatted(id, "null", "\"2025-01-01T00:00:00Z\"");
        assertThat(violations("GET", path, json(200, good))).isEmpty();
        assertThat(violations("GET", path, json(200, DEVICE.formatted(id, "\"user-1\"", "\"2025-01-01T00:00:00Z\"")))).isEmpty();
        assertThat(violations("GET", path, json(200, DEVICE.formatted(id, "5", "\"2025-01-01T00:00:00Z\""))))
                .anySatisfy(p -> assertThat(p).contains("/external_user_id"));
        assertThat(violations("GET", path, json(200, DEVICE.formatted(id, "null", "null"))))
                .anySatisfy(p -> assertThat(p).contains("/created_at"));
        assertThat(violations("GET", path, json(200, DEVICE.formatted(id, "null", "\"yesterday\""))))
                .anySatisfy(p -> assertThat(p).contains("/created_at"));
        assertThat(violations("GET", path, json(200, DEVICE.formatted("not-a-uuid", "null", "\"2025-01-01T00:00:00Z\""))))
                .anySatisfy(p -> assertThat(p).contains("/device_id"));
        String deletion = "{\"template_id\":\"" + id + "\",\"deleted\":%s,\"status\":\"archived\",\"version\":2}";
        assertThat(violations("DELETE", "/v1/templates/" + id, json(200, deletion.formatted("true")))).isEmpty();
        assertThat(violations("DELETE", "/v1/templates/" + id, json(200, deletion.formatted("false"))))
                .anySatisfy(p -> assertThat(p).contains("/deleted"));
    }

    @Test
    void literalPathWinsOverTemplateAndEncodedValuesMatch() {
        String estimate = "{\"estimated_recipients\":3,\"exact\":true}";
        assertThat(violations("POST", "/v1/segments/estimate", json(200, estimate))).isEmpty();
        assertThat(violations("GET", "/v1/users/a%2Fb%20c", error(404, "not_found"))).isEmpty();
    }

    @Test
    void everyResponseSchemaCompiles() {
        assertThat(CONTRACT.compileAll()).isEmpty();
    }

    /** The journey kinds' webhook bodies: what the service sends is held to the contract too. */
    @Test
    void journeyLifecycleEventBodiesAreChecked() {
        String id = UUID.randomUUID().toString();
        String body = "{\"type\":\"journey.execution.failed\",\"timestamp\":\"2026-11-26T10:00:00.123Z\",\"data\":"
                + "{\"journey_id\":\"" + id + "\",\"version\":1,\"execution_id\":\"" + id + "\",\"user_id\":\"" + id + "\","
                + "\"external_user_id\":null,\"node_id\":\"a\",\"reason\":\"user_deleted\"}}";
        assertThat(CONTRACT.schemaViolations("JourneyLifecycleEvent", JSON.readTree(body))).isEmpty();
        assertThat(CONTRACT.schemaViolations("JourneyLifecycleEvent", JSON.readTree(body.replace("user_deleted", "tired")))).isNotEmpty();
        assertThat(CONTRACT.schemaViolations("JourneyLifecycleEvent",
                JSON.readTree(body.replace("journey.execution.failed", "journey.execution.completed")))).isNotEmpty();
        assertThat(CONTRACT.schemaViolations("JourneyLifecycleEvent",
                JSON.readTree(body.replace("\"version\":1,", "\"version\":1,\"token\":\"x\",")))).isNotEmpty();
    }

    @Test
    void everyLocalReferenceResolves() {
        List<String> broken = new ArrayList<>();
        walk(CONTRACT.document(), node -> {
            JsonNode ref = node.path("$ref");
            if (ref.isString() && (!ref.asString().startsWith("#/") || CONTRACT.document().at(ref.asString().substring(1)).isMissingNode())) {
                broken.add(ref.asString());
            }
        });
        assertThat(broken).isEmpty();
    }

    @Test
    void everyResponseDeclaresRequestId() {
        List<String> missing = new ArrayList<>();
        forEachOperation((path, method, op) -> op.path("responses").properties().forEach(r -> {
            JsonNode response = deref(r.getValue());
            if (!response.path("headers").has("X-Request-ID")) missing.add(method + " " + path + " " + r.getKey());
        }));
        CONTRACT.document().path("components").path("responses").properties().forEach(r -> {
            if (!r.getValue().path("headers").has("X-Request-ID")) missing.add("components/responses/" + r.getKey());
        });
        assertThat(missing).isEmpty();
    }

    /** The request path's errors, in the order the gate and interceptor raise them, are documented everywhere they can occur. */
    @Test
    void everyV1OperationDocumentsTheRequestPathErrors() {
        List<String> problems = new ArrayList<>();
        forEachOperation((path, method, op) -> {
            if (!path.startsWith("/v1/")) {
                if (!op.path("security").isArray() || !op.path("security").isEmpty()) problems.add(method + " " + path + " must have security: []");
                return;
            }
            Set<String> statuses = Set.copyOf(op.path("responses").propertyNames());
            for (String s : List.of("401", "403", "429", "500", "503")) {
                if (!statuses.contains(s)) problems.add(method + " " + path + " lacks " + s);
            }
            if (op.has("requestBody")) {
                for (String s : List.of("400", "413", "415", "422")) {
                    if (!statuses.contains(s)) problems.add(method + " " + path + " (has a body) lacks " + s);
                }
            }
            if (path.contains("{") && !statuses.contains("404")) problems.add(method + " " + path + " lacks 404");
            String scope = op.path("x-scope").asString("");
            if (!Set.of("devices:write", "notifications:write", "notifications:read", "events:write").contains(scope)) {
                problems.add(method + " " + path + " has no valid x-scope");
            }
            if (!op.has("operationId")) problems.add(method + " " + path + " has no operationId");
        });
        assertThat(problems).isEmpty();
    }

    private static List<String> violations(String method, String path, TestApi.Response response) {
        return CONTRACT.violations(method, path, response);
    }

    private static TestApi.Response json(int status, String body) {
        return response(status, "application/json", body);
    }

    private static TestApi.Response response(int status, String contentType, String body, String... headers) {
        Map<String, List<String>> map = new LinkedHashMap<>();
        map.put("Content-Type", List.of(contentType));
        map.put("X-Request-ID", List.of(UUID.randomUUID().toString()));
        for (int i = 0; i < headers.length; i += 2) map.put(headers[i], List.of(headers[i + 1]));
        return new TestApi.Response(status, map, body);
    }

    private static TestApi.Response error(int status, String code, String... headers) {
        String body = "{\"error\":{\"code\":\"" + code + "\",\"message\":\"m\",\"details\":[]},\"request_id\":\""
                + UUID.randomUUID() + "\"}";
        return response(status, "application/json", body, headers);
    }

    private static JsonNode deref(JsonNode node) {
        JsonNode ref = node.path("$ref");
        return ref.isString() ? CONTRACT.document().at(ref.asString().substring(1)) : node;
    }

    private interface OperationVisitor {
        void visit(String path, String method, JsonNode operation);
    }

    private static void forEachOperation(OperationVisitor visitor) {
        CONTRACT.document().path("paths").properties().forEach(p -> p.getValue().properties().forEach(op -> {
            if (Set.of("get", "post", "put", "patch", "delete").contains(op.getKey())) {
                visitor.visit(p.getKey(), op.getKey().toUpperCase(java.util.Locale.ROOT), op.getValue());
            }
        }));
    }

    private static void walk(JsonNode node, java.util.function.Consumer<JsonNode> visitor) {
        visitor.accept(node);
        if (node.isContainer()) node.forEach(child -> walk(child, visitor));
    }
}
