package dev.pushservice.support;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.net.spi.InetAddressResolver;
import java.net.spi.InetAddressResolverProvider;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * DNS for tests: names under {@code .test} (RFC 6761: never in the real DNS) resolve to the addresses
 * a test gives them ({@link #point}) and to nothing otherwise, without asking any DNS server; every
 * other name goes to the JVM's own resolver. Installed for the whole test JVM through
 * {@code META-INF/services/java.net.spi.InetAddressResolverProvider}, so code under test resolves
 * through its ordinary path ({@link InetAddress#getAllByName}) and a test can make a name that looks
 * public (a webhook's {@code rebound.webhook.test}, a push service's {@code push.example.test})
 * resolve to a loopback address (DNS rebinding) without a DNS server. Tests point names at loopback
 * addresses only, never at a real private range.
 */
public final class TestNames extends InetAddressResolverProvider {

    private static final String SUFFIX = ".test";
    private static final Map<String, List<InetAddress>> NAMES = new ConcurrentHashMap<>();

    /**
     * Makes {@code name} (ending in {@code .test}) resolve to {@code addresses} (literals).
     * The JVM caches a name's answer for 30 s: give each test names of its own.
     */
    public static void point(String name, String... addresses) {
        if (!name.endsWith(SUFFIX)) throw new IllegalArgumentException("test names end in " + SUFFIX);
        NAMES.put(name.toLowerCase(Locale.ROOT), Stream.of(addresses).map(TestNames::literal).toList());
    }

    private static InetAddress literal(String address) {
        if (!address.contains(":") && !address.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}")) {
            throw new IllegalArgumentException("not an address literal: " + address);
        }
        try {
            return InetAddress.getByName(address); // a literal: parsed, never looked up
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an address literal: " + address, e);
        }
    }

    @Override
    public InetAddressResolver get(Configuration configuration) {
        InetAddressResolver system = configuration.builtinResolver();
        return new InetAddressResolver() {
            @Override
            public Stream<InetAddress> lookupByName(String host, LookupPolicy policy) throws UnknownHostException {
                String name = host.toLowerCase(Locale.ROOT);
                if (!name.endsWith(SUFFIX)) return system.lookupByName(host, policy);
                List<InetAddress> addresses = NAMES.get(name);
                if (addresses == null) throw new UnknownHostException(host);
                return addresses.stream();
            }

            @Override
            public String lookupByAddress(byte[] address) throws UnknownHostException {
                return system.lookupByAddress(address);
            }
        };
    }

    @Override
    public String name() {
        return "push-service-test-names";
    }
}
