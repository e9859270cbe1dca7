package dev.pushservice.delivery.apns;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** What an app may set as APNs credentials, and what it is told when they are wrong (the 422 details). */
class ApnsCredentialsTests {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static String p256Pem;
    private static byte[] p12;

    @BeforeAll
    static void keys() throws Exception {
        p256Pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        p12 = TestCertificates.shared().clientPkcs12("CN=Apple Push Services: com.example.app", "pw",
                Instant.now().plus(Duration.ofDays(30)));
    }

    @Test
    void validTokenCredentialsAreAccepted() {
        ApnsCredentials credentials = ApnsCredentials.token(p256Pem, "ABC123DEFG", "TEAM123456", "com.example.app", "production");

        assertThat(credentials.environment()).isEqualTo(ApnsCredentials.Environment.PRODUCTION);
        assertThat(credentials.auth()).isInstanceOf(ApnsCredentials.Token.class);
        assertThat(credentials.bundleId()).isEqualTo("com.example.app");
    }

    @Test
    void rsaKeyIsNotAP256Key() throws Exception {
        String rsa = TestCertificates.pkcs8Pem(TestCertificates.rsa().getPrivate());

        assertThat(tokenErrors(rsa, "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox"))
                .containsExactly(tuple("token.signing_key", "is not a P-256 (ES256) private key"));
    }

    @Test
    void keyOnAnotherCurveIsNotAP256Key() throws Exception {
        String p384 = TestCertificates.pkcs8Pem(TestCertificates.ec("secp384r1").getPrivate());

        assertThat(tokenErrors(p384, "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox"))
                .containsExactly(tuple("token.signing_key", "is not a P-256 (ES256) private key"));
    }

    @Test
    void sec1PemAndGarbageAreExplained() {
        String sec1 = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----";

        assertThat(tokenErrors(sec1, "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox"))
                .containsExactly(tuple("token.signing_key",
                        "must be a PKCS#8 key (-----BEGIN PRIVATE KEY-----), as in the .p8 file from Apple"));
        assertThat(tokenErrors("not a key", "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox"))
                .extracting(e -> e.toList().get(0)).containsExactly("token.signing_key");
        assertThat(tokenErrors("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
                "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox"))
                .containsExactly(tuple("token.signing_key", "is not a P-256 (ES256) private key"));
    }

    @Test
    void everyBadFieldIsReportedAtOnce() {
        assertThat(tokenErrors(p256Pem, "ABC123DEF", "team123456", "com.example app", "dev"))
                .containsExactly(
                        tuple("token.key_id", "must be the 10-character key ID from the Apple developer account (A-Z, 0-9)"),
                        tuple("token.team_id", "must be the 10-character team ID from the Apple developer account (A-Z, 0-9)"),
                        tuple("bundle_id", "must be the app's bundle ID (letters, digits, '.' and '-', at most 155 characters)"),
                        tuple("environment", "must be sandbox or production"));
    }

    @Test
    void certificateCredentialsOpenWithTheirPassword() {
        ApnsCredentials credentials = ApnsCredentials.certificate(p12, "pw", "com.example.app", "sandbox", Instant.now());

        ApnsCredentials.Certificate certificate = (ApnsCredentials.Certificate) credentials.auth();
        assertThat(certificate.certificate().getSubjectX500Principal().getName()).contains("com.example.app");
        assertThat(certificate.privateKey()).isNotNull();
    }

    @Test
    void wrongPasswordNotPkcs12AndExpiredCertificateAreExplained() throws Exception {
        assertThat(certificateErrors(p12, "wrong"))
                .containsExactly(tuple("certificate.password", "does not open the PKCS#12 file"));
        assertThat(certificateErrors("hello".getBytes(), "pw"))
                .containsExactly(tuple("certificate.pkcs12", "is not a PKCS#12 (.p12) file"));

        Instant expiredAt = Instant.now().minus(Duration.ofDays(1));
        byte[] expired = TestCertificates.shared().clientPkcs12("CN=old", "pw", expiredAt);
        assertThat(certificateErrors(expired, "pw")).singleElement()
                .satisfies(t -> assertThat(t.toList().get(1).toString()).startsWith("certificate expired at "));
    }

    @Test
    void certificateThatExpiresAfterItWasSetIsRefusedWhenReadBackLater() {
        ApnsCredentials set = ApnsCredentials.certificate(p12, "pw", "com.example.app", "sandbox", Instant.now());
        ObjectNode stored = set.toJson();
        Instant afterExpiry = ((ApnsCredentials.Certificate) set.auth()).certificate().getNotAfter().toInstant()
                .plus(Duration.ofMinutes(1));

        JsonInput in = JsonInput.object(stored);
        assertThat(ApnsCredentials.read(in, afterExpiry)).isNull();
        assertThat(in.hasErrors()).isTrue();
    }

    @Test
    void jsonNeedsExactlyOneAuthAndNamesNestedFields() {
        assertThat(readErrors("{\"bundle_id\":\"com.example.app\",\"environment\":\"sandbox\"}"))
                .containsExactly(tuple("apns.token", "token or certificate is required"));
        assertThat(readErrors("{\"bundle_id\":\"com.example.app\",\"environment\":\"sandbox\",\"token\":{},\"certificate\":{}}"))
                .containsExactly(tuple("apns.certificate", "give either token or certificate, not both"));
        assertThat(readErrors("{\"bundle_id\":12,\"environment\":\"sandbox\",\"token\":{\"key_id\":\"ABC123DEFG\",\"team_id\":\"TEAM123456\"}}"))
                .containsExactly(tuple("apns.bundle_id", "must be a string"),
                        tuple("apns.token.signing_key", "is required"));
        assertThat(readErrors("{\"bundle_id\":\"com.example.app\",\"environment\":\"sandbox\",\"certificate\":{\"pkcs12\":\"***\"}}"))
                .containsExactly(tuple("apns.certificate.pkcs12", "must be base64"));
    }

    @Test
    void storedJsonReadsBackToTheSameCredentials() {
        ApnsCredentials token = ApnsCredentials.token(p256Pem, "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox");
        ApnsCredentials certificate = ApnsCredentials.certificate(p12, "pw", "com.example.app", "production", Instant.now());

        for (ApnsCredentials original : List.of(token, certificate)) {
            ApnsCredentials copy = read(JSON.writeValueAsString(original.toJson()));
            assertThat(copy.summary()).isEqualTo(original.summary());
        }
        assertThat(((ApnsCredentials.Token) read(JSON.writeValueAsString(token.toJson())).auth()).signingKey())
                .isEqualTo(((ApnsCredentials.Token) token.auth()).signingKey());
    }

    @Test
    void summaryAndToStringNeverShowTheSecret() throws Exception {
        ApnsCredentials token = ApnsCredentials.token(p256Pem, "ABC123DEFG", "TEAM123456", "com.example.app", "sandbox");
        byte[] p12 = TestCertificates.shared().clientPkcs12("CN=x", "pw-secret", Instant.now().plus(Duration.ofDays(1)));
        ApnsCredentials certificate = ApnsCredentials.certificate(p12, "pw-secret", "com.example.app", "sandbox", Instant.now());
        String pemBody = p256Pem.lines().skip(1).findFirst().orElseThrow();

        assertThat(token.summary()).isEqualTo(new dev.pushservice.apps.AppSettings.ApnsView(
                "com.example.app", "sandbox", "token", "ABC123DEFG", "TEAM123456", null, null));
        assertThat(token.summary().toString() + token).doesNotContain(pemBody).doesNotContain("PRIVATE KEY");
        assertThat(certificate.summary().auth()).isEqualTo("certificate");
        assertThat(certificate.summary().certificateExpiresAt()).isAfter(Instant.now());
        assertThat(certificate.summary().toString() + certificate).doesNotContain("pw-secret")
                .doesNotContain(Base64.getEncoder().encodeToString(p12).substring(0, 40));
    }

    private static List<org.assertj.core.groups.Tuple> tokenErrors(String pem, String keyId, String teamId,
                                                                   String bundleId, String environment) {
        return errors(() -> ApnsCredentials.token(pem, keyId, teamId, bundleId, environment));
    }

    private static List<org.assertj.core.groups.Tuple> certificateErrors(byte[] pkcs12, String password) {
        return errors(() -> ApnsCredentials.certificate(pkcs12, password, "com.example.app", "sandbox", Instant.now()));
    }

    private static List<org.assertj.core.groups.Tuple> errors(Runnable call) {
        InvalidInput e = org.assertj.core.api.Assertions.catchThrowableOfType(InvalidInput.class, call::run);
        assertThat(e).as("must be refused").isNotNull();
        return e.violations().stream().map(v -> tuple(v.field(), v.message())).toList();
    }

    private static ApnsCredentials read(String json) {
        JsonInput in = JsonInput.object(JSON.readTree(json));
        ApnsCredentials credentials = ApnsCredentials.read(in, Instant.now());
        in.check();
        return credentials;
    }

    /** Reads {@code json} as the {@code apns} member of a settings body, as the settings endpoint will. */
    private static List<org.assertj.core.groups.Tuple> readErrors(String json) {
        ObjectNode body = JSON.createObjectNode();
        body.set("apns", JSON.readTree(json));
        JsonInput in = JsonInput.object(body);
        ApnsCredentials credentials = in.nested("apns").map(a -> ApnsCredentials.read(a, Instant.now())).orElse(null);
        assertThat(credentials).isNull();
        assertThatThrownBy(in::check).isInstanceOf(InvalidInput.class);
        List<Violation> details = ((InvalidInput) org.assertj.core.api.Assertions.catchThrowable(in::check)).violations();
        return details.stream().map(d -> tuple(d.field(), d.message())).toList();
    }
}
