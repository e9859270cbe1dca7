package dev.pushservice.platform.web;

import dev.pushservice.platform.auth.ApiKeyResolver;
import dev.pushservice.platform.auth.ApiKeys;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.error.ApiException;
import dev.pushservice.platform.error.DatabaseUnreachable;
import dev.pushservice.platform.error.ErrorCode;
import dev.pushservice.platform.error.ErrorWriter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The checks every {@code /v1} request passes before routing, in the order of DESIGN.md section 4:
 * body size (413), content type (415), API key (401). Scope and rate limits need the matched
 * route and run in {@link ApiAccessInterceptor}.
 *
 * <p>The body is read here, at most {@code MAX_REQUEST_BYTES + 1} bytes of it, so a chunked body
 * without {@code Content-Length} is refused as soon as it passes the limit, never fully buffered.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 10)
class ApiGateFilter extends OncePerRequestFilter {

    static final String PRINCIPAL_ATTRIBUTE = ApiPrincipal.REQUEST_ATTRIBUTE;

    private final long maxBytes;
    private final ApiKeyResolver keys;
    private final ErrorWriter errors;
    private final Clock clock;

    ApiGateFilter(PushProperties properties, ApiKeyResolver keys, ErrorWriter errors, Clock clock) {
        this.maxBytes = properties.maxRequestBytes();
        this.keys = keys;
        this.errors = errors;
        this.clock = clock;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        String path = request.getRequestURI().substring(request.getContextPath().length());
        return !(path.equals("/v1") || path.startsWith("/v1/"));
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        try {
            HttpServletRequest checked = readBody(request, response);
            try {
                authenticate(checked);
            } catch (RuntimeException e) {
                // the key's lookup could not reach the database: a 503 to retry, not a servlet error (a 500)
                if (!DatabaseUnreachable.causes(e)) throw e;
                throw DatabaseUnreachable.unavailable();
            }
            chain.doFilter(checked, response);
        } catch (ApiException e) {
            errors.write(request, response, e);
        }
    }

    private HttpServletRequest readBody(HttpServletRequest request, HttpServletResponse response) throws IOException {
        long declared = request.getContentLengthLong();
        boolean chunked = request.getHeader("Transfer-Encoding") != null;
        if (declared > maxBytes) {
            response.setHeader("Connection", "close");
            throw tooLarge();
        }
        if (declared <= 0 && !chunked) {
            return request;
        }
        byte[] body = declared > 0 ? readExactly(request.getInputStream(), (int) declared) : readAtMost(request.getInputStream(), maxBytes);
        if (body == null) {
            response.setHeader("Connection", "close");
            throw tooLarge();
        }
        if (body.length > 0 && !isJson(request.getContentType())) {
            throw new ApiException(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                    "Request bodies must be sent with Content-Type: application/json");
        }
        return new BufferedBodyRequest(request, body);
    }

    private ApiException tooLarge() {
        return new ApiException(ErrorCode.PAYLOAD_TOO_LARGE,
                "Request body exceeds the limit of " + maxBytes + " bytes");
    }

    /** A body of a declared length (already checked against the limit), read straight into its array. */
    private static byte[] readExactly(InputStream in, int length) throws IOException {
        byte[] body = in.readNBytes(length);
        if (body.length < length) {
            throw new ApiException(ErrorCode.MALFORMED_REQUEST, "Request body is shorter than its Content-Length");
        }
        return body;
    }

    /** The whole body, or null as soon as it is longer than {@code max}. */
    private static byte[] readAtMost(InputStream in, long max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        long total = 0;
        int n;
        while ((n = in.read(buffer)) != -1) {
            total += n;
            if (total > max) return null;
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    private static boolean isJson(String contentType) {
        if (contentType == null) return false;
        try {
            MediaType type = MediaType.parseMediaType(contentType);
            return type.isCompatibleWith(MediaType.APPLICATION_JSON) && !type.isWildcardSubtype();
        } catch (RuntimeException e) {
            return false;
        }
    }

    private void authenticate(HttpServletRequest request) {
        String header = request.getHeader("Authorization");
        if (header == null || header.isBlank()) {
            throw unauthorized("Missing Authorization header; send 'Authorization: Bearer <API key>'");
        }
        if (header.length() < 8 || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw unauthorized("Authorization must use the Bearer scheme: 'Authorization: Bearer <API key>'");
        }
        String raw = header.substring(7).trim();
        if (raw.isEmpty() || raw.length() > 200) {
            throw unauthorized("Invalid API key");
        }
        ApiKeyResolver.StoredKey key = keys.findByHash(ApiKeys.hash(raw))
                .orElseThrow(() -> unauthorized("Invalid API key"));
        Instant now = clock.instant();
        if (key.revokedAt() != null && !key.revokedAt().isAfter(now)) {
            throw unauthorized("API key has been revoked");
        }
        if (key.expiresAt() != null && !key.expiresAt().isAfter(now)) {
            throw unauthorized("API key has expired");
        }
        keys.touch(key);
        request.setAttribute(PRINCIPAL_ATTRIBUTE, key.principal());
    }

    private static ApiException unauthorized(String message) {
        return new ApiException(ErrorCode.UNAUTHORIZED, message, List.of(),
                Map.of("WWW-Authenticate", "Bearer"));
    }
}
