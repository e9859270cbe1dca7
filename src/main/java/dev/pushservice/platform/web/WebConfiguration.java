package dev.pushservice.platform.web;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.error.JsonErrorReportValve;
import dev.pushservice.platform.pagination.PageRequest;
import java.time.Clock;
import java.util.List;
import org.apache.catalina.Pipeline;
import org.apache.catalina.Valve;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.tomcat.util.buf.EncodedSolidusHandling;
import org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory;
import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.MethodParameter;
import org.springframework.core.Ordered;
import org.springframework.web.bind.support.WebDataBinderFactory;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.method.support.ModelAndViewContainer;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import tools.jackson.databind.json.JsonMapper;

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

    /**
     * Requests Tomcat refuses itself are answered by {@link JsonErrorReportValve}. Spring Boot puts
     * Tomcat's HTML {@code ErrorReportValve} on the host (a context customizer of its own, order 0);
     * this runs after it, removes every {@code ErrorReportValve} and installs ours, and names ours as
     * the host's error valve class so that the host does not add Tomcat's back when it starts. Static:
     * the web server asks for customizers before the rest of this configuration can be built.
     */
    @Bean
    static WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory> jsonErrorReports(JsonMapper json) {
        return new JsonErrorReports(json);
    }

    private record JsonErrorReports(JsonMapper json)
            implements WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory>, Ordered {

        @Override
        public void customize(ConfigurableTomcatWebServerFactory factory) {
            factory.addContextCustomizers(context -> {
                if (!(context.getParent() instanceof StandardHost host)) return;
                Pipeline pipeline = host.getPipeline();
                for (Valve valve : pipeline.getValves()) {
                    if (valve instanceof ErrorReportValve) pipeline.removeValve(valve);
                }
                pipeline.addValve(new JsonErrorReportValve(json));
                host.setErrorReportValveClass(JsonErrorReportValve.class.getName());
            });
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }
    }

    /** Static, so beans this configuration depends on (the rate limiter) can take the clock too. */
    @Bean
    static Clock clock() {
        return Clock.systemUTC();
    }
}
