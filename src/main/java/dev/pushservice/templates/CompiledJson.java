package dev.pushservice.templates;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import tools.jackson.databind.JsonNode;

/**
 * A JSON value (a template's {@code content.data}) whose string values, at any depth, are
 * {@link CompiledText}s; object keys are literal. Subtrees without placeholders are kept as the
 * original nodes and shared by every rendering, so a constant {@code data} costs nothing per
 * recipient. Immutable as long as nobody mutates the node it was compiled from.
 */
public final class CompiledJson {

    sealed interface Node permits Constant, Text, Obj, Arr {
    }

    record Constant(JsonNode value) implements Node {
    }

    record Text(CompiledText text) implements Node {
    }

    record Obj(String[] keys, Node[] values) implements Node {
    }

    record Arr(Node[] items) implements Node {
    }

    final Node root;
    private final JsonNode source;

    private CompiledJson(Node root, JsonNode source) {
        this.root = root;
        this.source = source;
    }

    /**
     * Compiles {@code value}; each string with bad placeholder syntax is reported to {@code problems}
     * as (path, message), the path starting with {@code field} ({@code data.links[0]},
     * {@code data.deep.key}). Returns null when anything was reported.
     */
    public static CompiledJson compile(JsonNode value, String field, BiConsumer<String, String> problems) {
        boolean[] failed = {false};
        Node root = node(value, field, (path, message) -> {
            failed[0] = true;
            problems.accept(path, message);
        });
        return failed[0] ? null : new CompiledJson(root, value);
    }

    private static Node node(JsonNode value, String path, BiConsumer<String, String> problems) {
        if (value.isString()) {
            try {
                CompiledText text = CompiledText.parse(value.stringValue());
                return text.isConstant() ? new Constant(value) : new Text(text);
            } catch (PlaceholderException e) {
                problems.accept(path, e.getMessage());
                return new Constant(value);
            }
        }
        if (value.isObject()) {
            List<String> keys = new ArrayList<>();
            List<Node> values = new ArrayList<>();
            boolean constant = true;
            for (Map.Entry<String, JsonNode> e : value.properties()) {
                Node child = node(e.getValue(), path + "." + e.getKey(), problems);
                constant &= child instanceof Constant;
                keys.add(e.getKey());
                values.add(child);
            }
            return constant ? new Constant(value) : new Obj(keys.toArray(String[]::new), values.toArray(Node[]::new));
        }
        if (value.isArray()) {
            Node[] items = new Node[value.size()];
            boolean constant = true;
            for (int i = 0; i < items.length; i++) {
                items[i] = node(value.get(i), path + "[" + i + "]", problems);
                constant &= items[i] instanceof Constant;
            }
            return constant ? new Constant(value) : new Arr(items);
        }
        return new Constant(value);
    }

    /** The JSON as written. */
    public JsonNode source() {
        return source;
    }

    /** True when no string in the value has a placeholder. */
    public boolean isConstant() {
        return root instanceof Constant;
    }
}
