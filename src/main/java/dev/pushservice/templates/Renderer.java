package dev.pushservice.templates;

import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The one placeholder renderer: fills compiled strings ({@link CompiledText}, {@link CompiledJson},
 * {@link CompiledContent}) with one recipient's {@link Values}. Stateless and thread-safe; runs per
 * recipient in fan-out, so it only appends precomputed pieces and looks values up by key.
 *
 * <p>What a placeholder renders as:
 * <ul>
 *   <li>a missing value (no external id, no such tag, property or template key, a path through a
 *       non-object, JSON {@code null}) renders as the empty string;</li>
 *   <li>a string as itself; a number or boolean as its JSON text ({@code 42}, {@code 3.5},
 *       {@code true}); an object or array as compact JSON;</li>
 *   <li>nothing is escaped (push text is plain text) and a rendered value is never parsed again,
 *       so a value containing {@code {{ … }}} appears as written.</li>
 * </ul>
 * Placeholders inside {@code data} strings render to strings too: {@code "{{ properties.age }}"}
 * becomes {@code "42"}, never the number 42.
 */
public final class Renderer {

    private Renderer() {
    }

    /**
     * What placeholders read for one recipient. Any part may be null (read as missing).
     *
     * @param externalUserId for {@code {{ external_user_id }}}
     * @param tags the user's tags, for {@code {{ tags.<key> }}}
     * @param properties the user's properties object, for {@code {{ properties.<path> }}}
     * @param templateData the notification's {@code template_data} object, for {@code {{ template.<path> }}}
     */
    public record Values(String externalUserId, Map<String, String> tags, JsonNode properties, JsonNode templateData) {

        /** No values at all: every placeholder renders empty. */
        public static final Values NONE = new Values(null, null, null, null);
    }

    /** Renders {@code text}; a constant text is returned as is, without copying. */
    public static String render(CompiledText text, Values values) {
        Placeholder[] placeholders = text.placeholders;
        if (placeholders.length == 0) return text.source();
        String[] literals = text.literals;
        StringBuilder out = new StringBuilder(text.literalLength + 16 * placeholders.length);
        for (int i = 0; i < placeholders.length; i++) {
            out.append(literals[i]);
            append(out, placeholders[i], values);
        }
        return out.append(literals[placeholders.length]).toString();
    }

    /** Renders every templated string in {@code data}; constant subtrees are shared, not copied. */
    public static JsonNode render(CompiledJson data, Values values) {
        return render(data.root, values);
    }

    /** Renders every string of {@code content}. */
    public static RenderedContent render(CompiledContent content, Values values) {
        return new RenderedContent(
                render(content.title(), values),
                render(content.body(), values),
                content.clickUrl() == null ? null : render(content.clickUrl(), values),
                content.data() == null ? null : render(content.data(), values),
                content.interruptionLevel());
    }

    private static JsonNode render(CompiledJson.Node node, Values values) {
        return switch (node) {
            case CompiledJson.Constant c -> c.value();
            case CompiledJson.Text t -> JsonNodeFactory.instance.stringNode(render(t.text(), values));
            case CompiledJson.Obj o -> {
                ObjectNode object = JsonNodeFactory.instance.objectNode();
                for (int i = 0; i < o.keys().length; i++) object.set(o.keys()[i], render(o.values()[i], values));
                yield object;
            }
            case CompiledJson.Arr a -> {
                ArrayNode array = JsonNodeFactory.instance.arrayNode(a.items().length);
                for (CompiledJson.Node item : a.items()) array.add(render(item, values));
                yield array;
            }
        };
    }

    private static void append(StringBuilder out, Placeholder p, Values values) {
        switch (p.source()) {
            case EXTERNAL_USER_ID -> {
                if (values.externalUserId() != null) out.append(values.externalUserId());
            }
            case TAGS -> {
                String tag = values.tags() == null ? null : values.tags().get(p.key());
                if (tag != null) out.append(tag);
            }
            case PROPERTIES -> appendJson(out, walk(values.properties(), p.path));
            case TEMPLATE -> appendJson(out, walk(values.templateData(), p.path));
        }
    }

    private static JsonNode walk(JsonNode node, String[] path) {
        for (String segment : path) {
            if (node == null || !node.isObject()) return null;
            node = node.get(segment);
        }
        return node;
    }

    private static void appendJson(StringBuilder out, JsonNode value) {
        if (value == null || value.isNull() || value.isMissingNode()) return;
        if (value.isString()) out.append(value.stringValue());
        // asString() is the plain text of a scalar; toString() would run a JSON generator
        else if (value.isNumber() || value.isBoolean()) out.append(value.asString());
        else out.append(value.toString());
    }
}
