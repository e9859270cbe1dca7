package dev.pushservice.platform.web;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.pagination.PageRequest;
import java.time.Clock;
import java.util.List;
import org.apache.tomcat.util.buf.EncodedSolidusHandling;
import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.MethodParameter;
import org.springframework.web.bind.support.WebDataBinderFactory;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.method.support.ModelAndViewContainer;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/** MVC wiring for the {@code /v1} request path. */
@Configuration(proxyBeanMethods = false)
class WebConfiguration implements WebMvcConfigurer {

    private final ApiAccessInterceptor access;

    WebConfiguration(ApiAccessInterceptor access) {
        this.access = access;
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(access).addPathPatterns("/v1/**");
    }

    @Override
    public void addArgumentResolvers(List<HandlerMethodArgumentResolver> resolvers) {
        resolvers.add(new HandlerMethodArgumentResolver() {
            @Override
            public boolean supportsParameter(MethodParameter parameter) {
                return parameter.getParameterType() == PageRequest.class;
            }

            @Override
            public Object resolveArgument(MethodParameter parameter, ModelAndViewContainer mav,
                                          NativeWebRequest request, WebDataBinderFactory binders) {
                return PageRequest.parse(request.getParameter("page"), request.getParameter("limit"));
            }
        });
        resolvers.add(new HandlerMethodArgumentResolver() {
            @Override
            public boolean supportsParameter(MethodParameter parameter) {
                return parameter.getParameterType() == ApiPrincipal.class;
            }

            @Override
            public Object resolveArgument(MethodParameter parameter, ModelAndViewContainer mav,
                                          NativeWebRequest request, WebDataBinderFactory binders) {
                return request.getAttribute(ApiGateFilter.PRINCIPAL_ATTRIBUTE, RequestAttributes.SCOPE_REQUEST);
            }
        });
    }

    /**
     * Path values are URL-encoded by clients (spec rule 6). Tomcat rejects {@code %2F} by default;
     * passing it through undecoded lets Spring match the route on the raw path and decode each
     * path variable exactly once, so {@code a%2Fb} arrives as {@code a/b}.
     */
    @Bean
    TomcatConnectorCustomizer encodedSlashesInPathValues() {
        return connector -> connector.setEncodedSolidusHandling(EncodedSolidusHandling.PASS_THROUGH.getValue());
    }

    /** Static, so beans this configuration depends on (the rate limiter) can take the clock too. */
    @Bean
    static Clock clock() {
        return Clock.systemUTC();
    }
}
