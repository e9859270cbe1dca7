package dev.pushservice.delivery.webpush;

import java.security.NoSuchAlgorithmException;
import java.security.Provider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JCA provider Web Push crypto runs on: Amazon Corretto Crypto Provider (native AWS-LC) where
 * its jar is on the class path and its native library loads (Linux x86_64 and aarch64), the JDK's
 * providers otherwise. The choice is made once per JVM and logged once.
 *
 * <p>ACCP is used explicitly (passed to each {@code getInstance}) rather than inserted at the top
 * of the global provider list, so this package gets ACCP's much faster EC key generation, ECDH,
 * HMAC-SHA256 and AES-GCM (bench/README.md, "Figures behind design comments") without silently changing the crypto of everything else in the process
 * (TLS, database drivers). Thread-safe.
 */
public final class CryptoProviders {

    private static final Logger log = LoggerFactory.getLogger(CryptoProviders.class);
    private static final String ACCP_CLASS = "com.amazon.corretto.crypto.provider.AmazonCorrettoCryptoProvider";

    private static final Provider PREFERRED = loadPreferred();

    private CryptoProviders() {
    }

    /** ACCP when it loaded, else null (meaning: the JDK's default provider order). */
    static Provider preferred() {
        return PREFERRED;
    }

    /** Human-readable name of the provider in use, e.g. for benchmarks and start-up logs. */
    public static String description() {
        return PREFERRED == null ? "JDK default providers" : PREFERRED.getName() + " " + PREFERRED.getVersionStr();
    }

    /**
     * The preferred provider if it implements {@code type}/{@code algorithm}, else null so the
     * caller falls back to the JDK's provider order.
     */
    static Provider forAlgorithm(String type, String algorithm) {
        return PREFERRED != null && PREFERRED.getService(type, algorithm) != null ? PREFERRED : null;
    }

    private static Provider loadPreferred() {
        try {
            Class<?> type = Class.forName(ACCP_CLASS);
            Provider accp = (Provider) type.getField("INSTANCE").get(null);
            Throwable error = (Throwable) type.getMethod("getLoadingError").invoke(accp);
            if (error != null) {
                log.info("Web Push crypto: Amazon Corretto Crypto Provider did not load ({}); using the JDK providers",
                        error.toString());
                return null;
            }
            // Fails fast here rather than on the first message if the native code is unusable.
            javax.crypto.KeyAgreement.getInstance("ECDH", accp);
            log.info("Web Push crypto: using {} {}", accp.getName(), accp.getVersionStr());
            return accp;
        } catch (ClassNotFoundException e) {
            log.info("Web Push crypto: Amazon Corretto Crypto Provider is not available on this platform; using the JDK providers");
        } catch (ReflectiveOperationException | LinkageError | NoSuchAlgorithmException | RuntimeException e) {
            log.info("Web Push crypto: Amazon Corretto Crypto Provider failed to load ({}); using the JDK providers",
                    e.toString());
        }
        return null;
    }
}
