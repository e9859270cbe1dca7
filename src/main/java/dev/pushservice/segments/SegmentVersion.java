package dev.pushservice.segments;

import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * One immutable version of a segment: what a notification snapshots. {@code filter} is parsed and
 * ready for {@link FilterCompiler}; {@code filterJson} is its canonical JSON, for storing in a snapshot.
 */
public record SegmentVersion(UUID segmentId, int version, Filter filter, JsonNode filterJson) {
}
