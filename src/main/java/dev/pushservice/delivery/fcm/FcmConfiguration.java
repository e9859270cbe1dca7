package dev.pushservice.delivery.fcm;

import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The FCM provider, with each app's service account from {@link FcmSettings}. */
@Configuration(proxyBeanMethods = false)
class FcmConfiguration {

    @Bean(destroyMethod = "close")
    FcmProvider fcmProvider(FcmProperties properties, FcmSettings credentials, Clock clock) {
        return FcmProvider.builder(credentials).properties(properties).clock(clock).build();
    }
}
