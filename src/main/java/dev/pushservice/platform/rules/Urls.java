package dev.pushservice.platform.rules;

import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a notification's URLs may be, wherever content is accepted (notifications, their
 * localizations, templates, journeys' push steps, web overrides). Stateless and thread-safe.
 *
 * <ul>
 *   <li>A <b>click URL</b> (the spec's "deep link or HTTPS destination") is an absolute URI: an
 *       {@code https} URL with a host, or a deep link in an app's own scheme ({@code myapp://orders/17},
 *       {@code myapp:inbox}). Schemes that run code or show content the sender did not host
 *       ({@code javascript}, {@code vbscript}, {@code data}, {@code blob}, {@code file},
 *       {@code filesystem}, {@code about}, {@code view-source}) are refused, and so are the plaintext or
 *       non-page web schemes ({@code http}, {@code ftp}, {@code ws}, {@code wss}): the spec names HTTPS
 *       as the web destination, and a plaintext link opened from a notification can be rewritten on
 *       the way. The scheme must be literal: text before the first {@code :} holds no placeholder, so
 *       no rendered value can change it.</li>
 *   <li>An <b>image URL</b> (and a web icon or badge) is an absolute {@code https} URL with a host:
 *       iOS (App Transport Security) and browsers (mixed content) do not load plaintext images, so
 *       an {@code http} image would only fail on the device, silently.</li>
 * </ul>
 */
public final class Urls {

    /** The message for a URL that is blank or has a control character. */
    public static final String NOT_EMPTY = "must be a non-empty URL without control characters (leave it out for none)";
    /** The message for a click URL that is not one. */
    public static final String CLICK_URL_RULE = "must be an https URL (https://host/…) or an app deep link (myapp://…);"
            + " http, javascript, data, vbscript, file and similar schemes are refused, and the scheme cannot come from a placeholder";
    /** The message for an image URL that is not one. */
    public static final String IMAGE_URL_RULE = "must be an absolute https URL (https://host/…); http images are not loaded by iOS or browsers";

    /** Schemes a click URL may not use (lower case). */
    public static final Set<String> REFUSED_SCHEMES = Set.of("http", "ftp", "ws", "wss", "javascript", "vbscript", "data",
            "blob", "file", "filesystem", "about", "view-source");

    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*");

    private Urls() {
    }

    /**
     * What is wrong with a click URL (which may hold placeholders after its scheme), or null when
     * nothing is.
     */
    public static String clickUrlProblem(String url) {
        if (url.isBlank() || TextRules.hasControl(url)) return NOT_EMPTY;
        int colon = url.indexOf(':');
        if (colon < 1 || !SCHEME.matcher(url.substring(0, colon)).matches()) return CLICK_URL_RULE;
        String scheme = url.substring(0, colon).toLowerCase(Locale.ROOT);
        if (REFUSED_SCHEMES.contains(scheme)) return CLICK_URL_RULE;
        if (scheme.equals("https")) return hasHost(url, colon) ? null : CLICK_URL_RULE;
        return colon + 1 < url.length() ? null : CLICK_URL_RULE;
    }

    /** What is wrong with an image URL (no placeholders), or null when nothing is. */
    public static String imageUrlProblem(String url) {
        if (url.isBlank() || TextRules.hasControl(url)) return NOT_EMPTY;
        int colon = url.indexOf(':');
        boolean https = colon == 5 && url.substring(0, colon).equalsIgnoreCase("https") && hasHost(url, colon);
        return https ? null : IMAGE_URL_RULE;
    }

    /** Whether {@code //authority} follows the scheme's colon, with a non-empty authority without spaces. */
    private static boolean hasHost(String url, int colon) {
        if (!url.startsWith("//", colon + 1)) return false;
        int start = colon + 3;
        int end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) end++;
        String authority = url.substring(start, end);
        return !authority.isEmpty() && (authority.contains("{{") || authority.chars().noneMatch(Character::isWhitespace));
    }
}
