package dev.pushservice.platform.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import io.micrometer.core.instrument.MeterRegistry;
import dev.pushservice.platform.config.PushProperties;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The delivery engine's own connection pool ({@code push-delivery}, {@code PUSH_DELIVERY_DB_POOL_SIZE}
 * connections), beside the API's ({@code push-db}), on the same database and credentials. Delivery's
 * repositories run their SQL through {@link #jdbc()} and {@link #transactions()}.
 *
 * <p>Why a second pool and not admission permits on the one pool: the two then cannot starve each
 * other by construction. A burst of API requests cannot take the connections a transactional send
 * needs to claim and record, and a bulk fan-out cannot take the connections the API needs. Inside
 * the pool, every lane does its database work on exactly two threads (its claimer and its recorder),
 * each holding at most one connection at a time, and the pool has at least two connections per lane
 * plus one: no lane ever waits for a connection another lane holds. Idle connections are closed
 * after a minute, so an instance with little delivery work holds few.
 *
 * <p>Not a {@code DataSource} bean on purpose: Spring Boot's auto-configuration (Flyway, the primary
 * transaction manager, {@code JdbcClient}) must keep binding to the one API pool. So Boot does not
 * meter it either: the pool reports to the {@link MeterRegistry} itself, as Hikari's
 * {@code hikaricp_connections_*} series tagged {@code pool="push-delivery"} (active, idle, pending,
 * timeouts, acquire and usage times) beside the API pool's {@code pool="push-db"}. Thread-safe.
 */
@Component
public class DeliveryDatabase implements DisposableBean {

    private final HikariDataSource pool;
    private final JdbcClient jdbc;
    private final TransactionTemplate transactions;

    DeliveryDatabase(HikariDataSource apiPool, PushProperties properties, ObjectProvider<MeterRegistry> meters) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("push-delivery");
        config.setJdbcUrl(apiPool.getJdbcUrl());
        if (apiPool.getUsername() != null) config.setUsername(apiPool.getUsername());
        if (apiPool.getPassword() != null) config.setPassword(apiPool.getPassword());
        config.setMaximumPoolSize(properties.database().deliveryPoolSize());
        config.setMinimumIdle(0);
        config.setIdleTimeout(60_000);
        config.setConnectionTimeout(apiPool.getConnectionTimeout());
        config.setInitializationFailTimeout(-1); // connect lazily: the API pool already waited for the database
        config.setDataSourceProperties(apiPool.getDataSourceProperties());
        config.addDataSourceProperty("ApplicationName", "push-service-delivery");
        MeterRegistry registry = meters.getIfAvailable();
        if (registry != null) config.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
        this.pool = new HikariDataSource(config);
        this.jdbc = JdbcClient.create(pool);
        this.transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
    }

    /** Statements on the delivery pool (auto-commit unless run inside {@link #transactions()}). */
    public JdbcClient jdbc() {
        return jdbc;
    }

    /** Transactions on the delivery pool. */
    public TransactionTemplate transactions() {
        return transactions;
    }

    /** Connections of this pool in use now (for metrics and tests). */
    public int activeConnections() {
        var bean = pool.getHikariPoolMXBean();
        return bean == null ? 0 : bean.getActiveConnections();
    }

    public int maximumConnections() {
        return pool.getMaximumPoolSize();
    }

    @Override
    public void destroy() {
        pool.close();
    }
}
