package dev.pushservice.delivery;

import java.util.Locale;

/**
 * Reason codes the delivery engine itself writes into a recipient's last error, and the bounded
 * form of a provider's reason used as a metric tag. A provider's reason text may carry detail
 * ("ConnectionError: Connection refused"); its code is the part before the first colon, so a metric
 * never gets one series per message.
 */
public final class DeliveryReasons {

    /** The app has no credentials for the recipient's platform: failed at once, never retried. */
    public static final String CREDENTIALS_MISSING = "credentials_missing";
    /** Never handed to a provider: the notification was cancelled first. */
    public static final String CANCELLED = "cancelled";
    /** The message could not be built for this recipient (content the provider would refuse). */
    public static final String RENDER_FAILED = "render_failed";
    /** The provider contract was broken (its future failed): treated as a transient failure. */
    public static final String PROVIDER_ERROR = "provider_error";
    /** No provider is registered for the platform. */
    public static final String NO_PROVIDER = "no_provider";

    private static final int MAX_CODE = 48;

    private DeliveryReasons() {
    }

    /** The code of a provider's reason: up to the first colon, at most 48 characters. */
    public static String code(String reason) {
        if (reason == null || reason.isBlank()) return "unknown";
        int colon = reason.indexOf(':');
        String code = (colon >= 0 ? reason.substring(0, colon) : reason).strip();
        if (code.isEmpty()) return "unknown";
        return code.length() <= MAX_CODE ? code : code.substring(0, MAX_CODE);
    }

    /** Whether a rejection means the app has no credentials for the platform. */
    public static boolean credentialsMissing(String reason) {
        String code = code(reason);
        // "NotConfigured" is how the providers phrase it before they adopt the one list of codes
        return CREDENTIALS_MISSING.equals(code) || "NotConfigured".equals(code)
                || code.toLowerCase(Locale.ROOT).contains("credentials_missing");
    }
}
