package dev.pushservice.templates;

import tools.jackson.databind.JsonNode;

/**
 * Content rendered for one recipient. {@code data} may be the very node the template was
 * compiled from (when it has no placeholders): read or serialise it, never modify it.
 *
 * @param clickUrl null when the content has none
 * @param data null when the content has none
 * @param interruptionLevel the wire value, or null when the content leaves it unset
 */
public record RenderedContent(String title, String body, String clickUrl, JsonNode data, String interruptionLevel) {
}
