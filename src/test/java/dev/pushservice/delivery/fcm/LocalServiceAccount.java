package dev.pushservice.delivery.fcm;

import java.net.URI;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.security.interfaces.RSAPublicKey;
import java.util.Base64;
import java.util.UUID;

/**
 * A Google-style service account made at run time: an RSA key pair and the service-account JSON
 * that points its {@code token_uri} at a local token endpoint. Register its public key with
 * {@link LocalFcmServer#registerServiceAccount} so the endpoint accepts its token requests.
 */
public record LocalServiceAccount(String projectId, String clientEmail, String privateKeyId, KeyPair keys) {

    public static LocalServiceAccount generate(String projectId) {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(2048);
            String id = UUID.randomUUID().toString().substring(0, 8);
            return new LocalServiceAccount(projectId, "push-" + id + "@" + projectId + ".iam.gserviceaccount.com",
                    id, generator.generateKeyPair());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Generates an account and registers it with {@code server}. */
    public static LocalServiceAccount registeredWith(LocalFcmServer server, String projectId) {
        LocalServiceAccount account = generate(projectId);
        server.registerServiceAccount(account.clientEmail(), (RSAPublicKey) account.keys().getPublic());
        return account;
    }

    /** The private key as PEM PKCS#8, as in a downloaded key file. */
    public String privateKeyPem() {
        String base64 = Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(keys.getPrivate().getEncoded());
        return "-----BEGIN PRIVATE KEY-----\n" + base64 + "\n-----END PRIVATE KEY-----\n";
    }

    /** The service-account JSON, shaped like the file the Firebase console downloads. */
    public String json(URI tokenUri) {
        return """
                {"type":"service_account","project_id":"%s","private_key_id":"%s","private_key":"%s",
                 "client_email":"%s","client_id":"1234567890","auth_uri":"https://accounts.google.com/o/oauth2/auth",
                 "token_uri":"%s"}""".formatted(projectId, privateKeyId, privateKeyPem().replace("\n", "\\n"),
                clientEmail, tokenUri);
    }

    public FcmCredentials credentials(URI tokenUri) {
        return FcmCredentials.parse("fcm", json(tokenUri));
    }
}
