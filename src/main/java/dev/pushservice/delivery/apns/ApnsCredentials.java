package dev.pushservice.delivery.apns;

import dev.pushservice.apps.AppSettings;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.interfaces.ECPrivateKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's APNs credentials: either token auth (a {@code .p8} signing key with its key ID and
 * team ID) or certificate auth (a PKCS#12 bundle and its password), plus the app's bundle ID (sent
 * as {@code apns-topic}) and the APNs environment.
 *
 * <p>Instances only come out of the validating factories ({@link #token}, {@link #certificate},
 * {@link #read}), so a bad key is refused when it is set ({@link InvalidInput}, a 422), never a
 * failure at send time. A certificate is checked against the time the caller passes (the
 * service's {@code Clock}), so one that expires later is refused when it is read back. The JSON
 * shape read by {@link #read} and written by {@link #toJson()} is:
 *
 * <pre>{@code
 * {"bundle_id": "com.example.app", "environment": "production",
 *  "token": {"key_id": "ABC123DEFG", "team_id": "DEF123GHIJ", "signing_key": "-----BEGIN PRIVATE KEY-----…"}}
 * {"bundle_id": "com.example.app", "environment": "sandbox",
 *  "certificate": {"pkcs12": "<base64>", "password": "…"}}
 * }</pre>
 *
 * <p>{@link #toJson()} includes the secret and is only for encrypted storage; {@link #summary()}
 * is what a read may show. {@code toString()} never prints a secret.
 */
public record ApnsCredentials(Auth auth, String bundleId, Environment environment) {

    private static final Pattern APPLE_ID = Pattern.compile("[A-Z0-9]{10}");
    private static final Pattern BUNDLE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9.\\-]*");
    private static final int MAX_BUNDLE_ID = 155;
    private static final int MAX_PKCS12_BYTES = 64 * 1024;
    private static final int MAX_PEM_CHARS = 8 * 1024;
    private static final ECParameterSpec P256 = p256();
    private static final String REQUIRED = "is required";

    public ApnsCredentials {
        if (auth == null || bundleId == null || environment == null) {
            throw new IllegalArgumentException("auth, bundleId and environment are required");
        }
    }

    /** How the service authenticates to APNs. */
    public sealed interface Auth permits Token, Certificate {
    }

    /**
     * Token (JWT, ES256) auth. {@code signingKey} is the parsed P-256 key of {@code signingKeyPem}.
     */
    public record Token(String signingKeyPem, ECPrivateKey signingKey, String keyId, String teamId) implements Auth {
        @Override
        public String toString() {
            return "Token[keyId=" + keyId + ", teamId=" + teamId + "]";
        }
    }

    /** TLS client-certificate auth: the PKCS#12 bundle as uploaded, and the certificate and key found in it. */
    public record Certificate(byte[] pkcs12, String password, X509Certificate certificate, PrivateKey privateKey)
            implements Auth {
        @Override
        public String toString() {
            return "Certificate[subject=" + certificate.getSubjectX500Principal().getName()
                    + ", expires=" + certificate.getNotAfter().toInstant() + "]";
        }
    }

    /** The APNs environment a device token belongs to: a development build's tokens only work on sandbox. */
    public enum Environment {
        SANDBOX, PRODUCTION;

        public String value() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Validates token-auth credentials; throws {@link InvalidInput} naming each bad field. */
    public static ApnsCredentials token(String signingKeyPem, String keyId, String teamId,
                                        String bundleId, String environment) {
        List<Violation> errors = new ArrayList<>();
        BiConsumer<String, String> reject = (field, message) -> errors.add(new Violation(field, message));
        Token token = checkToken(signingKeyPem, keyId, teamId, (f, m) -> reject.accept("token." + f, m));
        String bundle = checkBundleId(bundleId, reject);
        Environment env = checkEnvironment(environment, reject);
        throwIfAny(errors);
        return new ApnsCredentials(token, bundle, env);
    }

    /**
     * Validates certificate-auth credentials, the certificate unexpired at {@code now}; throws
     * {@link InvalidInput} naming each bad field.
     */
    public static ApnsCredentials certificate(byte[] pkcs12, String password, String bundleId, String environment,
                                              Instant now) {
        List<Violation> errors = new ArrayList<>();
        BiConsumer<String, String> reject = (field, message) -> errors.add(new Violation(field, message));
        Certificate certificate = checkCertificate(pkcs12, password, now, (f, m) -> reject.accept("certificate." + f, m));
        String bundle = checkBundleId(bundleId, reject);
        Environment env = checkEnvironment(environment, reject);
        throwIfAny(errors);
        return new ApnsCredentials(certificate, bundle, env);
    }

    /**
     * Reads credentials in the JSON shape above, a certificate unexpired at {@code now}, recording
     * every problem in {@code in} (field names relative to it). Returns null when anything was wrong.
     */
    public static ApnsCredentials read(JsonInput in, Instant now) {
        BiConsumer<String, String> reject = unlessWrongType(in);
        String bundle = checkBundleId(in.string("bundle_id", Integer.MAX_VALUE), reject);
        Environment env = checkEnvironment(in.string("environment", Integer.MAX_VALUE), reject);
        boolean hasToken = in.value("token") != null;
        boolean hasCertificate = in.value("certificate") != null;
        Auth auth = null;
        if (hasToken && hasCertificate) {
            in.reject("certificate", "give either token or certificate, not both");
        } else if (!hasToken && !hasCertificate) {
            in.reject("token", "token or certificate is required");
        } else if (hasToken) {
            auth = in.nested("token").map(t -> checkToken(t.string("signing_key", Integer.MAX_VALUE),
                    t.string("key_id", Integer.MAX_VALUE), t.string("team_id", Integer.MAX_VALUE), unlessWrongType(t))).orElse(null);
        } else {
            auth = in.nested("certificate").map(c -> {
                byte[] bytes = null;
                String encoded = c.string("pkcs12", Integer.MAX_VALUE);
                if (encoded != null) {
                    try {
                        bytes = Base64.getDecoder().decode(encoded.replaceAll("\\s", ""));
                    } catch (IllegalArgumentException e) {
                        c.reject("pkcs12", "must be base64");
                        return null;
                    }
                }
                return checkCertificate(bytes, c.string("password", Integer.MAX_VALUE), now, unlessWrongType(c));
            }).orElse(null);
        }
        if (auth == null || bundle == null || env == null) return null;
        return new ApnsCredentials(auth, bundle, env);
    }

    /**
     * Records problems in {@code in}, except "is required" for a field that is present but not a
     * string: JsonInput has already said so, and one message per field is enough.
     */
    private static BiConsumer<String, String> unlessWrongType(JsonInput in) {
        return (field, message) -> {
            if (message.startsWith(REQUIRED) && in.value(field) != null && !in.value(field).isString()) return;
            in.reject(field, message);
        };
    }

    /** The full credentials, secret included, in the shape {@link #read} accepts: for encrypted storage only. */
    public ObjectNode toJson() {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("bundle_id", bundleId);
        root.put("environment", environment.value());
        switch (auth) {
            case Token t -> root.putObject("token")
                    .put("key_id", t.keyId())
                    .put("team_id", t.teamId())
                    .put("signing_key", t.signingKeyPem());
            case Certificate c -> root.putObject("certificate")
                    .put("pkcs12", Base64.getEncoder().encodeToString(c.pkcs12()))
                    .put("password", c.password());
        }
        return root;
    }

    /** What a read may show: the configured facts, never the key or password. */
    public AppSettings.ApnsView summary() {
        return switch (auth) {
            case Token t -> new AppSettings.ApnsView(bundleId, environment.value(), "token", t.keyId(), t.teamId(),
                    null, null);
            case Certificate c -> new AppSettings.ApnsView(bundleId, environment.value(), "certificate", null, null,
                    c.certificate().getSubjectX500Principal().getName(), c.certificate().getNotAfter().toInstant());
        };
    }

    private static Token checkToken(String pem, String keyId, String teamId, BiConsumer<String, String> reject) {
        ECPrivateKey key = null;
        if (pem == null || pem.isBlank()) {
            reject.accept("signing_key", REQUIRED);
        } else {
            key = parseP256Key(pem, message -> reject.accept("signing_key", message));
        }
        boolean idsOk = checkAppleId(keyId, "key_id", "key ID", reject);
        idsOk &= checkAppleId(teamId, "team_id", "team ID", reject);
        return key != null && idsOk ? new Token(pem.strip(), key, keyId, teamId) : null;
    }

    private static boolean checkAppleId(String value, String field, String what, BiConsumer<String, String> reject) {
        if (value == null || value.isBlank()) {
            reject.accept(field, REQUIRED);
            return false;
        }
        if (!APPLE_ID.matcher(value).matches()) {
            reject.accept(field, "must be the 10-character " + what + " from the Apple developer account (A-Z, 0-9)");
            return false;
        }
        return true;
    }

    private static ECPrivateKey parseP256Key(String pem, java.util.function.Consumer<String> reject) {
        String text = pem.strip();
        if (text.length() > MAX_PEM_CHARS) {
            reject.accept("must be at most " + MAX_PEM_CHARS + " characters (a .p8 key is about 250)");
            return null;
        }
        if (text.contains("BEGIN ENCRYPTED PRIVATE KEY")) {
            reject.accept("must be an unencrypted PKCS#8 key (the .p8 file as downloaded from Apple)");
            return null;
        }
        if (text.contains("BEGIN EC PRIVATE KEY") || text.contains("BEGIN RSA PRIVATE KEY")) {
            reject.accept("must be a PKCS#8 key (-----BEGIN PRIVATE KEY-----), as in the .p8 file from Apple");
            return null;
        }
        if (!text.startsWith("-----BEGIN PRIVATE KEY-----") || !text.endsWith("-----END PRIVATE KEY-----")) {
            reject.accept("must be the PEM text of the .p8 file (-----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)");
            return null;
        }
        String body = text.substring("-----BEGIN PRIVATE KEY-----".length(),
                text.length() - "-----END PRIVATE KEY-----".length());
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(body.replaceAll("\\s", ""));
        } catch (IllegalArgumentException e) {
            reject.accept("is not valid PEM (bad base64)");
            return null;
        }
        try {
            PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
            if (key instanceof ECPrivateKey ec && isP256(ec.getParams())) return ec;
        } catch (GeneralSecurityException | RuntimeException e) {
            // not an EC key at all (RSA, garbage): same answer as a key on another curve
        }
        reject.accept("is not a P-256 (ES256) private key");
        return null;
    }

    private static boolean isP256(ECParameterSpec params) {
        return params != null && params.getCurve().equals(P256.getCurve())
                && params.getOrder().equals(P256.getOrder())
                && params.getGenerator().equals(P256.getGenerator());
    }

    private static Certificate checkCertificate(byte[] pkcs12, String password, Instant now,
                                                BiConsumer<String, String> reject) {
        if (pkcs12 == null || pkcs12.length == 0) {
            reject.accept("pkcs12", REQUIRED);
            return null;
        }
        if (pkcs12.length > MAX_PKCS12_BYTES) {
            reject.accept("pkcs12", "must be at most " + MAX_PKCS12_BYTES + " bytes");
            return null;
        }
        char[] secret = password == null ? new char[0] : password.toCharArray();
        KeyStore store;
        try {
            store = KeyStore.getInstance("PKCS12");
            store.load(new ByteArrayInputStream(pkcs12), secret);
        } catch (IOException e) {
            if (e.getCause() instanceof java.security.UnrecoverableKeyException
                    || String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT).contains("password")) {
                reject.accept("password", "does not open the PKCS#12 file");
            } else {
                reject.accept("pkcs12", "is not a PKCS#12 (.p12) file");
            }
            return null;
        } catch (GeneralSecurityException e) {
            reject.accept("pkcs12", "is not a PKCS#12 (.p12) file");
            return null;
        }
        try {
            X509Certificate found = null;
            PrivateKey foundKey = null;
            int keys = 0;
            for (String alias : Collections.list(store.aliases())) {
                if (!store.isKeyEntry(alias)) continue;
                if (!(store.getKey(alias, secret) instanceof PrivateKey key)) continue;
                if (!(store.getCertificate(alias) instanceof X509Certificate cert)) continue;
                keys++;
                found = cert;
                foundKey = key;
            }
            if (keys != 1) {
                reject.accept("pkcs12", keys == 0
                        ? "must contain a private key with its certificate"
                        : "must contain exactly one private key with its certificate, found " + keys);
                return null;
            }
            if (found.getNotAfter().toInstant().isBefore(now)) {
                reject.accept("pkcs12", "certificate expired at " + found.getNotAfter().toInstant());
                return null;
            }
            return new Certificate(pkcs12.clone(), password == null ? "" : password, found, foundKey);
        } catch (GeneralSecurityException e) {
            reject.accept("password", "does not open the private key in the PKCS#12 file");
            return null;
        }
    }

    private static String checkBundleId(String bundleId, BiConsumer<String, String> reject) {
        if (bundleId == null || bundleId.isBlank()) {
            reject.accept("bundle_id", REQUIRED);
            return null;
        }
        if (bundleId.length() > MAX_BUNDLE_ID || !BUNDLE_ID.matcher(bundleId).matches()) {
            reject.accept("bundle_id", "must be the app's bundle ID (letters, digits, '.' and '-', at most "
                    + MAX_BUNDLE_ID + " characters)");
            return null;
        }
        return bundleId;
    }

    private static Environment checkEnvironment(String environment, BiConsumer<String, String> reject) {
        if (environment == null) {
            reject.accept("environment", REQUIRED + " (sandbox or production)");
            return null;
        }
        return switch (environment) {
            case "sandbox" -> Environment.SANDBOX;
            case "production" -> Environment.PRODUCTION;
            default -> {
                reject.accept("environment", "must be sandbox or production");
                yield null;
            }
        };
    }

    private static void throwIfAny(List<Violation> errors) {
        if (!errors.isEmpty()) throw new InvalidInput("Invalid APNs credentials", errors);
    }

    private static ECParameterSpec p256() {
        try {
            AlgorithmParameters parameters = AlgorithmParameters.getInstance("EC");
            parameters.init(new ECGenParameterSpec("secp256r1"));
            return parameters.getParameterSpec(ECParameterSpec.class);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("P-256 is not available in this JVM", e);
        }
    }

}
