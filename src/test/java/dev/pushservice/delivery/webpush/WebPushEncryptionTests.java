package dev.pushservice.delivery.webpush;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.interfaces.ECPublicKey;
import java.util.Base64;
import org.junit.jupiter.api.Test;

class WebPushEncryptionTests {

    // RFC 8291 Appendix A (and §5): fixed sender key pair, salt and subscriber keys.
    private static final String PLAINTEXT = "When I grow up, I want to be a watermelon";
    private static final String AS_PRIVATE = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
    private static final String AS_PUBLIC = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
    private static final String UA_PUBLIC = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    private static final String SALT = "DGv6ra1nlYgDCS1FRnbzlw";
    private static final String AUTH = "BTBZMqHH6r4Tts7J_aSIgg";
    private static final String MESSAGE = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

    @Test
    void encryptionReproducesRfc8291AppendixAByteForByte() {
        KeyPair sender = new KeyPair(P256.publicKey(b64(AS_PUBLIC)), P256.privateKey(b64(AS_PRIVATE)));
        byte[] uaPublic = b64(UA_PUBLIC);

        byte[] body = WebPushEncryption.encrypt(PLAINTEXT.getBytes(StandardCharsets.UTF_8), P256.publicKey(uaPublic),
                uaPublic, b64(AUTH), sender, b64(SALT));

        assertThat(Base64.getUrlEncoder().withoutPadding().encodeToString(body)).isEqualTo(MESSAGE);
    }

    @Test
    void eachMessageGetsAFreshSenderKeyAndSalt() throws Exception {
        LocalWebPushReceiver.Subscriber subscriber = subscriberKeys();
        WebPushSubscription subscription = WebPushSubscription.parse(subscriber.json(), true);
        byte[] one = WebPushEncryption.encrypt(new byte[] {1}, subscription);
        byte[] two = WebPushEncryption.encrypt(new byte[] {1}, subscription);

        // header: salt(16) | rs = 4096 | idlen = 65 | sender key (65)
        assertThat(java.util.Arrays.copyOfRange(one, 16, 21)).containsExactly(0, 0, 0x10, 0, 65);
        assertThat(java.util.Arrays.copyOfRange(one, 0, 16)).isNotEqualTo(java.util.Arrays.copyOfRange(two, 0, 16));
        assertThat(java.util.Arrays.copyOfRange(one, 21, 86)).isNotEqualTo(java.util.Arrays.copyOfRange(two, 21, 86));
        assertThat(one).hasSize(86 + 1 + 1 + 16);
    }

    @Test
    void plaintextOverOneRecordIsRefused() throws Exception {
        WebPushSubscription subscription = WebPushSubscription.parse(subscriberKeys().json(), true);
        assertThat(WebPushEncryption.encrypt(new byte[3993], subscription)).hasSize(4096);
        assertThatThrownBy(() -> WebPushEncryption.encrypt(new byte[3994], subscription))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3993");
    }

    @Test
    void p256PointEncodingRoundTrips() {
        for (int i = 0; i < 50; i++) {
            ECPublicKey key = (ECPublicKey) P256.generate().getPublic();
            assertThat(P256.publicKey(P256.encode(key)).getW()).isEqualTo(key.getW());
        }
    }

    private static LocalWebPushReceiver.Subscriber subscriberKeys() throws Exception {
        try (LocalWebPushReceiver receiver = LocalWebPushReceiver.start()) {
            return receiver.subscribe();
        }
    }

    static byte[] b64(String s) {
        return Base64.getUrlDecoder().decode(s);
    }
}
