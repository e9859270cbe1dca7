package dev.pushservice.delivery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** A rejection is permanent and a failure transient: the reason code decides, and the types hold to it. */
class DeliveryResultTests {

    @Test
    void aTransientCodeIsNeverARejection() {
        assertThatThrownBy(() -> new DeliveryResult.Rejected(ReasonCode.RATE_LIMITED, "429"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new DeliveryResult.Failed(ReasonCode.TOKEN_INVALID, "BadDeviceToken"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void onlyDeadTokensInvalidateTheDeviceAndCarryAnInvalidationTime() {
        assertThat(new DeliveryResult.Rejected(ReasonCode.TOKEN_UNREGISTERED, "410", Instant.EPOCH).tokenInvalid()).isTrue();
        assertThat(new DeliveryResult.Rejected(ReasonCode.TOKEN_INVALID, "BadDeviceToken").tokenInvalid()).isTrue();
        assertThat(new DeliveryResult.Rejected(ReasonCode.CREDENTIALS_INVALID, "403").tokenInvalid()).isFalse();
        assertThatThrownBy(() -> new DeliveryResult.Rejected(ReasonCode.PAYLOAD_INVALID, "x", Instant.EPOCH))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void codesAreTheSnakeCaseNamesShownToUsers() {
        assertThat(ReasonCode.TOKEN_INVALID.code()).isEqualTo("token_invalid");
        assertThat(ReasonCode.ACCESS_TOKEN_UNAVAILABLE).hasToString("access_token_unavailable");
    }
}
