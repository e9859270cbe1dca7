package dev.pushservice.delivery.apns;

import dev.pushservice.delivery.CredentialSource;
import java.util.Optional;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Registers the {@link ApnsProvider}. Its credentials come from the app's stored APNs credentials
 * (a {@code CredentialSource<ApnsCredentials>} bean); until such a bean exists every iOS send is
 * rejected as not configured, which is the truth.
 */
@Configuration(proxyBeanMethods = false)
class ApnsConfiguration {

    @Bean
    ApnsProvider apnsProvider(ApnsProperties properties, ObjectProvider<CredentialSource<ApnsCredentials>> source) {
        return new ApnsProvider(properties, source.getIfAvailable(() -> appId -> Optional.empty()));
    }
}
