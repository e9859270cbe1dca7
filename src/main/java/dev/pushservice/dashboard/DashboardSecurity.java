package dev.pushservice.dashboard;

import dev.pushservice.members.MemberService;
import java.util.List;
import java.util.Set;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.AbstractFilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.authentication.LockedException;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.config.annotation.web.configurers.AbstractHttpConfigurer;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.header.writers.ReferrerPolicyHeaderWriter;
import org.springframework.session.web.http.CookieSerializer;
import org.springframework.session.web.http.DefaultCookieSerializer;
import org.springframework.web.servlet.config.annotation.ResourceHandlerRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Spring Security and Spring Session for {@code /dashboard} only.
 *
 * <p>Three things keep them off the API: the servlet filters of both are registered for
 * {@code /dashboard} and {@code /dashboard/*} alone ({@link #dashboardOnlyFilters()}; Boot registers
 * them for every path, and Spring Security's firewall would otherwise refuse the API's encoded
 * slashes), the one filter chain also matches only those paths, and Boot's generated user (its
 * {@code UserDetailsServiceAutoConfiguration}) is excluded in application.yaml, so no default
 * password, basic auth or CSRF check exists anywhere else.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@EnableWebSecurity
class DashboardSecurity implements WebMvcConfigurer {

    static final String SIGN_IN = "/dashboard/sign-in";
    static final String COOKIE = "push_dashboard";
    /**
     * Pages load only the jar's own stylesheets, images and scripts (htmx, uPlot and
     * {@code dashboard.js}; none is inline, and none may be: no {@code unsafe-inline}, no
     * {@code unsafe-eval}), fetch only from here, cannot be framed, and post forms only here.
     */
    static final String CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

    /**
     * Boot's filter registrations that only the dashboard needs, by bean name: Spring Security's and Spring
     * Session's ({@code DelegatingFilterProxyRegistrationBean}s), and Thymeleaf's {@code ResourceUrlEncodingFilter},
     * which the WebJars on the classpath switch on and which only matters where a template renders links. Off the
     * dashboard it only wrapped each response (no cost that registrations could measure: bench/README.md,
     * "Registration: the SQL-language functions").
     */
    private static final Set<String> DASHBOARD_FILTER_REGISTRATIONS =
            Set.of("securityFilterChainRegistration", "sessionRepositoryFilterRegistration", "resourceUrlEncodingFilter");

    @Bean
    SecurityFilterChain dashboardFilterChain(HttpSecurity http, MemberService members) throws Exception {
        http.securityMatcher("/dashboard", "/dashboard/**")
                .authorizeHttpRequests(requests -> requests
                        .requestMatchers(SIGN_IN, "/dashboard/join", "/dashboard/assets/**").permitAll()
                        .anyRequest().authenticated())
                .authenticationProvider(new MemberAuthenticationProvider(members))
                .formLogin(form -> form
                        .loginPage(SIGN_IN)
                        .loginProcessingUrl(SIGN_IN)
                        .usernameParameter("email")
                        .passwordParameter("password")
                        .defaultSuccessUrl("/dashboard", true)
                        .failureHandler((request, response, e) -> response.sendRedirect(request.getContextPath()
                                + SIGN_IN + (e instanceof LockedException ? "?locked" : "?error"))))
                .logout(logout -> logout
                        .logoutUrl("/dashboard/sign-out")
                        .logoutSuccessUrl(SIGN_IN + "?signed-out"))
                .httpBasic(AbstractHttpConfigurer::disable)
                .exceptionHandling(errors -> errors.accessDeniedHandler(DashboardSecurity::refused))
                .headers(headers -> headers
                        .contentSecurityPolicy(csp -> csp.policyDirectives(CONTENT_SECURITY_POLICY))
                        .referrerPolicy(referrer -> referrer.policy(ReferrerPolicyHeaderWriter.ReferrerPolicy.NO_REFERRER)));
        return http.build();
    }

    /**
     * A refused request (a form without its CSRF token, or with a stale one after the session
     * expired; a role that may not): a 403 page a person can act on, not the API's JSON error.
     */
    private static void refused(jakarta.servlet.http.HttpServletRequest request, jakarta.servlet.http.HttpServletResponse response,
                                org.springframework.security.access.AccessDeniedException e) throws java.io.IOException {
        response.setStatus(403);
        response.setContentType("text/html;charset=UTF-8");
        String stale = e instanceof org.springframework.security.web.csrf.CsrfException
                ? "The form was sent without a valid security token (it may have been open longer than the session lasts)."
                : "Your role does not allow this.";
        response.getWriter().write("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Refused · Push Service</title>"
                + "<link rel=\"stylesheet\" href=\"" + request.getContextPath() + "/dashboard/assets/dashboard.css\">"
                + "<link rel=\"icon\" type=\"image/svg+xml\" href=\"" + request.getContextPath() + "/dashboard/assets/favicon.svg\"></head>"
                + "<body><main class=\"narrow\"><h1>Refused</h1><p>" + stale + "</p><p><a href=\"" + request.getContextPath()
                + "/dashboard\">Back to the dashboard</a></p></main></body></html>");
    }

    /** Boot registers the security, session and resource URL filters for {@code /*}; the dashboard's paths are theirs alone. */
    @Bean
    static BeanPostProcessor dashboardOnlyFilters() {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessBeforeInitialization(Object bean, String name) {
                if (bean instanceof AbstractFilterRegistrationBean<?> registration && DASHBOARD_FILTER_REGISTRATIONS.contains(name)) {
                    registration.setUrlPatterns(List.of("/dashboard", "/dashboard/*"));
                }
                return bean;
            }
        };
    }

    /**
     * The session cookie: {@code HttpOnly}, {@code SameSite=Lax}, path {@code /dashboard} (a browser
     * never sends it to the API), {@code Secure} when the request came over TLS
     * ({@code PUSH_DASHBOARD_SECURE_COOKIE=auto}; behind a proxy that terminates TLS, set it to
     * {@code always} or let the proxy's {@code X-Forwarded-Proto} through with
     * {@code SERVER_FORWARD_HEADERS_STRATEGY=native}).
     */
    @Bean
    CookieSerializer dashboardCookie(@Value("${push.dashboard.secure-cookie:auto}") String secure) {
        DefaultCookieSerializer cookie = new DefaultCookieSerializer();
        cookie.setCookieName(COOKIE);
        cookie.setCookiePath("/dashboard");
        cookie.setUseHttpOnlyCookie(true);
        cookie.setSameSite("Lax");
        switch (secure.strip().toLowerCase(java.util.Locale.ROOT)) {
            case "always", "true" -> cookie.setUseSecureCookie(true);
            case "never", "false" -> cookie.setUseSecureCookie(false);
            case "auto", "" -> { } // Secure exactly when the request is (DefaultCookieSerializer's own rule)
            default -> throw new IllegalArgumentException("PUSH_DASHBOARD_SECURE_COOKIE must be auto, always or never, not '" + secure + "'");
        }
        return cookie;
    }

    /**
     * The dashboard's own stylesheet and script, and under {@code /dashboard/assets/lib/} the WebJars
     * it uses (htmx, uPlot) without their version in the path ({@code lib/htmx.org/dist/htmx.js}),
     * all from the jar. Cached for an hour: a new release is picked up within one.
     */
    @Override
    public void addResourceHandlers(ResourceHandlerRegistry registry) {
        registry.addResourceHandler("/dashboard/assets/lib/**")
                .addResourceLocations("classpath:/META-INF/resources/webjars/")
                .setCacheControl(org.springframework.http.CacheControl.maxAge(java.time.Duration.ofHours(1)))
                .resourceChain(true)
                .addResolver(new org.springframework.web.servlet.resource.LiteWebJarsResourceResolver());
        registry.addResourceHandler("/dashboard/assets/**").addResourceLocations("classpath:/dashboard/assets/")
                .setCacheControl(org.springframework.http.CacheControl.maxAge(java.time.Duration.ofHours(1)));
    }
}
