package dev.pushservice.delivery.webpush;

import java.math.BigInteger;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Provider;
import java.security.interfaces.ECPublicKey;
import java.security.spec.ECFieldFp;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.ECPoint;
import java.security.spec.ECPrivateKeySpec;
import java.security.spec.ECPublicKeySpec;
import java.security.interfaces.ECPrivateKey;

/** NIST P-256 keys in the encodings Web Push uses: the 65-byte uncompressed point and the 32-byte scalar. */
final class P256 {

    static final int POINT_LENGTH = 65;
    static final int SCALAR_LENGTH = 32;
    static final ECParameterSpec PARAMS;
    private static final BigInteger P;
    private static final BigInteger A;
    private static final BigInteger B;

    static {
        try {
            AlgorithmParameters parameters = AlgorithmParameters.getInstance("EC");
            parameters.init(new ECGenParameterSpec("secp256r1"));
            PARAMS = parameters.getParameterSpec(ECParameterSpec.class);
        } catch (GeneralSecurityException e) {
            throw new ExceptionInInitializerError(e);
        }
        P = ((ECFieldFp) PARAMS.getCurve().getField()).getP();
        A = PARAMS.getCurve().getA();
        B = PARAMS.getCurve().getB();
    }

    private P256() {
    }

    static KeyPair generate() {
        try {
            Provider provider = CryptoProviders.forAlgorithm("KeyPairGenerator", "EC");
            KeyPairGenerator generator = provider == null
                    ? KeyPairGenerator.getInstance("EC") : KeyPairGenerator.getInstance("EC", provider);
            generator.initialize(PARAMS);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("P-256 key generation is unavailable", e);
        }
    }

    /**
     * Decodes an uncompressed point ({@code 0x04 || x || y}), checking that it lies on the curve so
     * that a hostile or corrupted subscription key is refused here, not inside ECDH.
     */
    static ECPublicKey publicKey(byte[] point) {
        if (point.length != POINT_LENGTH || point[0] != 0x04) {
            throw new IllegalArgumentException("not an uncompressed P-256 point (65 bytes starting 0x04)");
        }
        BigInteger x = new BigInteger(1, point, 1, SCALAR_LENGTH);
        BigInteger y = new BigInteger(1, point, 1 + SCALAR_LENGTH, SCALAR_LENGTH);
        if (x.compareTo(P) >= 0 || y.compareTo(P) >= 0
                || !y.multiply(y).subtract(x.multiply(x).add(A).multiply(x).add(B)).mod(P).equals(BigInteger.ZERO)) {
            throw new IllegalArgumentException("not a point on the P-256 curve");
        }
        try {
            return (ECPublicKey) keyFactory().generatePublic(new ECPublicKeySpec(new ECPoint(x, y), PARAMS));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not a usable P-256 public key", e);
        }
    }

    static ECPrivateKey privateKey(byte[] scalar) {
        if (scalar.length != SCALAR_LENGTH) {
            throw new IllegalArgumentException("a P-256 private key is 32 bytes");
        }
        BigInteger s = new BigInteger(1, scalar);
        if (s.signum() == 0 || s.compareTo(PARAMS.getOrder()) >= 0) {
            throw new IllegalArgumentException("not a valid P-256 private key");
        }
        try {
            return (ECPrivateKey) keyFactory().generatePrivate(new ECPrivateKeySpec(s, PARAMS));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not a usable P-256 private key", e);
        }
    }

    static byte[] encode(ECPublicKey key) {
        byte[] out = new byte[POINT_LENGTH];
        out[0] = 0x04;
        writeFixed(key.getW().getAffineX(), out, 1);
        writeFixed(key.getW().getAffineY(), out, 1 + SCALAR_LENGTH);
        return out;
    }

    static byte[] encode(ECPrivateKey key) {
        byte[] out = new byte[SCALAR_LENGTH];
        writeFixed(key.getS(), out, 0);
        return out;
    }

    private static void writeFixed(BigInteger value, byte[] out, int offset) {
        byte[] raw = value.toByteArray();
        // toByteArray may carry a leading sign byte or be shorter than 32 bytes.
        int copy = Math.min(raw.length, SCALAR_LENGTH);
        System.arraycopy(raw, raw.length - copy, out, offset + SCALAR_LENGTH - copy, copy);
    }

    private static KeyFactory keyFactory() throws GeneralSecurityException {
        Provider provider = CryptoProviders.forAlgorithm("KeyFactory", "EC");
        return provider == null ? KeyFactory.getInstance("EC") : KeyFactory.getInstance("EC", provider);
    }
}
