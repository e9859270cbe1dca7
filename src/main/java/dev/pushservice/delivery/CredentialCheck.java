package dev.pushservice.delivery;

/**
 * What a provider said of an app's credentials when asked without showing anything to a person
 * ({@link PushProvider#checkCredentials}): {@code ok}, {@code invalid} (the provider refuses them;
 * {@code reason} in its words), {@code not_configured}, or {@code unavailable} (no verdict: the provider
 * did not answer, or limits us; {@code reason} says what happened).
 *
 * @param reason null for {@code ok} and {@code not_configured}; never a secret
 */
public record CredentialCheck(String status, String reason) {

    public static final String OK = "ok";
    public static final String INVALID = "invalid";
    public static final String NOT_CONFIGURED = "not_configured";
    public static final String UNAVAILABLE = "unavailable";

    public static CredentialCheck ok() {
        return new CredentialCheck(OK, null);
    }

    public static CredentialCheck invalid(String reason) {
        return new CredentialCheck(INVALID, reason);
    }

    public static CredentialCheck notConfigured() {
        return new CredentialCheck(NOT_CONFIGURED, null);
    }

    public static CredentialCheck unavailable(String reason) {
        return new CredentialCheck(UNAVAILABLE, reason);
    }

    /**
     * The verdict of a provider's answer to a check request: refused credentials are {@code invalid};
     * any other rejection is {@code ok}, since providers authenticate the sender before they judge the
     * message (a made-up token answered {@code BadDeviceToken} proves the key good); a transient
     * failure gives no verdict.
     */
    public static CredentialCheck of(DeliveryResult answer) {
        return switch (answer) {
            case DeliveryResult.Accepted a -> ok();
            case DeliveryResult.Rejected r -> switch (r.reason()) {
                case CREDENTIALS_INVALID -> invalid(r.detail() == null ? r.reason().code() : r.detail());
                case CREDENTIALS_MISSING -> notConfigured();
                default -> ok();
            };
            case DeliveryResult.Failed f -> unavailable(f.reason().code() + (f.detail() == null ? "" : ": " + f.detail()));
        };
    }
}
