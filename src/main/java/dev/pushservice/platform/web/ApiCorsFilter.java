package dev.pushservice.platform.web;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.CorsUtils;
import org.springframework.web.cors.DefaultCorsProcessor;
import org.springframework.web.cors.UrlBasedCorsConfigurationSource;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * CORS for {@code /v1}, so that a web page can call the API from the browser: a site registering its
 * visitors' Web Push subscriptions with a public key ({@code POST /v1/devices/register}) and sending
 * their events is the case it exists for. Keys travel in {@code Authorization}, never in cookies, so
 * no request is made with credentials the page did not hold itself: any origin may call by default
 * ({@code PUSH_CORS_ALLOWED_ORIGINS}, {@code *}); a comma-separated list of origins restricts it, an
 * empty value sends no CORS headers at all.
 *
 * <p>A preflight ({@code OPTIONS} with {@code Origin} and {@code Access-Control-Request-Method}) is
 * answered here, before the key check (it carries none) and the rate limit. Answers to cross-origin
 * requests carry the headers, errors included (a 401 from the gate too), so the page can read them.
 * A request from an origin not allowed, or a preflight for a method or header not allowed, goes on
 * without CORS headers (the browser then refuses it): a preflight so ends as the gate's 401 in the
 * error shape, never as a bare 403 of the CORS processor's. Any other {@code OPTIONS} reaches its
 * route and is a 405.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 7) // after RequestIdFilter and ApiRoleFilter, before ApiGateFilter
class ApiCorsFilter extends OncePerRequestFilter {

    /** How long a browser may reuse a preflight's answer (browsers cap it: Chromium at 2 hours). */
    static final Duration MAX_AGE = Duration.ofHours(1);

    private final UrlBasedCorsConfigurationSource source = new UrlBasedCorsConfigurationSource();
    private final DefaultCorsProcessor processor = new DefaultCorsProcessor() {
        @Override
        protected void rejectRequest(ServerHttpResponse response) {
            // nothing written: the request goes on without CORS headers (see the class comment)
        }
    };

    ApiCorsFilter(@Value("${push.cors.allowed-origins:*}") List<String> allowedOrigins) {
        List<String> origins = allowedOrigins.stream().map(String::strip).filter(o -> !o.isEmpty()).toList();
        if (origins.isEmpty()) return; // no configuration: no CORS headers
        CorsConfiguration cors = new CorsConfiguration();
        cors.setAllowedOrigins(origins);
        cors.setAllowCredentials(false);
        cors.setAllowedMethods(List.of("GET", "POST", "PATCH", "DELETE"));
        cors.setAllowedHeaders(List.of("Authorization", "Content-Type", "Idempotency-Key", "X-Request-ID"));
        cors.setExposedHeaders(List.of("X-Request-ID", "RateLimit", "RateLimit-Policy", "Retry-After"));
        cors.setMaxAge(MAX_AGE);
        source.registerCorsConfiguration("/v1", cors);
        source.registerCorsConfiguration("/v1/**", cors);
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        CorsConfiguration config = source.getCorsConfiguration(request);
        if (config != null && processor.processRequest(config, request, response) && CorsUtils.isPreFlightRequest(request)) {
            return; // a preflight, answered
        }
        chain.doFilter(request, response);
    }
}
