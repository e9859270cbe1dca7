package dev.pushservice.delivery;

/** A device's platform, and so which provider delivers to it. */
public enum Platform {
    IOS, ANDROID, WEB;

    public String value() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
