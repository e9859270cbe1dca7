package dev.pushservice.platform.health;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.time.Instant;
import java.util.List;

/**
 * The providers' circuit breakers as {@code /health} and {@code /status} show them: implemented by the
 * delivery engine's breakers, read here without knowing delivery. Implementations are thread-safe and
 * never block (a copy of in-memory state).
 */
public interface ProviderCircuits {

    /** The circuits of this instance that are not closed, oldest first; empty when every provider answers. */
    List<Circuit> notClosed();

    /**
     * One provider circuit that is not closed.
     *
     * @param appId the app whose credential the circuit belongs to
     * @param platform {@code ios}, {@code android} or {@code web}
     * @param scope what else keys it beside app and platform: a Web Push service's origin; empty otherwise
     * @param state {@code open} (sends paused until {@code retryAt}) or {@code probing} (one probe in flight)
     * @param reason the reason code of the failure that opened it ({@code connection_failed}, {@code rate_limited}, …)
     * @param openedAt when it opened
     * @param retryAt when the next probe may go out
     */
    record Circuit(@JsonProperty("app_id") String appId, String platform, String scope, String state, String reason,
                   @JsonProperty("opened_at") Instant openedAt, @JsonProperty("retry_at") Instant retryAt) {
    }
}
