package dev.pushservice.platform.ratelimit;

import dev.pushservice.platform.config.PushProperties;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import java.time.Clock;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Picks the {@link RateLimiter}: Redis-backed when {@code REDIS_URL} is set, in-process otherwise. */
@Configuration(proxyBeanMethods = false)
class RateLimitConfiguration {

    /** Short timeouts: a Redis outage must cost a request milliseconds, not Lettuce's default minute. */
    @Bean(destroyMethod = "shutdown")
    @ConditionalOnExpression("!'${push.redis-url:}'.isBlank()")
    RedisClient redisClient(PushProperties properties) {
        RedisURI uri = RedisURI.create(properties.redisUrl());
        uri.setTimeout(Duration.ofMillis(500));
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(Duration.ofMillis(500)))
                .build());
        return client;
    }

    @Bean
    RateLimiter rateLimiter(PushProperties properties, ObjectProvider<RedisClient> redis, Clock clock) {
        RedisClient client = redis.getIfAvailable();
        return client == null
                ? new LocalRateLimiter(properties.rateLimit())
                : new RedisRateLimiter(properties.rateLimit(), client, clock);
    }
}
