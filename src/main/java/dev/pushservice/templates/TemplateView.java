package dev.pushservice.templates;

import java.time.Instant;
import java.util.UUID;

/** A template as the detail, create and PATCH answers show it: current metadata and content. */
public record TemplateView(UUID templateId, String name, String status, int version, TemplateContent content,
                    Instant createdAt, Instant updatedAt) {

    /** What the list shows: metadata only. */
    public record Summary(UUID templateId, String name, String status, int version, Instant createdAt, Instant updatedAt) {
    }

    /** The answer to DELETE. */
    public record Deletion(UUID templateId, boolean deleted, String status, int version) {
    }
}
