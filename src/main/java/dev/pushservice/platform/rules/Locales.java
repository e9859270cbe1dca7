package dev.pushservice.platform.rules;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
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

    /**
     * The form locales are compared in: lower case, subtags joined by {@code -} ({@code pt_BR},
     * {@code pt-br} and {@code PT-BR} are all {@code pt-br}). Tags are case-insensitive in BCP 47,
     * and the SDKs report {@code _} (Android, Java) as often as {@code -} (browsers, iOS).
     */
    public static String normalize(String locale) {
        return locale.replace('_', '-').toLowerCase(Locale.ROOT);
    }

    /**
     * The order in which a recipient's locales are looked up among a notification's
     * localizations: each given locale exactly, in the order given (device, then user), then each
     * of them shortened subtag by subtag as RFC 4647 "lookup" does ({@code zh-Hant-TW} →
     * {@code zh-Hant} → {@code zh}). Normalized ({@link #normalize}), without repeats; null and
     * invalid locales are skipped.
     */
    public static List<String> lookupOrder(String... locales) {
        Set<String> exact = new LinkedHashSet<>();
        for (String l : locales) {
            if (isValid(l)) exact.add(normalize(l));
        }
        Set<String> order = new LinkedHashSet<>(exact);
        for (String l : exact) {
            for (String shorter : shorterForms(l)) order.add(shorter);
        }
        return List.copyOf(order);
    }

    /** {@code locale} (normalized) without its last subtag, repeatedly: {@code zh-hant-tw} → [{@code zh-hant}, {@code zh}]. */
    public static List<String> shorterForms(String locale) {
        List<String> forms = new ArrayList<>();
        String l = normalize(locale);
        for (int dash = l.lastIndexOf('-'); dash > 0; dash = l.lastIndexOf('-')) {
            l = l.substring(0, dash);
            forms.add(l);
        }
        return forms;
    }
}
