package dev.pushservice.support;

import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.dialect.Dialect;
import com.networknt.schema.dialect.Dialects;
import com.networknt.schema.keyword.NonValidationKeyword;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * Checks each test response against {@code openapi.yaml} (classpath, i.e. {@code src/main/resources}).
 *
 * <p>OpenAPI 3.1 schemas are JSON Schema 2020-12, so bodies are validated with networknt's
 * json-schema-validator in its OpenAPI 3.1 dialect, with format assertions on ({@code uuid},
 * {@code date-time}). swagger-request-validator was tried first and rejected: its draft-04 engine
 * silently accepts {@code 5} for {@code type: [string, "null"]} and ignores {@code const}.
 *
 * <p>What fails a test: no {@code X-Request-ID} (or not a UUID); a path/method/status the contract
 * does not list; a missing required header; a content type the contract does not list; a body that
 * does not match the schema, or a body where none is documented. Routes the contract cannot list
 * are held to the server's fixed answers: an unknown path may only answer 404 (or, under
 * {@code /v1}, the gate's 401/413/415, which run before routing); a known path with a method it does
 * not have may only answer 405 (or those gate errors), each in the documented error shape.
 */
public final class OpenApiContract {

    private static final String RESOURCE = "openapi.yaml";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern UUID_SHAPE =
            Pattern.compile("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$");
    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "options", "head", "patch", "trace");
    private static final Map<Integer, String> GATE_ERRORS = Map.of(
            401, "Unauthorized", 413, "PayloadTooLarge", 415, "UnsupportedMediaType");

    private static volatile OpenApiContract instance;

    private final JsonNode document;
    private final SchemaRegistry registry;
    private final List<Route> routes;
    private final Map<String, Schema> schemas = new ConcurrentHashMap<>();

    private OpenApiContract() {
        try (InputStream in = OpenApiContract.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            if (in == null) throw new IllegalStateException(RESOURCE + " is not on the classpath");
            this.document = YAMLMapper.builder().build().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        SchemaRegistryConfig config = SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build();
        // A keyword the dialect does not know is a typo in the contract (minlength, nulable), which
        // the validator would otherwise skip with a log line: fail instead. x- extensions are ours.
        Dialect strict = Dialect.builder(Dialects.getOpenApi31())
                .unknownKeywordFactory((keyword, context) -> {
                    if (keyword.startsWith("x-")) return new NonValidationKeyword(keyword);
                    throw new IllegalStateException("Unknown schema keyword '" + keyword + "' in " + RESOURCE);
                })
                .build();
        this.registry = SchemaRegistry.withDialect(strict, b -> b.schemaRegistryConfig(config));
        List<Route> found = new ArrayList<>();
        for (var entry : document.path("paths").properties()) {
            found.add(Route.of(entry.getKey(), entry.getValue()));
        }
        // A literal segment beats a template variable, as in OpenAPI and in Spring's matching.
        found.sort(Comparator.comparingInt(Route::variables).thenComparing(r -> -r.template().length()));
        this.routes = List.copyOf(found);
    }

    /** The contract read from the classpath, loaded once per JVM. */
    public static OpenApiContract get() {
        OpenApiContract c = instance;
        if (c == null) {
            synchronized (OpenApiContract.class) {
                if (instance == null) instance = new OpenApiContract();
                c = instance;
            }
        }
        return c;
    }

    /** Fails (AssertionError) when the response breaks the contract. Called by {@link TestApi} for every response. */
    public static void check(String method, URI uri, TestApi.Response response) {
        List<String> problems = get().violations(method, uri.getRawPath(), response);
        if (!problems.isEmpty()) {
            String body = response.body() == null ? "" : response.body();
            if (body.length() > 2000) body = body.substring(0, 2000) + "…";
            throw new AssertionError("Response breaks openapi.yaml: " + method + " " + uri.getRawPath() + " -> "
                    + response.status() + "\n  - " + String.join("\n  - ", problems) + "\n  body: " + body);
        }
    }

    /** The parsed contract (read-only use). */
    public JsonNode document() {
        return document;
    }

    /** Every way {@code response} to {@code method rawPath} breaks the contract; empty when it keeps it. */
    public List<String> violations(String method, String rawPath, TestApi.Response response) {
        List<String> problems = new ArrayList<>();
        Optional<String> requestId = response.header("X-Request-ID");
        if (requestId.isEmpty()) {
            problems.add("no X-Request-ID header");
        } else if (!UUID_SHAPE.matcher(requestId.get()).matches()) {
            problems.add("X-Request-ID is not a lower-case UUID: " + requestId.get());
        }
        String verb = method.toLowerCase(Locale.ROOT);
        List<Route> matching = routes.stream().filter(r -> r.matches(rawPath)).toList();
        boolean underV1 = rawPath.equals("/v1") || rawPath.startsWith("/v1/");
        if (method.equals("OPTIONS") && underV1 && response.header("Access-Control-Allow-Origin").isPresent()) {
            checkPreflight(response, problems); // not an operation: the contract describes it in its introduction (item 7)
            return problems;
        }
        if (matching.isEmpty()) {
            String fallback = response.status() == 404 ? "NotFound" : underV1 ? GATE_ERRORS.get(response.status()) : null;
            if (fallback == null) {
                problems.add("path is not in the contract, and an unknown path may only answer 404"
                        + (underV1 ? " (or 401/413/415 from the /v1 gate)" : "") + ", not " + response.status());
            } else {
                checkResponse(componentPointer(fallback), response, problems);
            }
            return problems;
        }
        Optional<Route> route = matching.stream().filter(r -> r.item().has(verb)).findFirst();
        if (route.isEmpty()) {
            String fallback = response.status() == 405 ? "MethodNotAllowed" : underV1 ? GATE_ERRORS.get(response.status()) : null;
            if (fallback == null) {
                problems.add(method + " is not an operation of " + matching.getFirst().template()
                        + ", so it may only answer 405" + (underV1 ? " (or 401/413/415 from the /v1 gate)" : "")
                        + ", not " + response.status());
            } else {
                checkResponse(componentPointer(fallback), response, problems);
            }
            return problems;
        }
        String operation = "/paths/" + escape(route.get().template()) + "/" + verb;
        JsonNode responses = node(operation + "/responses");
        String status = Integer.toString(response.status());
        if (!responses.has(status)) {
            problems.add("status " + status + " is not documented for " + method + " " + route.get().template()
                    + " (documented: " + String.join(", ", responses.propertyNames()) + ")");
            return problems;
        }
        checkResponse(operation + "/responses/" + status, response, problems);
        return problems;
    }

    /** A CORS preflight's answer, as the contract's introduction (item 7) describes it. */
    private static void checkPreflight(TestApi.Response response, List<String> problems) {
        if (response.status() != 200) problems.add("a CORS preflight answers 200, not " + response.status());
        String methods = response.header("Access-Control-Allow-Methods").orElse("");
        for (String m : List.of("GET", "POST", "PATCH", "DELETE")) {
            if (!methods.contains(m)) problems.add("a CORS preflight allows " + m + "; Access-Control-Allow-Methods: " + methods);
        }
        if (response.header("Access-Control-Max-Age").isEmpty()) problems.add("a CORS preflight has Access-Control-Max-Age");
        if (!response.body().isEmpty()) problems.add("a CORS preflight has no body");
    }

    private void checkResponse(String pointer, TestApi.Response response, List<String> problems) {
        pointer = resolve(pointer);
        JsonNode spec = node(pointer);
        for (var header : spec.path("headers").properties()) {
            String headerPointer = resolve(pointer + "/headers/" + escape(header.getKey()));
            JsonNode headerSpec = node(headerPointer);
            Optional<String> value = response.header(header.getKey());
            if (value.isEmpty()) {
                if (headerSpec.path("required").asBoolean(false)) {
                    problems.add("required header " + header.getKey() + " is missing");
                }
                continue;
            }
            JsonNode typed = headerSpec.path("schema").path("type").asString("").equals("integer")
                    && value.get().matches("-?[0-9]{1,18}")
                    ? JsonNodeFactory.instance.numberNode(Long.parseLong(value.get()))
                    : JsonNodeFactory.instance.stringNode(value.get());
            for (Error e : schema(headerPointer + "/schema").validate(typed)) {
                problems.add("header " + header.getKey() + ": " + e.getMessage());
            }
        }
        JsonNode content = spec.path("content");
        String body = response.body() == null ? "" : response.body();
        if (content.isMissingNode() || content.isEmpty()) {
            if (!body.isEmpty()) problems.add("a body is not documented for this response");
            return;
        }
        String contentType = response.header("Content-Type").orElse("");
        String mediaType = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        if (!content.has(mediaType)) {
            problems.add("Content-Type '" + contentType + "' is not documented (documented: "
                    + String.join(", ", content.propertyNames()) + ")");
            return;
        }
        String schemaPointer = pointer + "/content/" + escape(mediaType) + "/schema";
        if (node(schemaPointer).isMissingNode()) return;
        JsonNode instance;
        if (mediaType.equals("application/json") || mediaType.endsWith("+json")) {
            try {
                instance = JSON.readTree(body);
            } catch (JacksonException e) {
                problems.add("body is not JSON: " + e.getOriginalMessage());
                return;
            }
        } else {
            instance = JsonNodeFactory.instance.stringNode(body);
        }
        for (Error e : schema(schemaPointer).validate(instance)) {
            problems.add("body " + e.getInstanceLocation() + ": " + e.getMessage());
        }
    }

    /**
     * Every way {@code instance} breaks the component schema {@code name} ({@code #/components/schemas/<name>});
     * empty when it keeps it. For what the service sends rather than answers (webhook bodies).
     */
    public List<String> schemaViolations(String name, JsonNode instance) {
        String pointer = "/components/schemas/" + escape(name);
        if (node(pointer).isMissingNode()) throw new IllegalArgumentException("no schema " + name + " in " + RESOURCE);
        List<String> problems = new ArrayList<>();
        for (Error e : schema(pointer).validate(instance)) problems.add(e.getInstanceLocation() + ": " + e.getMessage());
        return problems;
    }

    /** Follows a local {@code $ref} (response or header objects) to the pointer of what it names. */
    private String resolve(String pointer) {
        for (int hops = 0; hops < 10; hops++) {
            JsonNode ref = node(pointer).path("$ref");
            if (!ref.isString()) return pointer;
            String target = ref.asString();
            if (!target.startsWith("#/")) throw new IllegalStateException("Only local $refs are supported: " + target);
            pointer = target.substring(1);
        }
        throw new IllegalStateException("$ref loop at " + pointer);
    }

    private Schema schema(String pointer) {
        return schemas.computeIfAbsent(pointer, p -> {
            // The fragment is a JSON pointer inside openapi.yaml; percent-encode what a URI fragment cannot hold ({ } in path templates).
            String fragment = URLEncoder.encode(p, StandardCharsets.UTF_8).replace("%2F", "/").replace("%7E", "~");
            Schema s = registry.getSchema(SchemaLocation.of("classpath:" + RESOURCE + "#" + fragment));
            s.initializeValidators();
            return s;
        });
    }

    /** Compiles every response and header schema of the document, so a broken schema fails even before a test reaches it. */
    public List<String> compileAll() {
        List<String> problems = new ArrayList<>();
        List<String> pointers = new ArrayList<>();
        for (var path : document.path("paths").properties()) {
            for (var op : path.getValue().properties()) {
                if (!METHODS.contains(op.getKey())) continue;
                for (var r : op.getValue().path("responses").properties()) {
                    pointers.add("/paths/" + escape(path.getKey()) + "/" + op.getKey() + "/responses/" + r.getKey());
                }
            }
        }
        for (var r : document.path("components").path("responses").properties()) {
            pointers.add(componentPointer(r.getKey()));
        }
        for (String p : pointers) {
            String resolved = resolve(p);
            try {
                for (var c : node(resolved).path("content").properties()) {
                    String sp = resolved + "/content/" + escape(c.getKey()) + "/schema";
                    if (!node(sp).isMissingNode()) schema(sp);
                }
                for (var h : node(resolved).path("headers").properties()) {
                    schema(resolve(resolved + "/headers/" + escape(h.getKey())) + "/schema");
                }
            } catch (RuntimeException e) {
                problems.add(resolved + ": " + e);
            }
        }
        return problems;
    }

    private JsonNode node(String pointer) {
        return document.at(pointer);
    }

    private static String componentPointer(String name) {
        return "/components/responses/" + name;
    }

    static String escape(String token) {
        return token.replace("~", "~0").replace("/", "~1");
    }

    private record Route(String template, Pattern pattern, int variables, JsonNode item) {

        static Route of(String template, JsonNode item) {
            StringBuilder regex = new StringBuilder("^");
            int variables = 0;
            for (String part : template.split("(?=\\{)|(?<=\\})")) {
                if (part.startsWith("{") && part.endsWith("}")) {
                    regex.append("[^/]+");
                    variables++;
                } else {
                    regex.append(Pattern.quote(part));
                }
            }
            return new Route(template, Pattern.compile(regex.append("$").toString()), variables, item);
        }

        boolean matches(String rawPath) {
            return pattern.matcher(rawPath).matches();
        }
    }
}
