package dev.pushservice.platform.docs;

import java.time.Duration;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.CacheControl;
import org.springframework.web.servlet.config.annotation.ResourceHandlerRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import org.springframework.web.servlet.resource.LiteWebJarsResourceResolver;

/**
 * Serves webjars (only Swagger UI is on the classpath) under {@code /webjars/<name>/…} without their
 * version in the URL (resolved by webjars-locator-lite, which needs the webjar name as the first
 * path segment), so the docs page needs no change when the webjar is upgraded.
 * Boot's default static mappings are off ({@code spring.web.resources.add-mappings: false}); this is
 * the only static content the service serves.
 */
@Configuration(proxyBeanMethods = false)
class DocsResources implements WebMvcConfigurer {

    @Override
    public void addResourceHandlers(ResourceHandlerRegistry registry) {
        registry.addResourceHandler("/webjars/**")
                .addResourceLocations("classpath:/META-INF/resources/webjars/")
                .setCacheControl(CacheControl.maxAge(Duration.ofHours(1)))
                .resourceChain(true)
                .addResolver(new LiteWebJarsResourceResolver());
    }
}
