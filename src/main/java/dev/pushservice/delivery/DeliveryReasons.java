package dev.pushservice.delivery;

/**
 * Reason codes the delivery engine writes into a recipient's last error beside the providers'
 * {@link ReasonCode}s: what happened to a recipient that no provider answered for. Each is permanent
 * (the recipient ends terminal, never retried) except {@link #PROVIDER_ERROR}. Listed with the
 * providers' codes in docs/api-decisions.md ("Reason codes").
 */
public final class DeliveryReasons {

    /** The app has no credentials for the recipient's platform: failed at once, never retried. */
    public static final String CREDENTIALS_MISSING = ReasonCode.CREDENTIALS_MISSING.code();
    /**
     * The provider refused the app's credentials: the first such rejection fails the platform's other
     * pending recipients of the app at once (and the provider answers later ones without a request).
     */
    public static final String CREDENTIALS_INVALID = ReasonCode.CREDENTIALS_INVALID.code();
    /** Never handed to a provider: the notification was cancelled first. */
    public static final String CANCELLED = "cancelled";
    /** The message could not be built for this recipient (a bug: stored content is validated at creation). */
    public static final String RENDER_FAILED = "render_failed";
    /** The provider broke its contract (its future failed instead of answering): retried like a transient failure. */
    public static final String PROVIDER_ERROR = "provider_error";
    /** The notification's TTL ran out before the recipient could be sent (or sent again): ends {@code expired}. */
    public static final String TTL_EXPIRED = RetryBackoff.EXPIRED;
    /** This instance has no provider for the platform. */
    public static final String NO_PROVIDER = "no_provider";
    /**
     * The device was disabled (deleted through the API, its user deleted) after the fan-out made it a
     * recipient and before its send: ends {@code failed}, never handed to a provider.
     */
    public static final String DEVICE_DISABLED = "device_disabled";
    /**
     * The device's token was invalidated (a provider said it is dead, for this or another
     * notification) after the fan-out made it a recipient and before its send: ends {@code failed},
     * never handed to a provider.
     */
    public static final String DEVICE_INVALIDATED = "device_invalidated";

    /**
     * Not sent yet, not a failure: its push service (a Web Push origin) already had as many of the
     * lane's requests open and waiting as one origin may ({@link OriginGates}); the recipient was given
     * back {@code pending}, to be claimed again a poll interval later, its attempt given back
     * ({@link DeliveryStore.Deferred}).
     */
    public static final String ORIGIN_BUSY = "origin_busy";

    private DeliveryReasons() {
    }
}
