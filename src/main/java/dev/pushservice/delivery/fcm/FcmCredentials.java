package dev.pushservice.delivery.fcm;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import java.net.URI;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * An app's FCM credential: the parts of a Google service-account JSON that sending needs.
 * Build it only through {@link #parse} or {@link #read}, which also back the 422 when an app sets a
 * bad credential, so a credential that exists here has a usable RSA key and a project.
 *
 * <p>{@link #toString()} never shows the private key.
 *
 * @param projectId the Firebase project messages are sent under ({@code project_id})
 * @param clientEmail the service account ({@code client_email}); the JWT issuer
 * @param privateKeyId {@code private_key_id}, or null; sent as the JWT {@code kid}
 * @param privateKey the RSA key the token request is signed with ({@code private_key})
 * @param tokenUri where access tokens are fetched ({@code token_uri}; Google's when absent)
 */
public record FcmCredentials(
        String projectId, String clientEmail, String privateKeyId, PrivateKey privateKey, URI tokenUri) {

    /** Google's OAuth2 token endpoint, used when the JSON has no {@code token_uri}. */
    public static final URI GOOGLE_TOKEN_URI = URI.create("https://oauth2.googleapis.com/token");

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /**
     * Parses and validates a service-account JSON. Every problem is reported at once, each under
     * {@code field} or {@code field.<json key>}; no message ever repeats the key material.
     *
     * @param field the request field that carried the JSON (for error details), e.g. {@code fcm.service_account}
     * @throws InvalidInput naming every bad field
     */
    public static FcmCredentials parse(String field, String json) {
        List<Violation> errors = new ArrayList<>();
        FcmCredentials credentials = read(field, json, (f, message) -> errors.add(new Violation(f, message)));
        if (credentials == null) throw new InvalidInput("Invalid FCM service-account credentials", errors);
        return credentials;
    }

    /**
     * Parses and validates a service-account JSON, reporting every problem to {@code reject} (field,
     * message) as {@link #parse} names them; returns null when there was any.
     */
    public static FcmCredentials read(String field, String json, BiConsumer<String, String> reject) {
        JsonNode root;
        try {
            root = json == null || json.isBlank() ? null : JSON.readTree(json);
        } catch (JacksonException e) {
            root = null;
        }
        if (root == null || !root.isObject()) {
            reject.accept(field, "must be a Google service-account JSON object");
            return null;
        }
        boolean ok = true;
        String type = text(root, "type");
        if (!"service_account".equals(type)) {
            reject.accept(field + ".type", "must be \"service_account\" (a service-account key file)");
            ok = false;
        }
        String projectId = text(root, "project_id");
        if (projectId == null || projectId.isBlank()) {
            reject.accept(field + ".project_id", "is required");
            ok = false;
        } else if (!projectId.matches("[a-z0-9][a-z0-9:.-]{0,99}")) {
            reject.accept(field + ".project_id", "is not a valid project ID");
            ok = false;
        }
        String clientEmail = text(root, "client_email");
        if (clientEmail == null || clientEmail.isBlank()) {
            reject.accept(field + ".client_email", "is required");
            ok = false;
        } else if (!clientEmail.contains("@")) {
            reject.accept(field + ".client_email", "must be the service account's email address");
            ok = false;
        }
        PrivateKey privateKey = null;
        String pem = text(root, "private_key");
        if (pem == null || pem.isBlank()) {
            reject.accept(field + ".private_key", "is required");
            ok = false;
        } else {
            privateKey = rsaPrivateKey(pem);
            if (privateKey == null) {
                reject.accept(field + ".private_key", "must be a PEM-encoded PKCS#8 RSA private key");
                ok = false;
            }
        }
        URI tokenUri = GOOGLE_TOKEN_URI;
        String tokenUriText = text(root, "token_uri");
        if (tokenUriText != null) {
            tokenUri = httpUri(tokenUriText);
            if (tokenUri == null) {
                reject.accept(field + ".token_uri", "must be an absolute http(s) URL");
                ok = false;
            }
        }
        return ok ? new FcmCredentials(projectId, clientEmail, text(root, "private_key_id"), privateKey, tokenUri) : null;
    }

    @Override
    public String toString() {
        return "FcmCredentials[projectId=" + projectId + ", clientEmail=" + clientEmail + ", tokenUri=" + tokenUri + "]";
    }

    private static String text(JsonNode root, String name) {
        JsonNode value = root.get(name);
        return value != null && value.isString() ? value.stringValue() : null;
    }

    private static PrivateKey rsaPrivateKey(String pem) {
        String base64 = pem.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "");
        if (base64.contains("-----")) return null; // another PEM type, e.g. "RSA PRIVATE KEY" (PKCS#1)
        try {
            byte[] der = Base64.getMimeDecoder().decode(base64.strip());
            if (der.length == 0) return null;
            return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
        } catch (IllegalArgumentException | GeneralSecurityException e) {
            return null;
        }
    }

    private static URI httpUri(String text) {
        try {
            URI uri = new URI(text);
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            return (scheme.equals("https") || scheme.equals("http")) && uri.getHost() != null ? uri : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }
}
