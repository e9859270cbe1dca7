package dev.pushservice.platform.error;

import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.TokenStreamContext;

/**
 * How an error detail names a place in a JSON body ({@link ErrorDetail#field()}): {@code a.b[2].c},
 * names made printable, at most 200 characters. One home for the request path's text rules
 * ({@code platform.json.StorableText}) and the reader's refusals (a duplicate key). Stateless and
 * thread-safe.
 */
public final class JsonPaths {

    private static final int MAX_FIELD = 200;

    private JsonPaths() {
    }

    /** The path of a parser's current token. */
    public static String of(TokenStreamContext context) {
        List<String> parts = new ArrayList<>();
        for (TokenStreamContext c = context; c != null && !c.inRoot(); c = c.getParent()) {
            if (c.inArray()) parts.add("[" + Math.max(0, c.getCurrentIndex()) + "]");
            else if (c.currentName() != null) parts.add("." + printable(c.currentName()));
        }
        StringBuilder path = new StringBuilder();
        for (int i = parts.size() - 1; i >= 0; i--) path.append(parts.get(i));
        String s = path.length() > 0 && path.charAt(0) == '.' ? path.substring(1) : path.toString();
        if (s.length() <= MAX_FIELD) return s;
        int cut = Character.isHighSurrogate(s.charAt(MAX_FIELD - 1)) ? MAX_FIELD - 1 : MAX_FIELD;
        return s.substring(0, cut) + "…";
    }

    /** A name as it can be shown: U+0000, other control characters and unpaired surrogates as <code>&#92;uXXXX</code>. */
    public static String printable(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean pair = Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
            if (pair) {
                out.append(c).append(s.charAt(++i));
            } else if (Character.isISOControl(c) || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
