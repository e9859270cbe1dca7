package dev.pushservice.platform.jobs;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.SystemClock;
import com.github.kagkarlsson.scheduler.boot.autoconfigure.Jackson3Serializer;
import com.github.kagkarlsson.scheduler.boot.config.DbSchedulerConfigurationSupport;
import com.github.kagkarlsson.scheduler.boot.config.DbSchedulerCustomizer;
import com.github.kagkarlsson.scheduler.boot.config.DbSchedulerProperties;
import com.github.kagkarlsson.scheduler.event.ExecutionInterceptor;
import com.github.kagkarlsson.scheduler.event.SchedulerListener;
import com.github.kagkarlsson.scheduler.serializer.Serializer;
import com.github.kagkarlsson.scheduler.stats.StatsRegistry;
import com.github.kagkarlsson.scheduler.task.Task;
import dev.pushservice.platform.config.PushProperties;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * db-scheduler wiring. The starter's auto-configuration backs off from the two beans defined here
 * (it creates a {@link Scheduler} and a starter only when none exist):
 *
 * <ul>
 *   <li>the {@link Scheduler}, built from the starter's {@code db-scheduler.*} properties and every
 *       {@link Task} bean, started and stopped by {@link JobWorker} and only in the {@code worker} role;
 *   <li>a {@link SchedulerClient} for everyone else ({@code @Primary}). It knows no tasks, so a
 *       service that schedules work never depends on the task beans (which may depend on that
 *       service): no dependency cycles as features add tasks.
 * </ul>
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(DbSchedulerProperties.class)
class JobsConfiguration {

    static final Set<String> ROLES = Set.of("api", "worker", "scheduler");

    /** JSON, not Java serialization: pending task data must survive upgrades and be readable in the table. */
    static final Serializer SERIALIZER = new Jackson3Serializer();

    @Bean
    JobInstanceName jobInstanceName(PushProperties properties) {
        Set<String> unknown = new TreeSet<>(properties.roles());
        unknown.removeAll(ROLES);
        if (!unknown.isEmpty()) {
            throw new IllegalStateException("PUSH_ROLES contains unknown role(s) " + unknown
                    + "; allowed: api, worker, scheduler");
        }
        // picked_by must be unique per process: shutdown releases exactly the executions this process holds
        String host = new SchedulerName.Hostname().getName();
        return new JobInstanceName(host + "#" + UUID.randomUUID().toString().substring(0, 8));
    }

    /** A new scheduler per start (prototype): a stopped db-scheduler cannot be started again. */
    @Bean(destroyMethod = "") // JobWorker stops it, then releases what it still holds
    @org.springframework.context.annotation.Scope("prototype")
    Scheduler jobScheduler(DbSchedulerProperties config, DataSource dataSource, JobInstanceName name,
                           ObjectProvider<Task<?>> tasks, ObjectProvider<StatsRegistry> stats,
                           ObjectProvider<SchedulerListener> listeners, ObjectProvider<ExecutionInterceptor> interceptors) {
        DbSchedulerCustomizer customizer = new DbSchedulerCustomizer() {
            @Override
            public Optional<SchedulerName> schedulerName() {
                return Optional.of(new SchedulerName.Fixed(name.value()));
            }

            @Override
            public Optional<Serializer> serializer() {
                return Optional.of(SERIALIZER);
            }
        };
        return DbSchedulerConfigurationSupport.buildScheduler(config, customizer,
                stats.getIfAvailable(() -> StatsRegistry.NOOP), new SystemClock(), dataSource,
                tasks.orderedStream().toList(), listeners.orderedStream().toList(),
                interceptors.orderedStream().toList());
    }

    @Bean
    JobWorker jobWorker(ObjectProvider<Scheduler> schedulers, PushProperties properties, DbSchedulerProperties config,
                        JdbcClient jdbc, JobInstanceName name) {
        return new JobWorker(schedulers::getObject, properties.hasRole("worker"), jdbc, config.getTableName(), name.value());
    }

    /** Scheduling for services and controllers; takes part in the caller's transaction. */
    @Bean
    @Primary
    SchedulerClient schedulerClient(DbSchedulerProperties config, DataSource dataSource) {
        SchedulerClient.Builder builder = SchedulerClient.Builder
                .create(DbSchedulerConfigurationSupport.configureDataSource(dataSource))
                .serializer(SERIALIZER)
                .tableName(config.getTableName());
        if (config.isPriorityEnabled()) builder.enablePriority();
        return builder.build();
    }

    /** This process's name in {@code scheduled_tasks.picked_by}: host name plus a random suffix. */
    record JobInstanceName(String value) {
    }
}
