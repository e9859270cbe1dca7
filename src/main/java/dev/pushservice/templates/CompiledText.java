package dev.pushservice.templates;

import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import java.util.List;

/**
 * A string parsed once for {@code {{ name }}} placeholders, ready to be rendered many times by
 * {@link Renderer}: literal pieces and {@link Placeholder}s in order, so rendering is appends only
 * (no scanning, no regular expressions). Immutable and thread-safe.
 *
 * <p>Grammar: {@code {{}, optional spaces or tabs, a name, optional spaces or tabs, {@code }}}. A
 * name is {@code external_user_id}, {@code tags.<key>} (key: 1–128 of {@code A-Z a-z 0-9 . _ -}),
 * {@code properties.<path>} or {@code template.<path>} (path: segments of {@code A-Z a-z 0-9 _ -}
 * joined by {@code .}, at most 256 characters). Sources are case-sensitive. Refused, with the
 * position: an unclosed {@code {{}, a {@code }}} without an opening {@code {{}, an empty
 * placeholder, an unknown source, a missing or empty key, a bad key character. There is no escape:
 * a text that must show {@code {{} or {@code }}} literally can take it from {@code template_data}
 * (rendered values are never parsed again). A single {@code {} or {@code }} is ordinary text.
 */
public final class CompiledText {

    static final int MAX_PATH = 256;
    private static final String SOURCES = "external_user_id, tags.<key>, properties.<key> or template.<key>";

    private final String source;
    // literals.length == placeholders.length + 1; text = l0 p0 l1 p1 … ln
    final String[] literals;
    final Placeholder[] placeholders;
    final int literalLength;

    private CompiledText(String source, String[] literals, Placeholder[] placeholders) {
        this.source = source;
        this.literals = literals;
        this.placeholders = placeholders;
        int length = 0;
        for (String l : literals) length += l.length();
        this.literalLength = length;
    }

    /** Parses {@code text}; never null. */
    public static CompiledText parse(String text) throws PlaceholderException {
        java.util.ArrayList<String> literals = new java.util.ArrayList<>();
        java.util.ArrayList<Placeholder> placeholders = new java.util.ArrayList<>();
        int from = 0;
        while (true) {
            int open = text.indexOf("{{", from);
            int close = text.indexOf("}}", from);
            if (close >= 0 && (open < 0 || close < open)) {
                throw new PlaceholderException(close + 1, "'}}' at character " + (close + 1)
                        + " has no opening '{{' (placeholders look like {{ tags.plan }})");
            }
            if (open < 0) break;
            int end = text.indexOf("}}", open + 2);
            int nextOpen = text.indexOf("{{", open + 2);
            if (end < 0 || (nextOpen >= 0 && nextOpen < end)) {
                throw new PlaceholderException(open + 1, "'{{' at character " + (open + 1)
                        + " is not closed with '}}' (placeholders look like {{ tags.plan }})");
            }
            literals.add(text.substring(from, open));
            placeholders.add(placeholder(text.substring(open, end + 2), open + 1, strip(text, open + 2, end)));
            from = end + 2;
        }
        literals.add(text.substring(from));
        return new CompiledText(text, literals.toArray(String[]::new), placeholders.toArray(Placeholder[]::new));
    }

    private static String strip(String text, int start, int end) {
        while (start < end && isBlank(text.charAt(start))) start++;
        while (end > start && isBlank(text.charAt(end - 1))) end--;
        return text.substring(start, end);
    }

    private static boolean isBlank(char c) {
        return c == ' ' || c == '\t';
    }

    private static Placeholder placeholder(String written, int at, String name) throws PlaceholderException {
        String shown = written.length() > 80 ? written.substring(0, 77) + "..." : written;
        String where = " at character " + at;
        if (name.isEmpty()) {
            throw new PlaceholderException(at, "empty placeholder '" + shown + "'" + where + "; use " + SOURCES);
        }
        if (name.equals(Placeholder.Source.EXTERNAL_USER_ID.prefix())) {
            return new Placeholder(Placeholder.Source.EXTERNAL_USER_ID, "", new String[0]);
        }
        int dot = name.indexOf('.');
        String prefix = dot < 0 ? name : name.substring(0, dot);
        Placeholder.Source source = switch (prefix) {
            case "tags" -> Placeholder.Source.TAGS;
            case "properties" -> Placeholder.Source.PROPERTIES;
            case "template" -> Placeholder.Source.TEMPLATE;
            case "external_user_id" -> throw new PlaceholderException(at,
                    "placeholder '" + shown + "'" + where + ": external_user_id takes no key");
            default -> throw new PlaceholderException(at, "unknown placeholder source '" + truncate(prefix) + "' in '"
                    + shown + "'" + where + "; use " + SOURCES);
        };
        if (dot < 0 || dot == name.length() - 1) {
            throw new PlaceholderException(at, "placeholder '" + shown + "'" + where + " has no key; write "
                    + source.prefix() + ".<key>");
        }
        String key = name.substring(dot + 1);
        if (source == Placeholder.Source.TAGS) {
            if (!TextRules.isKey(key, Limits.TAG_KEY)) {
                throw new PlaceholderException(at, "placeholder '" + shown + "'" + where + ": tag keys are 1 to "
                        + Limits.TAG_KEY + " " + TextRules.KEY_CHARACTERS);
            }
            return new Placeholder(source, key, new String[] {key});
        }
        String[] path = key.split("\\.", -1);
        for (String segment : path) {
            if (segment.isEmpty() || !validChars(segment) || key.length() > MAX_PATH) {
                throw new PlaceholderException(at, "placeholder '" + shown + "'" + where + ": " + source.prefix()
                        + " keys are paths of letters, digits, '_' or '-' joined by '.' (at most " + MAX_PATH
                        + " characters), e.g. " + source.prefix() + ".address.city");
            }
        }
        return new Placeholder(source, key, path);
    }

    private static String truncate(String s) {
        return s.length() > 40 ? s.substring(0, 37) + "..." : s;
    }

    /** A segment of a properties or template key path: key characters without the dot that joins segments. */
    private static boolean validChars(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
            if (!ok) return false;
        }
        return true;
    }

    /** The text as written. */
    public String source() {
        return source;
    }

    /** True when the text has no placeholders: rendering returns {@link #source()} itself. */
    public boolean isConstant() {
        return placeholders.length == 0;
    }

    /** The placeholders in order of appearance (repeats included). */
    public List<Placeholder> placeholders() {
        return List.of(placeholders);
    }

    @Override
    public String toString() {
        return source;
    }
}
