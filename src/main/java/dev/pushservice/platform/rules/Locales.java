package dev.pushservice.platform.rules;

import java.util.regex.Pattern;

/**
 * The one rule for locales in requests: a BCP 47-like tag of at most {@value Limits#LOCALE}
 * characters, a 2–3 letter language and optional subtags of 1–8 letters or digits joined by
 * {@code -} or {@code _} ({@code en}, {@code en-US}, {@code pt_BR}, {@code zh-Hant-TW}): what the
 * SDKs report. Not checked against a registry, so a new region or script never needs a release.
 */
public final class Locales {

    /** The message for a value that breaks the rule. */
    public static final String RULE = "must be a language tag such as en, en-US or pt_BR";

    private static final Pattern LOCALE = Pattern.compile("[A-Za-z]{2,3}([_-][A-Za-z0-9]{1,8})*");

    private Locales() {
    }

    public static boolean isValid(String locale) {
        return locale != null && locale.length() <= Limits.LOCALE && LOCALE.matcher(locale).matches();
    }
}
