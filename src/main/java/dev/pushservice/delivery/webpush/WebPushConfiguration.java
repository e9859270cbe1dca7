package dev.pushservice.delivery.webpush;

import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The Web Push provider, with each app's VAPID keys from {@link VapidKeyService}. */
@Configuration(proxyBeanMethods = false)
class WebPushConfiguration {

    @Bean(destroyMethod = "close")
    WebPushProvider webPushProvider(VapidKeyService vapid, ImportedVapidKeys imported, WebPushProperties properties, Clock clock) {
        return WebPushProvider.builder(vapid).importedKeys(imported).properties(properties).clock(clock).build();
    }
}
