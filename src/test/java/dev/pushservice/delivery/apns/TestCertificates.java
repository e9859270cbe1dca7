package dev.pushservice.delivery.apns;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Key material made at test time (nothing is committed): a CA, a {@code localhost} server
 * certificate signed by it, APNs-style client certificates in PKCS#12, and {@code .p8} signing keys.
 */
public final class TestCertificates {

    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

    public final KeyPair caKeys;
    public final X509Certificate ca;
    public final KeyPair serverKeys;
    public final X509Certificate server;

    private TestCertificates() throws Exception {
        caKeys = ec("secp256r1");
        ca = sign(new X500Name("CN=Push Service Test CA"), caKeys, new X500Name("CN=Push Service Test CA"),
                caKeys, Instant.now().plus(Duration.ofDays(2)), true, null);
        serverKeys = ec("secp256r1");
        server = sign(new X500Name("CN=localhost"), serverKeys, new X500Name("CN=Push Service Test CA"), caKeys,
                Instant.now().plus(Duration.ofDays(2)), false, KeyPurposeId.id_kp_serverAuth);
    }

    private static volatile TestCertificates shared;

    /** A set of its own (another CA): a peer whose certificate the shared CA's trust does not cover. */
    public static TestCertificates unrelated() {
        try {
            return new TestCertificates();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A server certificate for {@code serverKeys} naming only {@code dnsName}, signed by this CA. */
    public X509Certificate serverNamed(String dnsName) throws Exception {
        return sign(new X500Name("CN=" + dnsName), serverKeys, new X500Name("CN=Push Service Test CA"), caKeys,
                Instant.now().plus(Duration.ofDays(2)), false, KeyPurposeId.id_kp_serverAuth,
                new GeneralName[] {new GeneralName(GeneralName.dNSName, dnsName)});
    }

    /** One set per JVM: generating keys is the slow part of a TLS test. */
    public static TestCertificates shared() {
        if (shared == null) {
            synchronized (TestCertificates.class) {
                if (shared == null) {
                    try {
                        shared = new TestCertificates();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            }
        }
        return shared;
    }

    public static KeyPair ec(String curve) throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec(curve));
        return generator.generateKeyPair();
    }

    public static KeyPair rsa() throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
        generator.initialize(2048);
        return generator.generateKeyPair();
    }

    /** The {@code .p8} text Apple hands out: an unencrypted PKCS#8 PEM. */
    public static String pkcs8Pem(PrivateKey key) {
        return "-----BEGIN PRIVATE KEY-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded())
                + "\n-----END PRIVATE KEY-----\n";
    }

    public static String pem(X509Certificate certificate) throws Exception {
        return "-----BEGIN CERTIFICATE-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(certificate.getEncoded())
                + "\n-----END CERTIFICATE-----\n";
    }

    /** An APNs-style client certificate (RSA, like Apple's) signed by the test CA, as PKCS#12. */
    public byte[] clientPkcs12(String subject, String password, Instant notAfter) throws Exception {
        KeyPair keys = rsa();
        X509Certificate cert = sign(new X500Name(subject), keys, new X500Name("CN=Push Service Test CA"), caKeys,
                notAfter, false, KeyPurposeId.id_kp_clientAuth);
        return pkcs12(keys.getPrivate(), password, cert, ca);
    }

    public static byte[] pkcs12(PrivateKey key, String password, X509Certificate... chain) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("apns", key, password.toCharArray(), (Certificate[]) chain);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        store.store(out, password.toCharArray());
        return out.toByteArray();
    }

    private static X509Certificate sign(X500Name subject, KeyPair subjectKeys, X500Name issuer, KeyPair issuerKeys,
                                        Instant notAfter, boolean ca, KeyPurposeId purpose) throws Exception {
        return sign(subject, subjectKeys, issuer, issuerKeys, notAfter, ca, purpose, new GeneralName[] {
                new GeneralName(GeneralName.dNSName, "localhost"),
                new GeneralName(GeneralName.iPAddress, InetAddress.getLoopbackAddress().getHostAddress())});
    }

    private static X509Certificate sign(X500Name subject, KeyPair subjectKeys, X500Name issuer, KeyPair issuerKeys,
                                        Instant notAfter, boolean ca, KeyPurposeId purpose, GeneralName[] serverNames)
            throws Exception {
        Instant notBefore = notAfter.isBefore(Instant.now())
                ? notAfter.minus(Duration.ofDays(30)) : Instant.now().minus(Duration.ofHours(1));
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(issuer,
                BigInteger.valueOf(SERIAL.incrementAndGet()), Date.from(notBefore), Date.from(notAfter),
                subject, subjectKeys.getPublic());
        if (ca) {
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        } else {
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purpose));
            if (purpose == KeyPurposeId.id_kp_serverAuth) {
                builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(serverNames));
            }
        }
        String algorithm = issuerKeys.getPrivate().getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA";
        return new JcaX509CertificateConverter().getCertificate(
                builder.build(new JcaContentSignerBuilder(algorithm).build(issuerKeys.getPrivate())));
    }
}
