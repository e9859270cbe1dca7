package dev.pushservice.platform.web;

import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import dev.pushservice.platform.error.ErrorCode;
import dev.pushservice.platform.error.ErrorWriter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * On an instance without the {@code api} role, the port serves only {@code /health},
 * {@code /status} and {@code /actuator/…} (metrics); everything else, every {@code /v1} route,
 * {@code /openapi.yaml}, {@code /docs} and the web SDK's {@code /sdk/v1/…} included, is a 404 {@code not_found} in the error shape,
 * answered before authentication, so a load balancer that sends API traffic to a worker gets a
 * clear answer and the worker does no API work. Does nothing on {@code api} instances.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 5) // after RequestIdFilter, before ApiGateFilter
class ApiRoleFilter extends OncePerRequestFilter {

    static final List<String> ALWAYS_SERVED = List.of("/health", "/status");
    static final String METRICS_PREFIX = "/actuator/";

    private final boolean api;
    private final ErrorWriter errors;

    ApiRoleFilter(PushProperties properties, ErrorWriter errors) {
        this.api = properties.hasRole(Role.API);
        this.errors = errors;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        if (api) return true;
        String path = request.getRequestURI().substring(request.getContextPath().length());
        return ALWAYS_SERVED.contains(path) || path.startsWith(METRICS_PREFIX);
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        errors.write(request, response, ErrorCode.NOT_FOUND,
                "This instance does not serve the API (PUSH_ROLES has no 'api'); only /health, /status and metrics",
                List.of());
    }
}
