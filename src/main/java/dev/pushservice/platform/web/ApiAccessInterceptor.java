package dev.pushservice.platform.web;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.error.ErrorCode;
import dev.pushservice.platform.ratelimit.RateLimiter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Scope (403) then rate limit (429) for the matched {@code /v1} handler. Every answer, refused or
 * not, carries {@code RateLimit-Policy} and {@code RateLimit} (draft-ietf-httpapi-ratelimit-headers).
 */
@Component
class ApiAccessInterceptor implements HandlerInterceptor {

    private static final Logger log = LoggerFactory.getLogger(ApiAccessInterceptor.class);

    private final RateLimiter rateLimiter;

    ApiAccessInterceptor(RateLimiter rateLimiter) {
        this.rateLimiter = rateLimiter;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        if (!(handler instanceof HandlerMethod method)) return true;
        ApiPrincipal principal = (ApiPrincipal) request.getAttribute(ApiGateFilter.PRINCIPAL_ATTRIBUTE);
        if (principal == null) return true; // not a /v1 route
        Authorize rule = method.getMethodAnnotation(Authorize.class);
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
        return true;
    }

    private static void writeHeaders(HttpServletResponse response, RateLimiter.Decision decision) {
        RateLimiter.Window binding = decision.binding();
        if (binding == null) return;
        StringBuilder policy = new StringBuilder();
        for (RateLimiter.Window w : new RateLimiter.Window[] {decision.app(), decision.org()}) {
            if (w == null) continue;
            if (!policy.isEmpty()) policy.append(", ");
            policy.append('"').append(w.name()).append("\";q=").append(w.quota()).append(";w=").append(w.windowSeconds());
        }
        response.setHeader("RateLimit-Policy", policy.toString());
        response.setHeader("RateLimit", "\"" + binding.name() + "\";r=" + binding.remaining() + ";t=" + binding.resetSeconds());
    }
}
