package dev.pushservice.platform.rules;

/**
 * The one rule for the name of a custom or outcome event, wherever it is named: {@code event_name}
 * at ingest, {@code custom_event.<name>} in segment filters, journey triggers. A name is a
 * {@linkplain TextRules#isKey key} of 1 to {@value Limits#EVENT_NAME} characters, case-sensitive.
 * One rule on both sides because a filter naming an event that ingest refuses could never match.
 */
public final class EventNames {

    /** The message for a name that breaks the rule. */
    public static final String RULE = TextRules.keyRule(Limits.EVENT_NAME);

    private EventNames() {
    }

    public static boolean isValid(String name) {
        return TextRules.isKey(name, Limits.EVENT_NAME);
    }
}
