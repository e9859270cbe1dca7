package dev.pushservice.templates;

/**
 * A template string with broken placeholder syntax or an unknown source. The message names the
 * placeholder and its 1-based character position, and says how to fix it; it is written for the
 * API client and carries no field name (the caller adds that).
 */
public final class PlaceholderException extends Exception {

    private final int position;

    PlaceholderException(int position, String message) {
        super(message, null, false, false);
        this.position = position;
    }

    /** 1-based position of the offending {@code {{} or {@code }}} in the string. */
    public int position() {
        return position;
    }
}
