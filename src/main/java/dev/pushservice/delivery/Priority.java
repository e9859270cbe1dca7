package dev.pushservice.delivery;

/** The processing queue of a notification; {@link #TRANSACTIONAL} is served first. */
public enum Priority {
    TRANSACTIONAL, HIGH, NORMAL, BULK;

    public String value() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Queue priorities that providers treat as "deliver now" (APNs 10, FCM HIGH, Web Push high). */
    public boolean urgent() {
        return this == TRANSACTIONAL || this == HIGH;
    }
}
