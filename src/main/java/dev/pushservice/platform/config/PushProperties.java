package dev.pushservice.platform.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Service-wide settings, bound from environment variables (see README "Configuration").
 *
 * @param dataDir where the embedded PostgreSQL, the generated secret key and the bootstrap key file live
 * @param databaseUrl {@code postgres://…} or {@code jdbc:postgresql://…}; blank starts the embedded PostgreSQL
 * @param redisUrl blank keeps rate limits in-process; set, they are shared through Redis
 * @param secretKey base64 AES key for secrets at rest; blank generates one into the data dir
 * @param roles which parts run in this instance ({@link Role}: {@code api}, {@code worker}, {@code scheduler});
 *              an unknown name stops the start with a message naming it
 * @param maxRequestBytes largest accepted request body
 * @param rateLimit per-organisation and per-app request limits
 * @param defaultActiveDeviceLimit the active-device limit new organisations get; 0 means unlimited
 */
@ConfigurationProperties(prefix = "push")
public record PushProperties(
        Path dataDir,
        String databaseUrl,
        String redisUrl,
        String secretKey,
        Set<String> roles,
        long maxRequestBytes,
        RateLimit rateLimit,
        Database database,
        long defaultActiveDeviceLimit) {

    public PushProperties {
        if (dataDir == null) dataDir = Path.of("data");
        if (roles == null || roles.isEmpty()) roles = Set.of("api", "worker", "scheduler");
        roles = roles.stream().map(r -> r.strip().toLowerCase(java.util.Locale.ROOT)).collect(java.util.stream.Collectors.toUnmodifiableSet());
        for (String role : roles) {
            if (Role.of(role).isEmpty()) {
                throw new IllegalArgumentException("PUSH_ROLES: unknown role '" + role
                        + "'; use a comma-separated list of api, worker, scheduler");
            }
        }
        if (maxRequestBytes <= 0) maxRequestBytes = 1024 * 1024;
        if (rateLimit == null) rateLimit = new RateLimit(0, 0, 0, 0);
        if (database == null) database = new Database(0, null, null, 0);
        if (defaultActiveDeviceLimit < 0) throw new IllegalArgumentException("PUSH_DEFAULT_ACTIVE_DEVICE_LIMIT must be >= 0");
    }

    /** The limit for a new organisation, or null for none. */
    public Integer activeDeviceLimitForNewOrganisations() {
        return defaultActiveDeviceLimit == 0 ? null : (int) Math.min(Integer.MAX_VALUE, defaultActiveDeviceLimit);
    }

    public boolean embeddedDatabase() {
        return databaseUrl == null || databaseUrl.isBlank();
    }

    public boolean redisConfigured() {
        return redisUrl != null && !redisUrl.isBlank();
    }

    public boolean hasRole(Role role) {
        return roles.contains(role.value());
    }

    /**
     * Token buckets: {@code *PerSecond} is the sustained rate, {@code *Burst} the bucket size.
     */
    public record RateLimit(long orgPerSecond, long orgBurst, long appPerSecond, long appBurst) {
        public RateLimit {
            if (orgPerSecond <= 0) orgPerSecond = 5000;
            if (orgBurst <= 0) orgBurst = orgPerSecond * 2;
            if (appPerSecond <= 0) appPerSecond = 2500;
            if (appBurst <= 0) appBurst = appPerSecond * 2;
        }
    }

    /**
     * @param poolSize JDBC pool size
     * @param connectionTimeout how long a request waits for a connection
     * @param startupWait how long start-up keeps retrying an unreachable database before giving up
     *                    (long for the service, which may start before its database; short for the admin CLI)
     * @param deliveryPoolSize connections of the delivery engine's own pool ({@code PUSH_DELIVERY_DB_POOL_SIZE}):
     *                         two per priority lane plus one, at least
     */
    public record Database(int poolSize, Duration connectionTimeout, Duration startupWait, int deliveryPoolSize) {

        /** Each of the four lanes does its database work on two threads; one more for the rest. */
        public static final int MIN_DELIVERY_POOL = 9;

        public Database {
            if (poolSize <= 0) poolSize = 10;
            if (deliveryPoolSize <= 0) deliveryPoolSize = MIN_DELIVERY_POOL;
            if (deliveryPoolSize < MIN_DELIVERY_POOL) {
                throw new IllegalArgumentException("PUSH_DELIVERY_DB_POOL_SIZE must be at least " + MIN_DELIVERY_POOL
                        + " (two connections per priority lane plus one)");
            }
            if (connectionTimeout == null) connectionTimeout = Duration.ofSeconds(5);
            if (startupWait == null) startupWait = Duration.ofSeconds(30);
        }
    }
}
