package dev.pushservice.dashboard;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.util.unit.DataSize;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Request-size limits of the dashboard, checked on the declared length before anything reads the
 * body (Spring Security's CSRF check reads form fields, which parses a multipart body): the migration
 * upload ({@code POST /dashboard/apps/{id}/migration}) takes up to
 * {@code PUSH_MIGRATION_MAX_REQUEST_BYTES}; every other dashboard request body up to 1 MB. A larger
 * one gets a 413 page saying so (Tomcat then reads and drops up to {@code max-swallow-size} of the
 * body to keep the connection, and closes it beyond that). Spring's multipart limits
 * (application.yaml) stay the upload's, for bodies sent without a length.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class DashboardUploadLimits {

    /** The largest body of a dashboard request other than the migration upload. */
    static final long FORM_BYTES = 1024 * 1024;
    static final Pattern MIGRATION_UPLOAD = Pattern.compile("/dashboard/apps/[^/]+/migration");

    @Bean
    FilterRegistrationBean<OncePerRequestFilter> dashboardUploadLimitFilter(
            @Value("${push.dashboard.migration.max-request-bytes:201MB}") DataSize uploadBytes,
            @Value("${push.dashboard.migration.max-bytes:200MB}") DataSize fileBytes) {
        long upload = uploadBytes.toBytes();
        OncePerRequestFilter filter = new OncePerRequestFilter() {
            @Override
            protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                    throws ServletException, IOException {
                String path = request.getRequestURI().substring(request.getContextPath().length());
                boolean migration = "POST".equals(request.getMethod()) && MIGRATION_UPLOAD.matcher(path).matches();
                long limit = migration ? upload : FORM_BYTES;
                if (request.getContentLengthLong() > limit) {
                    response.setStatus(413);
                    response.setContentType("text/html;charset=UTF-8");
                    String what = migration
                            ? String.format(Locale.ROOT, "The file is larger than %,d MB, the most one migration upload takes: split it into several files.",
                                    fileBytes.toMegabytes())
                            : "The form is larger than 1 MB.";
                    response.getWriter().write("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Too large · Push Service</title>"
                            + "<link rel=\"stylesheet\" href=\"" + request.getContextPath() + "/dashboard/assets/dashboard.css\"></head>"
                            + "<body><main class=\"narrow\"><h1>Too large</h1><p>" + what + "</p><p>Nothing was changed.</p><p><a href=\""
                            + request.getContextPath() + "/dashboard\">Back to the dashboard</a></p></main></body></html>");
                    return;
                }
                chain.doFilter(request, response);
            }
        };
        FilterRegistrationBean<OncePerRequestFilter> registration = new FilterRegistrationBean<>(filter);
        registration.setUrlPatterns(List.of("/dashboard", "/dashboard/*"));
        registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 10);
        registration.setName("dashboardUploadLimits");
        return registration;
    }
}
