package dev.pushservice.platform.crypto;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The certificates a TLS client trusts when a setting names an extra CA file
 * ({@code PUSH_APNS_TRUSTED_CA_FILE}, {@code PUSH_WEBHOOKS_TRUSTED_CA_FILE}): the PEM file's
 * certificates plus the JVM's default ones, so adding a local peer's CA never drops the public CAs.
 * Read once at start; a file that cannot be read stops the start with the setting's name. Stateless.
 */
public final class TrustedCertificates {

    private TrustedCertificates() {
    }

    /**
     * The certificates of the PEM {@code file} followed by the JVM's default trusted CAs.
     *
     * @param setting the setting's name, for the error message
     * @throws IllegalArgumentException when the file is unreadable or holds no certificate
     */
    public static List<X509Certificate> withDefaults(Path file, String setting) {
        List<X509Certificate> all = new ArrayList<>(read(file, setting));
        try {
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init((KeyStore) null);
            for (var manager : factory.getTrustManagers()) {
                if (manager instanceof X509TrustManager x509) all.addAll(Arrays.asList(x509.getAcceptedIssuers()));
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot read the JVM's default trust store", e);
        }
        return List.copyOf(all);
    }

    private static List<X509Certificate> read(Path file, String setting) {
        try (InputStream in = Files.newInputStream(file)) {
            List<X509Certificate> certificates = CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(X509Certificate.class::cast).toList();
            if (certificates.isEmpty()) throw new IllegalArgumentException(setting + ": no certificate in " + file);
            return certificates;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException(setting + " " + file + " is not a readable PEM certificate file", e);
        }
    }
}
