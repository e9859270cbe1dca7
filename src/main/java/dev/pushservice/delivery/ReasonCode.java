package dev.pushservice.delivery;

import java.util.Locale;

/**
 * Why a push was not accepted: the one list every provider answers with, shown as a recipient's
 * {@code last_error}, counted in metrics and documented in docs/api-decisions.md ("Delivery
 * mapping"). The provider's own words (an APNs reason, an FCM error code and message, a push
 * service's status and explanation) travel beside the code as a detail string, never instead of it.
 *
 * <p>Each code is either permanent ({@link DeliveryResult.Rejected}: retrying cannot help) or
 * transient ({@link DeliveryResult.Failed}: retried, honouring {@code Retry-After}); the result
 * types refuse a code of the other kind. Two permanent codes say the device's token is dead
 * ({@link #invalidatesToken()}): the recipient ends {@code invalid_token} and the device is
 * invalidated. One more, {@link #ENDPOINT_ADDRESS_REFUSED}, invalidates the device though no provider
 * answered ({@link #invalidatesDevice()}); its recipient ends {@code failed}. An invalidated device is
 * never sent to again.
 *
 * <p>What the engine decides without a provider (a cancelled notification, a TTL run out, a device
 * disabled or invalidated between the fan-out and its send, no credentials) uses the codes of
 * {@link DeliveryReasons} in the same {@code last_error} field.
 */
public enum ReasonCode {

    // ----------------------------------------------------------------- permanent (Rejected)

    /**
     * The token is malformed or belongs to another app, topic or environment (APNs
     * {@code BadDeviceToken}, {@code DeviceTokenNotForTopic}; FCM {@code INVALID_ARGUMENT} about the
     * token; a Web Push subscription that does not parse). Invalidates the device.
     */
    TOKEN_INVALID(true, true),
    /**
     * The provider says the token is no longer registered: the app was uninstalled or the browser
     * unsubscribed (APNs {@code Unregistered} / 410, FCM {@code UNREGISTERED}, Web Push 404 / 410).
     * Invalidates the device.
     */
    TOKEN_UNREGISTERED(true, true),
    /** The payload is over the provider's size limit (APNs 4,096 bytes, Web Push 3,993; or the provider's 413). */
    PAYLOAD_TOO_LARGE(true, false),
    /** The provider refuses the message as built (a bad platform override, collapse id, expiry or argument). */
    PAYLOAD_INVALID(true, false),
    /** The app has not set credentials for this provider. */
    CREDENTIALS_MISSING(true, false),
    /**
     * The app's credentials are refused or unusable (a key or certificate the provider does not accept,
     * a service account of another project, a VAPID key the push service does not match, an expired
     * certificate). Fixed by the app setting new credentials, not by retrying.
     */
    CREDENTIALS_INVALID(true, false),
    /**
     * The token was made for other credentials than the app's: an FCM token of another Firebase
     * project ({@code SENDER_ID_MISMATCH}), a Web Push subscription made with another VAPID key (401 or
     * 403). About this one token, not the app's credentials: the recipient fails, the device is kept (new
     * credentials may reach it again), and the app's other recipients go on. Never
     * {@link #CREDENTIALS_INVALID}, which stops the whole platform of the app: a token or a subscription
     * is chosen by whoever registers it with the public key, so one made for another project or key
     * must not be able to stop every send of the app.
     */
    SENDER_MISMATCH(true, false),
    /**
     * A Web Push endpoint this service refuses by its own settings ({@code http} without
     * {@code PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS}). The device is kept: the policy may change.
     */
    ENDPOINT_NOT_ALLOWED(true, false),
    /**
     * A Web Push endpoint whose host is, or resolves to, a loopback, private, link-local, metadata
     * or otherwise reserved address ({@link dev.pushservice.platform.net.TargetAddresses}), without
     * {@code PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS}: nothing was connected to. The recipient ends
     * {@code failed} (no provider said the token is dead, so not {@code invalid_token}), and the
     * device is invalidated ({@link #invalidatesDevice()}) so it is never sent to again: an endpoint
     * that points inside the network is an attack or a mistake, not a browser.
     */
    ENDPOINT_ADDRESS_REFUSED(true, false, true),
    /** Any other permanent refusal by the provider (an unexpected 4xx); the detail says what it answered. */
    PROVIDER_REJECTED(true, false),

    // ----------------------------------------------------------------- transient (Failed)

    /**
     * The provider asks us to slow down for the whole project or credential (FCM 429 and
     * {@code QUOTA_EXCEEDED}, Web Push 429, APNs {@code TooManyProviderTokenUpdates}): the provider
     * circuit pauses.
     */
    RATE_LIMITED(false, false),
    /**
     * APNs {@code TooManyRequests}: too many pushes to this one device token in a short time. Retried
     * with the recipient's own backoff, up to the maximum attempts; the credential's other devices go
     * on (pausing the app's whole circuit for one device's rate would stop every send of the app).
     */
    DEVICE_RATE_LIMITED(false, false),
    /** The provider is down, overloaded or shutting a connection down (5xx, APNs {@code Shutdown}, {@code IdleTimeout}). */
    PROVIDER_UNAVAILABLE(false, false),
    /** No answer within the provider's request timeout. */
    TIMEOUT(false, false),
    /** The connection could not be opened, failed its TLS handshake, or closed before the answer. */
    CONNECTION_FAILED(false, false),
    /**
     * No usable access token just now: the OAuth token endpoint was unreachable or failed (FCM), or
     * APNs found the provider token expired ({@code ExpiredProviderToken}); the next attempt gets a fresh one.
     */
    ACCESS_TOKEN_UNAVAILABLE(false, false),
    /** The sending thread was interrupted (the service is stopping) before the request went out. */
    INTERRUPTED(false, false);

    private final boolean permanent;
    private final boolean invalidatesToken;
    private final boolean invalidatesDevice;
    private final String code;

    ReasonCode(boolean permanent, boolean invalidatesToken) {
        this(permanent, invalidatesToken, invalidatesToken);
    }

    ReasonCode(boolean permanent, boolean invalidatesToken, boolean invalidatesDevice) {
        this.permanent = permanent;
        this.invalidatesToken = invalidatesToken;
        this.invalidatesDevice = invalidatesDevice;
        this.code = name().toLowerCase(Locale.ROOT);
    }

    /** The code as stored and shown: {@code token_invalid}, {@code rate_limited}, … */
    public String code() {
        return code;
    }

    /** True for codes of {@link DeliveryResult.Rejected}, false for those of {@link DeliveryResult.Failed}. */
    public boolean permanent() {
        return permanent;
    }

    /**
     * True when the provider says the device's token can never receive again: the recipient ends
     * {@code invalid_token} and the device is invalidated.
     */
    public boolean invalidatesToken() {
        return invalidatesToken;
    }

    /**
     * True when the device is invalidated (never sent to again): every code that
     * {@linkplain #invalidatesToken() invalidates the token}, and {@link #ENDPOINT_ADDRESS_REFUSED}.
     */
    public boolean invalidatesDevice() {
        return invalidatesDevice;
    }

    @Override
    public String toString() {
        return code;
    }
}
