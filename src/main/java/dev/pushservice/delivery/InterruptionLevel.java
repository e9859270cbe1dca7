package dev.pushservice.delivery;

/** How intrusively a notification is presented (spec table "Interruption level presentation"). */
public enum InterruptionLevel {
    PASSIVE, ACTIVE, TIME_SENSITIVE, CRITICAL;

    public String value() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
