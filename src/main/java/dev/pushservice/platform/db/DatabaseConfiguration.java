package dev.pushservice.platform.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pushservice.platform.config.PushProperties;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The one {@link DataSource}: {@code DATABASE_URL} when set, otherwise the embedded PostgreSQL.
 * The embedded server is a bean of its own so that Spring closes the pool before stopping it.
 */
@Configuration(proxyBeanMethods = false)
class DatabaseConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnExpression("'${push.database-url:}'.isBlank()")
    EmbeddedPostgresServer embeddedPostgresServer(PushProperties properties) {
        return EmbeddedPostgresServer.startOrAttach(properties.dataDir(), true);
    }

    @Bean(destroyMethod = "close")
    HikariDataSource dataSource(PushProperties properties, ObjectProvider<EmbeddedPostgresServer> embedded) {
        DatabaseUrl url = properties.embeddedDatabase()
                ? embedded.getObject().url()
                : DatabaseUrl.parse(properties.databaseUrl());
        HikariConfig config = new HikariConfig();
        config.setPoolName("push-db");
        config.setJdbcUrl(url.jdbcUrl());
        if (url.username() != null) config.setUsername(url.username());
        if (url.password() != null) config.setPassword(url.password());
        config.setMaximumPoolSize(properties.database().poolSize());
        config.setConnectionTimeout(properties.database().connectionTimeout().toMillis());
        config.setInitializationFailTimeout(properties.database().startupWait().toMillis());
        config.addDataSourceProperty("reWriteBatchedInserts", "true");
        config.addDataSourceProperty("ApplicationName", "push-service");
        return new HikariDataSource(config);
    }
}
