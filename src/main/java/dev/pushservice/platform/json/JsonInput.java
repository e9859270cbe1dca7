package dev.pushservice.platform.json;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Malformed;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.rules.TextRules;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import tools.jackson.databind.JsonNode;

/**
 * Reads and checks a JSON request body field by field, collecting every problem so the client
 * gets them all in one 422. No coercion: {@code "60"} is not an integer and {@code 12345} is not a
 * string. Unknown fields are ignored; JSON {@code null} counts as absent unless a reader says otherwise.
 *
 * <pre>{@code
 * JsonInput in = JsonInput.object(body);
 * String name = in.requiredText("name", Limits.NAME);
 * Long ttl = in.integer("ttl", Limits.TTL_MIN, Limits.TTL_MAX);
 * in.check();              // throws InvalidInput (422) with all collected details
 * }</pre>
 */
public final class JsonInput {

    private final JsonNode node;
    private final String path;
    private final List<Violation> errors;

    private JsonInput(JsonNode node, String path, List<Violation> errors) {
        this.node = node;
        this.path = path;
        this.errors = errors;
    }

    /** The body must be a JSON object; anything else is {@link Malformed} (400 {@code malformed_request}). */
    public static JsonInput object(JsonNode body) {
        if (body == null || !body.isObject()) {
            throw new Malformed("Request body must be a JSON object");
        }
        return new JsonInput(body, "", new ArrayList<>());
    }

    /** A nested object, sharing this input's error list; empty when absent or not an object (recorded). */
    public Optional<JsonInput> nested(String field) {
        JsonNode value = value(field);
        if (value == null) return Optional.empty();
        if (!value.isObject()) {
            reject(field, "must be an object");
            return Optional.empty();
        }
        return Optional.of(new JsonInput(value, name(field) + ".", errors));
    }

    /**
     * Element {@code index} of the array {@code field}, as an object sharing this input's error list
     * (its problems are named {@code field[index].name}); empty when it is not an object (recorded).
     */
    public Optional<JsonInput> element(String field, int index, JsonNode value) {
        String where = name(field) + "[" + index + "]";
        if (value == null || !value.isObject()) {
            errors.add(new Violation(where, "must be an object"));
            return Optional.empty();
        }
        return Optional.of(new JsonInput(value, where + ".", errors));
    }

    public JsonNode raw() {
        return node;
    }

    /** The field's value, or null when absent or JSON null. */
    public JsonNode value(String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value;
    }

    public boolean has(String field) {
        return node.has(field);
    }

    public String name(String field) {
        return path + field;
    }

    public String string(String field, int maxLength) {
        JsonNode value = value(field);
        if (value == null) return null;
        if (!value.isString()) {
            reject(field, "must be a string");
            return null;
        }
        String s = value.stringValue();
        if (TextRules.length(s) > maxLength) {
            reject(field, "must be at most " + maxLength + " characters");
            return null;
        }
        return s;
    }

    public String requiredString(String field, int maxLength) {
        if (value(field) == null) {
            reject(field, "is required");
            return null;
        }
        String s = string(field, maxLength);
        if (s != null && s.isBlank()) {
            reject(field, "must not be empty");
            return null;
        }
        return s;
    }

    /** An optional free-text value: a string of at most {@code maxLength} characters without control characters ({@link TextRules}). */
    public String text(String field, int maxLength) {
        return withoutControl(field, string(field, maxLength));
    }

    /** A required free-text value: present, not blank, at most {@code maxLength} characters, no control characters. */
    public String requiredText(String field, int maxLength) {
        return withoutControl(field, requiredString(field, maxLength));
    }

    /**
     * A required multi-line text (a push's title or body): present, not blank, at most
     * {@code maxLength} characters, line breaks and tabs but no other control characters.
     */
    public String requiredMultilineText(String field, int maxLength) {
        String s = requiredString(field, maxLength);
        if (s != null && TextRules.hasControlBesidesLineBreaks(s)) {
            reject(field, TextRules.NO_CONTROL_BUT_LINE_BREAKS);
            return null;
        }
        return s;
    }

    /**
     * An optional string of at most {@code maxLength} characters that {@code rule} accepts: the rule
     * names what is wrong with a value (the message of the rejection), or returns null.
     */
    public String string(String field, int maxLength, Function<String, String> rule) {
        String s = string(field, maxLength);
        String problem = s == null ? null : rule.apply(s);
        if (problem != null) {
            reject(field, problem);
            return null;
        }
        return s;
    }

    private String withoutControl(String field, String s) {
        if (s != null && TextRules.hasControl(s)) {
            reject(field, TextRules.NO_CONTROL);
            return null;
        }
        return s;
    }

    public Long integer(String field, long min, long max) {
        JsonNode value = value(field);
        if (value == null) return null;
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            reject(field, "must be an integer");
            return null;
        }
        long n = value.longValue();
        if (n < min || n > max) {
            reject(field, "must be between " + min + " and " + max);
            return null;
        }
        return n;
    }

    public Boolean bool(String field) {
        JsonNode value = value(field);
        if (value == null) return null;
        if (!value.isBoolean()) {
            reject(field, "must be true or false");
            return null;
        }
        return value.booleanValue();
    }

    /** Records a problem with {@code field} (relative to this object). */
    public void reject(String field, String message) {
        errors.add(new Violation(name(field), message));
    }

    /** Records problems found elsewhere (their fields are already full paths). */
    public void rejectAll(List<Violation> details) {
        errors.addAll(details);
    }

    public boolean hasErrors() {
        return !errors.isEmpty();
    }

    /** Throws {@link InvalidInput} (422) listing everything rejected, if anything was. */
    public void check() {
        if (!errors.isEmpty()) {
            throw new InvalidInput(errors);
        }
    }
}
