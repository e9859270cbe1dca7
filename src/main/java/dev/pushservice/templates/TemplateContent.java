package dev.pushservice.templates;

import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Urls;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * One immutable version of a template's content, as stored and as the API shows it. Strings may
 * hold placeholders (see {@link CompiledText}); compile with {@link CompiledContent#compile}.
 *
 * @param clickUrl null when unset
 * @param data a JSON object, or null when unset; never modify it
 * @param interruptionLevel {@code passive}, {@code active}, {@code time_sensitive}, {@code critical}, or null when unset
 */
public record TemplateContent(String title, String body, String clickUrl, JsonNode data, String interruptionLevel) {

    static final Set<String> INTERRUPTION_LEVELS = InterruptionLevel.WIRE_VALUES;

    /**
     * Reads content from {@code in} (the {@code content} object) with every rule: types, lengths,
     * the interruption level, and placeholder syntax in every string. Problems are recorded on
     * {@code in}; returns null when there were any.
     */
    static TemplateContent read(JsonInput in) {
        String title = in.requiredMultilineText("title", Limits.TITLE);
        String body = in.requiredMultilineText("body", Limits.BODY);
        String clickUrl = in.string("click_url", Limits.CLICK_URL, Urls::clickUrlProblem);
        JsonNode data = in.value("data");
        if (data != null && !data.isObject()) {
            in.reject("data", "must be an object");
            data = null;
        } else if (data != null && data.toString().getBytes(StandardCharsets.UTF_8).length > Limits.DATA_BYTES) {
            in.reject("data", "must be at most " + Limits.DATA_BYTES + " bytes as JSON");
            data = null;
        }
        String level = in.string("interruption_level", 20);
        if (level != null && !INTERRUPTION_LEVELS.contains(level)) {
            in.reject("interruption_level", "must be one of passive, active, time_sensitive, critical");
        }
        if (in.hasErrors()) {
            // still report placeholder problems of the fields that were fine, so one 422 tells all
            if (title != null || body != null || clickUrl != null || data != null) {
                CompiledContent.compile(new TemplateContent(title, body, clickUrl, data, null), in::reject);
            }
            return null;
        }
        TemplateContent content = new TemplateContent(title, body, clickUrl, data, level);
        return CompiledContent.compile(content, in::reject) == null ? null : content;
    }

    /** The stored form: the API field names, unset fields left out. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode();
        node.put("title", title);
        node.put("body", body);
        if (clickUrl != null) node.put("click_url", clickUrl);
        if (data != null) node.set("data", data);
        if (interruptionLevel != null) node.put("interruption_level", interruptionLevel);
        return node;
    }

    static TemplateContent fromJson(JsonNode node) {
        JsonNode data = node.get("data");
        return new TemplateContent(node.path("title").stringValue(), node.path("body").stringValue(),
                text(node, "click_url"), data == null || data.isNull() ? null : data, text(node, "interruption_level"));
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.stringValue();
    }
}
