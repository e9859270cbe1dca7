package dev.pushservice.delivery.apns;

import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The APNs provider, with each app's credentials from {@link ApnsSettings}. */
@Configuration(proxyBeanMethods = false)
class ApnsConfiguration {

    @Bean(destroyMethod = "close")
    ApnsProvider apnsProvider(ApnsProperties properties, ApnsSettings credentials, Clock clock,
                              dev.pushservice.platform.jobs.BackgroundPriority backgroundPriority) { // set before its threads start
        return ApnsProvider.builder(credentials).properties(properties).clock(clock).build();
    }
}
