package dev.pushservice.notifications;

import java.time.LocalDate;
import java.util.List;
import java.util.UUID;
import org.springframework.stereotype.Service;

/**
 * Reads the per-day delivery outcome counters ({@code delivery_daily_counts}) for other features
 * (analytics). The counters are kept by the database itself, in the transaction of every statement
 * that makes recipients terminal (migration V21): one grouped upsert per statement, never a write per
 * recipient. Cost of a read is bounded by days × outcomes, never by the number of recipients.
 * Thread-safe.
 */
@Service
public class DeliveryOutcomeCounts {

    /** The terminal recipient states, in the order reads show them; every other status a counter holds follows. */
    public static final List<String> OUTCOMES = NotificationRepository.TERMINAL_RECIPIENT;

    /** Recipients that reached {@code outcome} on {@code day} (the app's time zone at that moment). */
    public record DailyCount(LocalDate day, String outcome, long count) {
    }

    private final NotificationReadRepository notifications;

    DeliveryOutcomeCounts(NotificationReadRepository notifications) {
        this.notifications = notifications;
    }

    /** Per day and outcome, {@code from} to {@code to} inclusive; days and outcomes without recipients are absent. */
    public List<DailyCount> daily(UUID appId, LocalDate from, LocalDate to) {
        return notifications.dailyOutcomes(appId, from, to);
    }
}
