package dev.pushservice.delivery.webpush;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Base64;
import org.junit.jupiter.api.Test;

class VapidKeysTests {

    @Test
    void generatedKeysRoundTripThroughTheirSerializedForm() {
        VapidKeys keys = VapidKeys.generate();
        String publicKey = keys.publicKeyBase64Url();
        String privateKey = keys.privateKeyBase64Url();

        assertThat(publicKey).hasSize(87).matches("[A-Za-z0-9_-]+");
        assertThat(Base64.getUrlDecoder().decode(publicKey)[0]).isEqualTo((byte) 4);
        assertThat(privateKey).hasSize(43);

        VapidKeys restored = VapidKeys.of(publicKey, privateKey, "mailto:ops@example.com");
        assertThat(restored.publicKeyBase64Url()).isEqualTo(publicKey);
        assertThat(restored.privateKeyBase64Url()).isEqualTo(privateKey);
        assertThat(restored.subject()).isEqualTo("mailto:ops@example.com");
    }

    @Test
    void keysThatDoNotBelongTogetherAreRefused() {
        VapidKeys a = VapidKeys.generate();
        VapidKeys b = VapidKeys.generate();
        assertThatThrownBy(() -> VapidKeys.of(a.publicKeyBase64Url(), b.privateKeyBase64Url(), null))
                .hasMessageContaining("does not belong");
    }

    @Test
    void malformedKeysAndSubjectsAreRefused() {
        VapidKeys a = VapidKeys.generate();
        assertThatThrownBy(() -> VapidKeys.of("BAAA", a.privateKeyBase64Url(), null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> VapidKeys.of(a.publicKeyBase64Url(), "not base64 !", null)).hasMessageContaining("base64url");
        assertThatThrownBy(() -> VapidKeys.of(a.publicKeyBase64Url(), a.privateKeyBase64Url(), "ops@example.com"))
                .hasMessageContaining("mailto:");
    }

    @Test
    void toStringNeverShowsThePrivateKey() {
        VapidKeys keys = VapidKeys.generate();
        assertThat(keys.toString()).contains(keys.publicKeyBase64Url()).doesNotContain(keys.privateKeyBase64Url());
    }
}
