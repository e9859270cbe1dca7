/**
 * Segments: named, versioned audience filters, and the filter language itself.
 *
 * <p>{@link dev.pushservice.segments.FilterParser} enforces the grammar (422 naming the place in
 * the filter); {@link dev.pushservice.segments.FilterCompiler} turns a filter into one parameterised
 * SQL predicate over devices and users, which notifications embed for their audience;
 * {@link dev.pushservice.segments.SegmentService} owns segments and their immutable versions (a
 * PATCH adds a version; DELETE archives, after which {@code activeVersion} refuses the segment for
 * new sends). Every query is scoped by app.
 */
package dev.pushservice.segments;
