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
import com.github.kagkarlsson.scheduler.stats.StatsRegistryAdapter;
import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * db-scheduler wiring. The starter's auto-configuration backs off from the beans defined here (it
 * creates a {@link Scheduler} and a starter only when none exist):
 *
 * <ul>
 *   <li>the workers' {@link Scheduler} on {@code scheduled_tasks}, built from the starter's
 *       {@code db-scheduler.*} properties and every {@link Task} bean that is not a
 *       {@link RecurringTask}, started and stopped by the {@code jobWorker} {@link JobRunner} only in
 *       the {@code worker} role;
 *   <li>the scheduler role's {@link Scheduler} on {@code recurring_tasks}, knowing every
 *       {@link RecurringTask} bean (and creating their first executions at start), run by the
 *       {@code jobScheduler} {@link JobRunner} only in the {@code scheduler} role;
 *   <li>a {@link SchedulerClient} on {@code scheduled_tasks} for everyone else ({@code @Primary}). It
 *       knows no tasks, so a service that schedules work never depends on the task beans (which may
 *       depend on that service): no dependency cycles as features add tasks.
 * </ul>
 *
 * <p>Two tables because a db-scheduler instance must know every task in the table it polls: one it
 * does not know is "unresolved", skipped, and deleted after {@code delete-unresolved-after}.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(DbSchedulerProperties.class)
class JobsConfiguration {

    /** The scheduler role's table (V11 migration); same shape as {@code scheduled_tasks}. */
    static final String RECURRING_TABLE = "recurring_tasks";

    /** Recurring tasks are few and short; they hand heavy work to workers. */
    static final int RECURRING_THREADS = 2;

    /** JSON, not Java serialization: pending task data must survive upgrades and be readable in the table. */
    static final Serializer SERIALIZER = new Jackson3Serializer();

    @Bean
    JobInstanceName jobInstanceName() {
        // picked_by must be unique per process: shutdown releases exactly the executions this process holds
        String host = new SchedulerName.Hostname().getName();
        return new JobInstanceName(host + "#" + UUID.randomUUID().toString().substring(0, 8));
    }

    /** The workers' scheduler, new per start (prototype): a stopped db-scheduler cannot be started again. */
    @Bean(destroyMethod = "") // its JobRunner stops it, then releases what it still holds
    @org.springframework.context.annotation.Scope("prototype")
    Scheduler workerDbScheduler(DbSchedulerProperties config, DataSource dataSource, JobInstanceName name,
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
                tasks.orderedStream().filter(t -> !(t instanceof RecurringTask)).toList(),
                listeners.orderedStream().toList(), interceptors.orderedStream().toList());
    }

    /**
     * The scheduler role's scheduler, new per start. Same polling, heartbeat and shutdown settings as
     * the workers'; its own table and a couple of threads. At start it creates each recurring task's
     * execution if missing (an insert that tolerates a concurrent one from another instance).
     */
    private static Scheduler recurringScheduler(DbSchedulerProperties config, DataSource dataSource, JobInstanceName name,
                                                List<RecurringTask<?>> tasks, StatsRegistry stats) {
        return Scheduler.create(DbSchedulerConfigurationSupport.configureDataSource(dataSource))
                .startTasks(tasks)
                .tableName(RECURRING_TABLE)
                .schedulerName(new SchedulerName.Fixed(name.value()))
                .serializer(SERIALIZER)
                .threads(RECURRING_THREADS)
                .pollingInterval(config.getPollingInterval())
                .heartbeatInterval(config.getHeartbeatInterval())
                .missedHeartbeatsLimit(config.getMissedHeartbeatsLimit())
                .deleteUnresolvedAfter(config.getDeleteUnresolvedAfter())
                .failureLogging(config.getFailureLoggerLevel(), config.isFailureLoggerLogStackTrace())
                .shutdownMaxWait(config.getShutdownMaxWait())
                .addSchedulerListener(new StatsRegistryAdapter(stats))
                .build();
    }

    /** Queued work (fan-outs, exports, cancels) runs below API requests when the cores are all busy. */
    @Bean
    ExecutionInterceptor backgroundPriorityInterceptor(BackgroundPriority priority) {
        return (instance, context, chain) -> {
            BackgroundPriority.lowerCurrentThread();
            return chain.proceed(instance, context);
        };
    }

    /** Executes queued work, in {@code worker} instances. */
    @Bean
    JobRunner jobWorker(ObjectProvider<Scheduler> schedulers, PushProperties properties, DbSchedulerProperties config,
                        JdbcClient jdbc, JobInstanceName name) {
        return new JobRunner(Role.WORKER, schedulers::getObject, properties.hasRole(Role.WORKER), jdbc,
                config.getTableName(), name.value());
    }

    /** Runs recurring tasks, in {@code scheduler} instances. */
    @Bean
    JobRunner jobScheduler(ObjectProvider<Task<?>> tasks, ObjectProvider<StatsRegistry> stats, PushProperties properties,
                           DbSchedulerProperties config, DataSource dataSource, JdbcClient jdbc, JobInstanceName name) {
        Supplier<Scheduler> schedulers = () -> recurringScheduler(config, dataSource, name,
                tasks.orderedStream().filter(t -> t instanceof RecurringTask).<RecurringTask<?>>map(t -> (RecurringTask<?>) t).toList(),
                stats.getIfAvailable(() -> StatsRegistry.NOOP));
        return new JobRunner(Role.SCHEDULER, schedulers, properties.hasRole(Role.SCHEDULER), jdbc, RECURRING_TABLE,
                name.value());
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
