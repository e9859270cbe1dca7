package dev.pushservice.templates;

import java.util.function.BiConsumer;

/**
 * A {@link TemplateContent} with every string compiled: what {@link Renderer} renders per
 * recipient. Build it once per template version or notification, never per recipient.
 *
 * @param clickUrl null when the content has none
 * @param data null when the content has none
 * @param interruptionLevel the wire value, or null when the content leaves it unset
 */
public record CompiledContent(CompiledText title, CompiledText body, CompiledText clickUrl, CompiledJson data,
                              String interruptionLevel) {

    /**
     * Compiles every string of {@code content} (title, body, click_url, and each string inside
     * data). Each problem goes to {@code problems} as (field, message), fields named as in the
     * content ({@code title}, {@code data.links[0]}); all problems are reported, and the result is
     * null when there was any.
     */
    public static CompiledContent compile(TemplateContent content, BiConsumer<String, String> problems) {
        boolean[] failed = {false};
        BiConsumer<String, String> report = (field, message) -> {
            failed[0] = true;
            problems.accept(field, message);
        };
        CompiledText title = text(content.title(), "title", report);
        CompiledText body = text(content.body(), "body", report);
        CompiledText clickUrl = text(content.clickUrl(), "click_url", report);
        CompiledJson data = content.data() == null ? null : CompiledJson.compile(content.data(), "data", report);
        return failed[0] ? null : new CompiledContent(title, body, clickUrl, data, content.interruptionLevel());
    }

    private static CompiledText text(String value, String field, BiConsumer<String, String> problems) {
        if (value == null) return null;
        try {
            return CompiledText.parse(value);
        } catch (PlaceholderException e) {
            problems.accept(field, e.getMessage());
            return null;
        }
    }
}
