package dev.pushservice.delivery;

import java.time.Duration;
import java.time.Instant;

/**
 * What a provider answered for one message. A rejection is permanent and never retried; a
 * failure is transient and retried (honouring {@code retryAfter}) until TTL or max attempts.
 * Treating one as the other is a bug: retrying a rejection hammers the provider, dropping a
 * failure loses a push. The {@link ReasonCode} says which, and the types refuse a code of the
 * other kind.
 */
public sealed interface DeliveryResult {

    /** The provider acknowledged the push. {@code providerId}: its message id, if it gives one. */
    record Accepted(String providerId) implements DeliveryResult {
    }

    /**
     * Permanently refused.
     *
     * @param reason        a permanent code
     * @param detail        the provider's own reason or our explanation, short, never a token; may be null
     * @param invalidatedAt when the provider says the token became invalid, if it does (only with a
     *                      code that {@linkplain ReasonCode#invalidatesToken() invalidates the token})
     */
    record Rejected(ReasonCode reason, String detail, Instant invalidatedAt) implements DeliveryResult {

        public Rejected {
            if (!reason.permanent()) throw new IllegalArgumentException(reason + " is transient: a Failed, not a Rejected");
            if (invalidatedAt != null && !reason.invalidatesToken()) {
                throw new IllegalArgumentException("an invalidation time belongs to a dead token, not to " + reason);
            }
        }

        public Rejected(ReasonCode reason, String detail) {
            this(reason, detail, null);
        }

        /** The device can never receive again with this token: mark it invalidated. */
        public boolean tokenInvalid() {
            return reason.invalidatesToken();
        }

        /** The device must never be sent to again (a dead token, or an endpoint refused by address). */
        public boolean invalidatesDevice() {
            return reason.invalidatesDevice();
        }
    }

    /**
     * Not delivered this time.
     *
     * @param reason     a transient code
     * @param detail     what happened, short, never a token or a Web Push endpoint; may be null
     * @param retryAfter the provider's hint ({@code Retry-After}), or null
     * @param httpStatus the provider's HTTP status when it answered one, or null (shown in the recipient's attempt history)
     */
    record Failed(ReasonCode reason, String detail, Duration retryAfter, Integer httpStatus) implements DeliveryResult {

        public Failed {
            if (reason.permanent()) throw new IllegalArgumentException(reason + " is permanent: a Rejected, not a Failed");
        }

        /** Without an HTTP status (no answer, or a protocol without one). */
        public Failed(ReasonCode reason, String detail, Duration retryAfter) {
            this(reason, detail, retryAfter, null);
        }

        public Failed(ReasonCode reason, String detail) {
            this(reason, detail, null);
        }
    }
}
