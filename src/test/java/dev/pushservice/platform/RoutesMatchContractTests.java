package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.OpenApiContract;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import tools.jackson.databind.JsonNode;

/**
 * The routes the running app serves and the operations openapi.yaml lists are the same set, and
 * every {@code /v1} handler declares its scope with {@link Authorize} as the contract's
 * {@code x-scope} says. Read from the real handler mapping, so a new controller cannot slip by.
 */
class RoutesMatchContractTests extends ApiTest {

    /** Where the servlet container forwards its own errors; not an API route. */
    private static final Set<String> INTERNAL = Set.of("/error");

    /**
     * The dashboard's pages (HTML for signed-in members, docs/dashboard.md) are not API operations:
     * they are left out of the comparison, and {@link #dashboardPagesAreOnlyUnderDashboardAndOnlyThere}
     * keeps that from hiding anything else.
     */
    private static final String DASHBOARD_PACKAGE = "dev.pushservice.dashboard";

    @Autowired
    @Qualifier("requestMappingHandlerMapping")
    private RequestMappingHandlerMapping mapping;

    @Test
    void everyV1HandlerCarriesAuthorize() {
        Map<String, HandlerMethod> v1 = new TreeMap<>();
        handlerRoutes().forEach((route, handler) -> {
            if (route.contains(" /v1/")) v1.put(route, handler);
        });
        assertThat(v1).as("the app serves /v1 routes").isNotEmpty();
        List<String> bare = v1.entrySet().stream()
                .filter(e -> !e.getValue().hasMethodAnnotation(Authorize.class))
                .map(e -> e.getKey() + " -> " + e.getValue().getShortLogMessage())
                .toList();
        assertThat(bare).as("/v1 handlers without @Authorize").isEmpty();
    }

    @Test
    void everyServedRouteIsAnImplementedOperationOfTheContract() {
        Map<String, JsonNode> operations = contractOperations();
        List<String> problems = new ArrayList<>();
        for (String route : handlerRoutes().keySet()) {
            JsonNode op = operations.get(route);
            if (op == null) problems.add(route + " is served but not in openapi.yaml");
            else if (!op.path("x-implemented").asBoolean(true)) problems.add(route + " is served but marked x-implemented: false");
        }
        assertThat(problems).isEmpty();
    }

    @Test
    void everyImplementedOperationIsServed() {
        Set<String> served = handlerRoutes().keySet();
        List<String> missing = new ArrayList<>();
        contractOperations().forEach((route, op) -> {
            if (!op.path("x-implemented").asBoolean(true) || served.contains(route)) return;
            // actuator endpoints live in their own handler mapping: prove them with a real request instead
            if (op.path("x-served-by").asString("").equals("actuator") && route.startsWith("GET ")) {
                if (api.get(route.substring(4), null).status() == 200) return;
            }
            missing.add(route);
        });
        assertThat(missing).as("operations without x-implemented: false that no handler serves").isEmpty();
    }

    @Test
    void authorizeMatchesTheContractScope() {
        Map<String, JsonNode> operations = contractOperations();
        List<String> problems = new ArrayList<>();
        handlerRoutes().forEach((route, handler) -> {
            Authorize rule = handler.getMethodAnnotation(Authorize.class);
            JsonNode op = operations.get(route);
            if (rule == null || op == null) return; // reported by the tests above
            if (!rule.value().value().equals(op.path("x-scope").asString(""))) {
                problems.add(route + ": @Authorize " + rule.value().value() + " but x-scope " + op.path("x-scope").asString(""));
            }
            if (rule.publicKeyAllowed() != op.path("x-public-key-allowed").asBoolean(false)) {
                problems.add(route + ": publicKeyAllowed " + rule.publicKeyAllowed() + " disagrees with x-public-key-allowed");
            }
        });
        assertThat(problems).isEmpty();
    }

    @Test
    void dashboardPagesAreOnlyUnderDashboardAndOnlyThere() {
        List<String> problems = new ArrayList<>();
        int pages = 0;
        for (Map.Entry<RequestMappingInfo, HandlerMethod> e : mapping.getHandlerMethods().entrySet()) {
            boolean dashboardHandler = isDashboard(e.getValue());
            for (String path : e.getKey().getPatternValues()) {
                boolean dashboardPath = path.equals("/dashboard") || path.startsWith("/dashboard/");
                if (dashboardHandler) pages++;
                if (dashboardHandler != dashboardPath) problems.add(path + " -> " + e.getValue().getShortLogMessage());
            }
        }
        assertThat(pages).as("the dashboard serves pages").isPositive();
        assertThat(problems).as("dashboard handlers outside /dashboard, or other handlers inside it").isEmpty();
    }

    private static boolean isDashboard(HandlerMethod handler) {
        return handler.getBeanType().getPackageName().equals(DASHBOARD_PACKAGE);
    }

    /** "METHOD /path/{var}" of every API handler, with Spring's variable names (which must equal the contract's). */
    private Map<String, HandlerMethod> handlerRoutes() {
        Map<String, HandlerMethod> routes = new TreeMap<>();
        for (Map.Entry<RequestMappingInfo, HandlerMethod> e : mapping.getHandlerMethods().entrySet()) {
            if (isDashboard(e.getValue())) continue;
            Set<RequestMethod> methods = e.getKey().getMethodsCondition().getMethods();
            for (String path : e.getKey().getPatternValues()) {
                if (INTERNAL.contains(path)) continue;
                assertThat(methods).as("%s maps every HTTP method; declare the methods it answers", path).isNotEmpty();
                for (RequestMethod m : methods) routes.put(m.name() + " " + path, e.getValue());
            }
        }
        return routes;
    }

    private static Map<String, JsonNode> contractOperations() {
        Map<String, JsonNode> operations = new TreeMap<>();
        Set<String> verbs = new TreeSet<>(List.of("get", "put", "post", "delete", "patch", "head", "options", "trace"));
        OpenApiContract.get().document().path("paths").properties().forEach(path ->
                path.getValue().properties().forEach(op -> {
                    if (verbs.contains(op.getKey())) {
                        operations.put(op.getKey().toUpperCase(Locale.ROOT) + " " + path.getKey(), op.getValue());
                    }
                }));
        return operations;
    }
}
