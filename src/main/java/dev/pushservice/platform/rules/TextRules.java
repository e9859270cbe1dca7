package dev.pushservice.platform.rules;

import java.util.regex.Pattern;

/**
 * The per-field character rules. Free text (names, labels, versions, user ids, URLs) must not
 * contain control characters: Unicode category Cc, that is U+0000–U+001F and U+007F–U+009F; they
 * break logs, CSV exports and the dashboard, and nothing legitimate needs them. Descriptions may
 * hold line breaks and tabs. Keys (tag keys, alias labels, event names) are built from letters,
 * digits, {@code .}, {@code _} and {@code -} only, so they can be named in a segment filter
 * ({@code tag.<key>}, {@code custom_event.<name>}) and in placeholders without escaping.
 *
 * <p>Refusing NUL and unpaired surrogates anywhere in a request is the request path's job
 * ({@code platform.json.StorableText}, before any route reads its input); these rules say what a
 * single field may hold. Stateless and thread-safe.
 */
public final class TextRules {

    /** The message for a value with a control character. */
    public static final String NO_CONTROL = "must not contain control characters";
    /** The message for a description with a control character other than a line break or tab. */
    public static final String NO_CONTROL_BUT_LINE_BREAKS = "must not contain control characters other than line breaks and tabs";
    /** The characters of a key, as messages name them. */
    public static final String KEY_CHARACTERS = "letters, digits, '.', '_' or '-'";

    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9._-]+");

    private TextRules() {
    }

    /**
     * The length of {@code s} in characters as the spec and {@code openapi.yaml} count them: Unicode
     * code points (JSON Schema's {@code maxLength}, RFC 8259's characters), so an emoji is one
     * character, not the two UTF-16 units of {@link String#length()}.
     */
    public static int length(String s) {
        return s.codePointCount(0, s.length());
    }

    /** Whether {@code s} contains a control character (category Cc). */
    public static boolean hasControl(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isISOControl(s.charAt(i))) return true;
        }
        return false;
    }

    /** Whether {@code s} contains a control character other than {@code \n}, {@code \r} and {@code \t}. */
    public static boolean hasControlBesidesLineBreaks(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isISOControl(c) && c != '\n' && c != '\r' && c != '\t') return true;
        }
        return false;
    }

    /** Whether {@code s} is a key of 1 to {@code maxLength} {@linkplain #KEY_CHARACTERS key characters}. */
    public static boolean isKey(String s, int maxLength) {
        return s != null && !s.isEmpty() && s.length() <= maxLength && KEY.matcher(s).matches();
    }

    /** The message for a value that is not a key: {@code "must be 1 to 80 letters, digits, '.', '_' or '-'"}. */
    public static String keyRule(int maxLength) {
        return "must be 1 to " + maxLength + " " + KEY_CHARACTERS;
    }

    /**
     * What is wrong with a required free-text value of at most {@code maxLength} characters (empty or
     * blank, too long, or with a control character), or null when nothing is. For values that do not
     * come through {@code JsonInput}: path values and CLI options.
     */
    public static String textProblem(String value, int maxLength) {
        if (value == null || value.isBlank()) return "must not be empty";
        if (length(value) > maxLength) return "must be at most " + maxLength + " characters";
        if (hasControl(value)) return NO_CONTROL;
        return null;
    }
}
