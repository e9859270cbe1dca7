package dev.pushservice.platform.storage;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * How long the partitioned tables keep their rows (README "Configuration", docs/storage.md). A
 * partition is dropped once the newest time it can hold is older than its table's retention; zero
 * keeps a table's rows for ever.
 *
 * @param recipients {@code notification_recipients} ({@code PUSH_RETENTION_RECIPIENTS}, 30 days): by
 *                   the notification's audience time; a notification's counts stay in its summary; also
 *                   {@code delivery_attempts}, the recipients' retried attempts (V52), and
 *                   {@code notification_recipient_batches}, the handed recipients recorded accepted (V58)
 * @param lifecycleEvents {@code lifecycle_events}, the webhook and journey outbox
 *                        ({@code PUSH_RETENTION_LIFECYCLE_EVENTS}, 30 days)
 * @param events {@code events}, engagement events ({@code PUSH_RETENTION_EVENTS}, 396 days: 13 months);
 *               analytics read their own daily totals, kept for ever
 * @param webhookDeliveries {@code webhook_deliveries}, each with its attempt figures, and
 *                          {@code webhook_delivery_attempts}, their failed attempts (V52)
 *                          ({@code PUSH_RETENTION_WEBHOOK_DELIVERIES}, 30 days)
 * @param journeyExecutions {@code journey_executions} and {@code journey_goals}
 *                          ({@code PUSH_RETENTION_JOURNEY_EXECUTIONS}, 90 days): by the execution's entry
 *                          time, a month at a time, and only once none of the month's executions is still
 *                          active or waiting; a journey's stats read counts kept apart (V54)
 * @param partitionsAhead how far ahead of the clock partitions are created ({@code PUSH_PARTITIONS_AHEAD}, 7 days)
 */
@ConfigurationProperties(prefix = "push.retention")
public record RetentionProperties(Duration recipients, Duration lifecycleEvents, Duration events,
                                  Duration webhookDeliveries, Duration journeyExecutions,
                                  Duration partitionsAhead) {

    public RetentionProperties {
        if (recipients == null) recipients = Duration.ofDays(30);
        if (lifecycleEvents == null) lifecycleEvents = Duration.ofDays(30);
        if (events == null) events = Duration.ofDays(396);
        if (webhookDeliveries == null) webhookDeliveries = Duration.ofDays(30);
        if (journeyExecutions == null) journeyExecutions = Duration.ofDays(90);
        if (partitionsAhead == null) partitionsAhead = Duration.ofDays(7);
        check("PUSH_RETENTION_RECIPIENTS", recipients, Duration.ZERO);
        check("PUSH_RETENTION_LIFECYCLE_EVENTS", lifecycleEvents, Duration.ZERO);
        check("PUSH_RETENTION_EVENTS", events, Duration.ZERO);
        check("PUSH_RETENTION_WEBHOOK_DELIVERIES", webhookDeliveries, Duration.ZERO);
        check("PUSH_RETENTION_JOURNEY_EXECUTIONS", journeyExecutions, Duration.ZERO);
        check("PUSH_PARTITIONS_AHEAD", partitionsAhead, Duration.ofDays(1));
    }

    private static void check(String name, Duration value, Duration least) {
        if (value.compareTo(least) < 0) throw new IllegalArgumentException(name + " must be at least " + least);
    }

    /** The retention of a partitioned table, or null to keep its rows. */
    Duration of(String table) {
        Duration d = switch (table) {
            case "notification_recipients", "notification_recipient_batches", "delivery_attempts" -> recipients;
            case "lifecycle_events" -> lifecycleEvents;
            case "events" -> events;
            case "webhook_deliveries", "webhook_delivery_attempts" -> webhookDeliveries;
            case "journey_executions", "journey_goals" -> journeyExecutions;
            default -> Duration.ZERO;
        };
        return d.isZero() ? null : d;
    }
}
