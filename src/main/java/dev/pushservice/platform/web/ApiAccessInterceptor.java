package dev.pushservice.platform.web;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.error.ErrorCode;
import dev.pushservice.platform.error.ErrorDetail;
import dev.pushservice.platform.json.StorableText;
import dev.pushservice.platform.json.Utf8;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.ratelimit.RateLimiter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.MethodParameter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.util.WebUtils;
import tools.jackson.databind.json.JsonMapper;

/**
 * Scope (403), then rate limit (429), then a query parameter the route reads given twice (422), then a body that is not UTF-8 (400, {@link Utf8}), then the one text rule ({@link StorableText}: no U+0000 or
 * unpaired surrogate in any body string or key, query parameter or path value; 422 naming each) for
 * the matched {@code /v1} handler, before the route reads anything. Every answer, refused or not,
 * carries {@code RateLimit-Policy} and {@code RateLimit} (draft-ietf-httpapi-ratelimit-headers).
 */
@Component
class ApiAccessInterceptor implements HandlerInterceptor {

    private static final Logger log = LoggerFactory.getLogger(ApiAccessInterceptor.class);

    private final RateLimiter rateLimiter;
    /** {@code RateLimit-Policy}: the same on every answer (the configured buckets). */
    private final String policy;
    private final JsonMapper json;

    ApiAccessInterceptor(RateLimiter rateLimiter, JsonMapper json) {
        this.rateLimiter = rateLimiter;
        this.policy = rateLimiter.quotas().stream()
                .map(q -> "\"" + q.name() + "\";q=" + q.quota() + ";w=" + q.windowSeconds())
                .collect(Collectors.joining(", "));
        this.json = json;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        if (!(handler instanceof HandlerMethod method)) return true;
        ApiPrincipal principal = (ApiPrincipal) request.getAttribute(ApiGateFilter.PRINCIPAL_ATTRIBUTE);
        if (principal == null) return true; // not a /v1 route
        Authorize rule = method.getMethodAnnotation(Authorize.class);
        if (rule == null && HttpMethod.OPTIONS.matches(request.getMethod())) {
            // Spring's implicit OPTIONS answer for a known path: the contract has no OPTIONS operations
            throw methodNotAllowed(request, method);
        }
        if (rule == null) {
            log.error("Handler {} has no @Authorize; refusing", method.getShortLogMessage());
            throw new ApiException(ErrorCode.FORBIDDEN, "This route is not available to API keys");
        }
        if (principal.kind() == KeyKind.PUBLIC && !rule.publicKeyAllowed()) {
            throw new ApiException(ErrorCode.FORBIDDEN,
                    "A public client key cannot call this route; use a server key with scope " + rule.value().value());
        }
        if (!principal.has(rule.value())) {
            throw new ApiException(ErrorCode.FORBIDDEN, "This API key lacks the scope " + rule.value().value());
        }
        RateLimiter.Decision decision = rateLimiter.tryAcquire(principal.orgId(), principal.appId());
        writeHeaders(response, decision);
        if (!decision.allowed()) {
            String which = decision.org() != null ? "organisation" : "app";
            throw new ApiException(ErrorCode.RATE_LIMITED,
                    "Rate limit exceeded for this " + which + "; retry after " + decision.retryAfterSeconds() + " s",
                    List.of(), Map.of("Retry-After", Long.toString(decision.retryAfterSeconds())));
        }
        refuseUnacceptable(request, method);
        refuseRepeatedParameters(request, method);
        refuseUnstorableText(request);
        return true;
    }

    /**
     * A route that answers JSON, asked for by a client that refuses JSON: 406 before the route runs.
     * Spring negotiates only when it writes the answer, after the route has run, so a create with
     * {@code Accept: text/plain} created its notification and then answered an empty 406 (a client
     * retrying with a new key would have sent it twice). Routes that write their own answer (the CSV
     * download) return nothing and are left to choose.
     */
    private static void refuseUnacceptable(HttpServletRequest request, HandlerMethod method) {
        if (method.isVoid()) return;
        List<String> accept = java.util.Collections.list(request.getHeaders(HttpHeaders.ACCEPT));
        if (accept.isEmpty()) return;
        boolean json;
        try {
            json = MediaType.parseMediaTypes(accept).stream()
                    .anyMatch(type -> type.getQualityValue() > 0 && type.isCompatibleWith(MediaType.APPLICATION_JSON));
        } catch (InvalidMediaTypeException e) {
            json = false;
        }
        if (!json) throw new ApiException(ErrorCode.NOT_ACCEPTABLE, "This route answers with application/json");
    }

    /** 405 with {@code Allow} for OPTIONS, listing the path's operations as every other 405 does. */
    private static ApiException methodNotAllowed(HttpServletRequest request, HandlerMethod options) {
        String allowed = "";
        try {
            java.lang.reflect.Method handle = options.getMethod();
            ReflectionUtils.makeAccessible(handle);
            if (handle.invoke(options.getBean()) instanceof HttpHeaders headers) {
                allowed = headers.getAllow().stream().map(HttpMethod::name)
                        .filter(m -> !m.equals("OPTIONS") && !m.equals("HEAD")).sorted()
                        .collect(Collectors.joining(", "));
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.debug("Could not list the methods of {}", request.getRequestURI(), e);
        }
        return new ApiException(ErrorCode.METHOD_NOT_ALLOWED,
                "Method OPTIONS is not allowed here; allowed: " + allowed, List.of(), Map.of(HttpHeaders.ALLOW, allowed));
    }

    /**
     * A query parameter the route reads, given more than once ({@code ?limit=10&limit=500}): a 422
     * naming it. Spring would take the first ({@code page}, {@code limit}) or join them with a comma
     * ({@code days=7,30}, then "must be an integer"), so the client could not tell which value counted.
     * Parameters a route does not read stay ignored, repeated or not.
     */
    private static void refuseRepeatedParameters(HttpServletRequest request, HandlerMethod method) {
        List<ErrorDetail> details = new ArrayList<>();
        for (String name : queryParameters(method)) {
            String[] values = request.getParameterValues(name);
            if (values != null && values.length > 1) details.add(new ErrorDetail(name, "must be given at most once"));
        }
        if (!details.isEmpty()) throw new ApiException(ErrorCode.VALIDATION_FAILED, "Request validation failed", details);
    }

    /** The query parameters a route reads: its {@code @RequestParam}s, and {@code page} and {@code limit} for a list. */
    private static List<String> queryParameters(HandlerMethod method) {
        List<String> names = new ArrayList<>();
        for (MethodParameter p : method.getMethodParameters()) {
            if (p.getParameterType() == PageRequest.class) names.addAll(List.of("page", "limit"));
            RequestParam param = p.getParameterAnnotation(RequestParam.class);
            if (param == null) continue;
            if (!param.name().isEmpty()) names.add(param.name());
            else if (!param.value().isEmpty()) names.add(param.value());
            else names.add(p.getParameter().getName());
        }
        return names;
    }

    private void refuseUnstorableText(HttpServletRequest request) {
        List<ErrorDetail> details = new ArrayList<>();
        request.getParameterMap().forEach((name, values) -> {
            boolean storable = StorableText.isStorable(name);
            for (String value : values) storable &= StorableText.isStorable(value);
            if (!storable) details.add(new ErrorDetail(StorableText.printable(name), StorableText.MESSAGE));
        });
        if (request.getAttribute(HandlerMapping.URI_TEMPLATE_VARIABLES_ATTRIBUTE) instanceof Map<?, ?> variables) {
            variables.forEach((name, value) -> {
                if (value instanceof String s && !StorableText.isStorable(s)) {
                    details.add(new ErrorDetail(String.valueOf(name), StorableText.MESSAGE));
                }
            });
        }
        BufferedBodyRequest body = WebUtils.getNativeRequest(request, BufferedBodyRequest.class);
        if (body != null && !Utf8.isValid(body.body())) {
            throw new ApiException(ErrorCode.MALFORMED_REQUEST, "Request body is not UTF-8 (JSON must be sent as UTF-8)");
        }
        if (body != null) details.addAll(StorableText.check(json, body.body()));
        if (!details.isEmpty()) {
            throw new ApiException(ErrorCode.VALIDATION_FAILED, "Request validation failed", details);
        }
    }

    private void writeHeaders(HttpServletResponse response, RateLimiter.Decision decision) {
        RateLimiter.Window binding = decision.binding();
        if (binding == null) return;
        // both buckets, also on a 429 from the app's (the organisation's was not looked at then)
        response.setHeader("RateLimit-Policy", policy);
        response.setHeader("RateLimit", "\"" + binding.name() + "\";r=" + binding.remaining() + ";t=" + binding.resetSeconds());
    }
}
