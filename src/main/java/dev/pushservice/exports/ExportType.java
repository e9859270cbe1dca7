package dev.pushservice.exports;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The data an export holds, and the CSV columns of each, in file order (the header row). No column
 * ever holds a push token, an API key or a secret. Documented in {@code docs/api-decisions.md}.
 */
enum ExportType {
    AUDIENCE(List.of("device_id", "platform", "external_user_id", "app_version", "device_model", "os_version",
            "locale", "timezone", "enabled", "invalidated_at", "invalidation_reason", "tags", "last_seen_at",
            "created_at")),
    MESSAGE(List.of("notification_id", "name", "status", "priority", "interruption_level", "template_id",
            "template_version", "recipient_count", "scheduled_at", "created_at", "queued_at", "finished_at")),
    RECIPIENT(List.of("notification_id", "device_id", "platform", "external_user_id", "status", "attempts",
            "last_error", "provider_message_id", "updated_at")),
    EVENT(List.of("event_id", "event_type", "event_name", "device_id", "user_id", "notification_id", "metadata",
            "occurred_at", "received_at")),
    AUDIT(List.of("occurred_at", "actor", "key_id", "key_kind", "action", "target_type", "target_id", "request_id",
            "changed_fields", "member_id"));

    private final List<String> columns;

    ExportType(List<String> columns) {
        this.columns = columns;
    }

    List<String> columns() {
        return columns;
    }

    String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    static Optional<ExportType> of(String value) {
        return Arrays.stream(values()).filter(t -> t.value().equals(value)).findFirst();
    }

    static String names() {
        return String.join(", ", Arrays.stream(values()).map(ExportType::value).toList());
    }
}
