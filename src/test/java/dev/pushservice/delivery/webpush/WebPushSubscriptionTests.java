package dev.pushservice.delivery.webpush;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.delivery.webpush.WebPushSubscription.InvalidSubscriptionException;
import java.util.Base64;
import org.junit.jupiter.api.Test;

class WebPushSubscriptionTests {

    private static final String P256DH = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    private static final String AUTH = "BTBZMqHH6r4Tts7J_aSIgg";

    private static String sub(String endpoint, String p256dh, String auth) {
        return "{\"endpoint\":\"" + endpoint + "\",\"expirationTime\":null,\"keys\":{\"p256dh\":\"" + p256dh
                + "\",\"auth\":\"" + auth + "\"}}";
    }

    @Test
    void aBrowserSubscriptionParses() {
        WebPushSubscription s = WebPushSubscription.parse(
                sub("https://fcm.googleapis.com/fcm/send/abc:def", P256DH, AUTH), false);
        assertThat(s.origin()).isEqualTo("https://fcm.googleapis.com");
        assertThat(s.p256dh()).hasSize(65);
        assertThat(s.auth()).hasSize(16);
        assertThat(s.toString()).doesNotContain("abc:def");
    }

    @Test
    void paddedAndPlainBase64KeysAreAccepted() {
        byte[] auth = Base64.getUrlDecoder().decode(AUTH);
        String plain = Base64.getEncoder().encodeToString(auth);
        WebPushSubscription s = WebPushSubscription.parse(sub("https://push.example/x", P256DH + "=", plain), false);
        assertThat(s.auth()).isEqualTo(auth);
    }

    @Test
    void originKeepsANonDefaultPortOnly() {
        assertThat(WebPushSubscription.parse(sub("https://Push.Example:443/x", P256DH, AUTH), false).origin())
                .isEqualTo("https://push.example");
        assertThat(WebPushSubscription.parse(sub("https://push.example:8443/x", P256DH, AUTH), false).origin())
                .isEqualTo("https://push.example:8443");
    }

    @Test
    void brokenSubscriptionsAreRefusedWithAClearReason() {
        assertRefused("not json", "not valid JSON");
        assertRefused("[]", "must be a JSON object");
        assertRefused("{\"keys\":{}}", "no \"endpoint\"");
        assertRefused("{\"endpoint\":\"https://push.example/x\"}", "no \"keys\"");
        assertRefused(sub("ftp://push.example/x", P256DH, AUTH), "absolute https URL");
        assertRefused(sub("/relative", P256DH, AUTH), "absolute https URL");
        assertRefused(sub("https://push.example/x", "BAAA", AUTH), "p256dh");
        // 65 bytes starting 0x04 but not on the curve
        byte[] offCurve = Base64.getUrlDecoder().decode(P256DH);
        offCurve[64] ^= 1;
        assertRefused(sub("https://push.example/x", Base64.getUrlEncoder().withoutPadding().encodeToString(offCurve), AUTH),
                "not a point on the P-256 curve");
        assertRefused(sub("https://push.example/x", P256DH, "AAAA"), "keys.auth must be 16 bytes");
        assertRefused(sub("https://push.example/x", P256DH, "!!"), "keys.auth is not base64url");
    }

    @Test
    void insecureEndpointsAreRefusedUnlessAllowed() {
        for (String endpoint : new String[] {"http://push.example/x", "https://127.0.0.1/x", "https://localhost:8080/x",
                "https://169.254.169.254/x", "https://10.1.2.3/x", "https://[::1]/x", "https://[fd00::1]/x"}) {
            assertThatThrownBy(() -> WebPushSubscription.parse(sub(endpoint, P256DH, AUTH), false))
                    .as(endpoint)
                    .isInstanceOfSatisfying(InvalidSubscriptionException.class,
                            e -> assertThat(e.refusedByPolicy()).isTrue());
            assertThat(WebPushSubscription.parse(sub(endpoint, P256DH, AUTH), true).endpoint().toString()).isEqualTo(endpoint);
        }
    }

    @Test
    void hostsStandingForAForbiddenAddressAreRefusedAsAddressesInEveryForm() {
        for (String endpoint : new String[] {"https://127.0.0.1/x", "https://127.0.0.1:8443/x", "https://0.0.0.0/x",
                "https://10.1.2.3/x", "https://172.16.0.1/x", "https://192.168.1.1/x", "https://100.64.0.1/x",
                "https://169.254.169.254/latest/meta-data", "https://localhost/x", "https://LOCALHOST./x", "https://a.localhost/x",
                "https://[::1]/x", "https://[0:0:0:0:0:0:0:1]/x", "https://[::]/x", "https://[fe80::1]/x", "https://[fd00:ec2::254]/x",
                "https://[::ffff:127.0.0.1]/x", "https://[::ffff:7f00:1]/x", "https://[::ffff:a9fe:a9fe]/x",
                "https://[64:ff9b::a9fe:a9fe]/x", "https://[2002:7f00:1::]/x", "https://[fe80::1%25eth0]/x",
                "https://0x7f000001/x", "https://2130706433/x", "https://017700000001/x", "https://0177.0.0.1/x",
                "https://127.000.000.001/x", "https://0/x"}) {
            assertThatThrownBy(() -> WebPushSubscription.parse(sub(endpoint, P256DH, AUTH), false))
                    .as(endpoint)
                    .isInstanceOfSatisfying(InvalidSubscriptionException.class, e -> {
                        assertThat(e.refusedByPolicy()).isTrue();
                        assertThat(e.addressRefused()).isTrue();
                        assertThat(e.getMessage()).contains("loopback, private, link-local or reserved address");
                    });
        }
        assertThatThrownBy(() -> WebPushSubscription.parse(sub("http://push.example/x", P256DH, AUTH), false))
                .isInstanceOfSatisfying(InvalidSubscriptionException.class, e -> assertThat(e.addressRefused()).isFalse());
        // a name is not resolved here: what it stands for is checked where the connection is made
        assertThat(WebPushSubscription.parse(sub("https://push.example.test/x", P256DH, AUTH), false).origin())
                .isEqualTo("https://push.example.test");
    }

    private static void assertRefused(String token, String reason) {
        assertThatThrownBy(() -> WebPushSubscription.parse(token, false))
                .isInstanceOfSatisfying(InvalidSubscriptionException.class, e -> {
                    assertThat(e.getMessage()).contains(reason);
                    assertThat(e.refusedByPolicy()).isFalse();
                });
    }
}
