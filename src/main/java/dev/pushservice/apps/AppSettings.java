package dev.pushservice.apps;

/**
 * What {@code /v1/app/settings} shows: the app's name and the time zone its analytics days are
 * counted in. Later features add their own sections (identity verification, delivery controls,
 * provider credentials shown only as "configured" facts).
 */
public record AppSettings(String name, String timezone) {
}
