package dev.pushservice.templates;

import java.util.List;

/**
 * One {@code {{ … }}} reference in a template string, resolved against a recipient's values by
 * {@link Renderer}. Immutable.
 *
 * <ul>
 *   <li>{@link Source#EXTERNAL_USER_ID}: no key.</li>
 *   <li>{@link Source#TAGS}: one tag key, which may itself contain {@code .}
 *       ({@code tags.app.plan} is the tag {@code app.plan}).</li>
 *   <li>{@link Source#PROPERTIES}, {@link Source#TEMPLATE}: a path of object keys separated by
 *       {@code .} ({@code properties.address.city} reads {@code {"address":{"city":…}}}).</li>
 * </ul>
 */
public final class Placeholder {

    /** Where a placeholder's value comes from; the name before the first {@code .}. */
    public enum Source {
        EXTERNAL_USER_ID("external_user_id"),
        TAGS("tags"),
        PROPERTIES("properties"),
        TEMPLATE("template");

        private final String prefix;

        Source(String prefix) {
            this.prefix = prefix;
        }

        /** The name as written in a placeholder. */
        public String prefix() {
            return prefix;
        }
    }

    private final Source source;
    private final String key;
    // the key split on '.', precomputed so rendering never splits or matches anything
    final String[] path;

    Placeholder(Source source, String key, String[] path) {
        this.source = source;
        this.key = key;
        this.path = path;
    }

    public Source source() {
        return source;
    }

    /** The text after {@code source.}: a tag key or a dotted path; empty for {@code external_user_id}. */
    public String key() {
        return key;
    }

    /** The key as path segments (a tag key is one segment). */
    public List<String> path() {
        return List.of(path);
    }

    /** The placeholder in canonical form, e.g. {@code {{ tags.plan }}}. */
    @Override
    public String toString() {
        return "{{ " + (source == Source.EXTERNAL_USER_ID ? source.prefix : source.prefix + "." + key) + " }}";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Placeholder p && p.source == source && p.key.equals(key);
    }

    @Override
    public int hashCode() {
        return source.hashCode() * 31 + key.hashCode();
    }
}
