package dev.pushservice.segments;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * The rules of a segment create or update body, for every caller ({@code /v1/segments} and the
 * dashboard). Names are 1–{@value Limits#NAME} characters, descriptions up to
 * {@value Limits#DESCRIPTION}; neither may contain control characters (a description may contain
 * line breaks and tabs); the filter is read by {@link FilterParser}. Every problem in one {@link InvalidInput}.
 */
public final class SegmentInput {

    private SegmentInput() {
    }

    public record Create(String name, String description, Filter filter) {
    }

    public static Create create(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = name(in, true);
        String description = description(in);
        Filter filter = filter(in, true);
        in.check();
        return new Create(name, description, filter);
    }

    public static SegmentService.Patch update(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = name(in, false);
        String description = description(in);
        Filter filter = filter(in, false);
        in.check();
        boolean clearDescription = in.has("description") && in.value("description") == null;
        return new SegmentService.Patch(name, description, clearDescription, filter);
    }

    private static String name(JsonInput in, boolean required) {
        if (!required && in.has("name") && in.value("name") == null) {
            in.reject("name", "cannot be removed; give a new name or leave the field out");
            return null;
        }
        return required || in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
    }

    private static String description(JsonInput in) {
        String description = in.string("description", Limits.DESCRIPTION);
        if (description != null && TextRules.hasControlBesidesLineBreaks(description)) {
            in.reject("description", TextRules.NO_CONTROL_BUT_LINE_BREAKS);
            return null;
        }
        return description;
    }

    static Filter filter(JsonInput in, boolean required) {
        JsonNode node = in.value("filter");
        if (node == null) {
            if (required || in.has("filter")) in.reject("filter", "is required: a condition or a group");
            return null;
        }
        List<Violation> errors = new ArrayList<>();
        Filter filter = FilterParser.parse(node, in.name("filter"), errors);
        // JsonInput prefixes its own path, which is empty at the top level
        errors.forEach(e -> in.reject(e.field(), e.message()));
        return filter;
    }

    /** An unsaved filter as {@code POST /v1/segments/estimate} reads it ({@code {"filter": …}}). */
    public static Filter estimateFilter(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        Filter filter = filter(in, true);
        in.check();
        return filter;
    }
}
