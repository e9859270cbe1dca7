package dev.pushservice.segments;

import java.time.Instant;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A segment as the API shows it: the current version's name, description and filter.
 *
 * @param status {@code active} or {@code archived}
 * @param updatedAt when the current version was made (or the segment archived)
 */
public record SegmentView(UUID segmentId, String name, String description, JsonNode filter, int version, String status,
                          Instant createdAt, Instant updatedAt) {
}
