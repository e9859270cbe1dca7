package dev.pushservice.templates;

import java.util.UUID;

/**
 * A template's current content at one instant, for a notification to snapshot. {@code compiled}
 * is ready for {@link Renderer}; notifications that override fields compile their merged content
 * themselves with {@link CompiledContent#compile}.
 */
public record TemplateSnapshot(UUID templateId, int version, TemplateContent content, CompiledContent compiled) {
}
