package dev.pushservice.webhooks;

import io.netty.resolver.AddressResolver;
import io.netty.resolver.AddressResolverGroup;
import io.netty.resolver.InetNameResolver;
import io.netty.resolver.InetSocketAddressResolver;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Promise;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;

/**
 * Which addresses a webhook may reach: never loopback, unspecified, private (RFC 1918, IPv6 unique
 * local), carrier-grade NAT, link-local (which holds the cloud metadata address 169.254.169.254),
 * multicast, reserved or benchmarking ranges, nor an IPv4 address of those kinds embedded in an
 * IPv6 one (mapped, compatible, NAT64 {@code 64:ff9b::/96}, 6to4 {@code 2002::/16}). With
 * {@code PUSH_WEBHOOKS_ALLOW_INSECURE} every address is allowed.
 *
 * <p>The check runs where the connection is made: {@link #resolverGroup} is the only resolver of the
 * webhook HTTP client, so the address that was checked is the address connected to; a name that
 * resolves to a public address at creation and to a private one later (DNS rebinding) is refused at
 * send time. Reactor Netty connects to an address literal without asking a resolver, so the sender
 * checks literals itself ({@link #literal}) and refuses numeric hosts in any other form
 * ({@link #obscureNumeric}). Stateless and thread-safe.
 */
final class TargetAddresses {

    private TargetAddresses() {
    }

    /** True when a webhook must not connect to {@code address}. */
    static boolean forbidden(InetAddress address) {
        if (address.isAnyLocalAddress() || address.isLoopbackAddress() || address.isLinkLocalAddress()
                || address.isSiteLocalAddress() || address.isMulticastAddress()) {
            return true;
        }
        byte[] b = address.getAddress();
        if (address instanceof Inet4Address) return forbiddenV4(b);
        if (address instanceof Inet6Address) {
            int first = b[0] & 0xff;
            if ((first & 0xfe) == 0xfc) return true; // fc00::/7 unique local (fd00:ec2::254 metadata included)
            if (first == 0xff) return true;
            if (allZero(b, 0, 10) && ((b[10] == (byte) 0xff && b[11] == (byte) 0xff) || (b[10] == 0 && b[11] == 0))) {
                return forbiddenV4(Arrays.copyOfRange(b, 12, 16)); // ::ffff:a.b.c.d and ::a.b.c.d
            }
            if (first == 0x00 && b[1] == 0x64 && b[2] == (byte) 0xff && b[3] == (byte) 0x9b && allZero(b, 4, 12)) {
                return forbiddenV4(Arrays.copyOfRange(b, 12, 16)); // 64:ff9b::/96 NAT64
            }
            if (first == 0x20 && b[1] == 0x02) return forbiddenV4(Arrays.copyOfRange(b, 2, 6)); // 2002::/16 6to4
            if (first == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == (byte) 0xb8) return true; // documentation
            return false;
        }
        return true;
    }

    private static boolean forbiddenV4(byte[] b) {
        int a = b[0] & 0xff;
        int c = b[1] & 0xff;
        return a == 0 || a == 10 || a == 127 || a >= 224                 // this network, private, loopback, multicast, reserved, broadcast
                || (a == 100 && c >= 64 && c <= 127)                      // 100.64/10 carrier-grade NAT
                || (a == 169 && c == 254)                                 // link-local, cloud metadata
                || (a == 172 && c >= 16 && c <= 31)                       // private
                || (a == 192 && c == 168)                                 // private
                || (a == 192 && c == 0 && (b[2] & 0xff) == 0)             // 192.0.0/24 IETF protocol assignments
                || (a == 198 && (c == 18 || c == 19));                    // benchmarking
    }

    private static boolean allZero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) if (b[i] != 0) return false;
        return true;
    }

    /** The host of a URL as written is a name that stands for this machine ({@code localhost}, {@code *.localhost}). */
    static boolean localName(String host) {
        String h = host.toLowerCase(java.util.Locale.ROOT);
        if (h.endsWith(".")) h = h.substring(0, h.length() - 1);
        return h.equals("localhost") || h.endsWith(".localhost");
    }

    /**
     * The address a URL host stands for without any lookup: an IPv4 dotted quad or a bracketed IPv6
     * literal; empty for a DNS name. Reactor Netty connects to a literal without asking the resolver,
     * so the sender checks literals with this before connecting.
     */
    static java.util.Optional<InetAddress> literal(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (!h.contains(":") && !h.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}")) return java.util.Optional.empty();
        try {
            return java.util.Optional.of(InetAddress.getByName(h));
        } catch (UnknownHostException e) {
            return java.util.Optional.empty();
        }
    }

    /**
     * A host in a numeric form other than the dotted quad ({@code 0x7f000001}, {@code 2130706433},
     * {@code 127.1}): the system resolver would read it as an address. Such hosts are refused outright.
     */
    static boolean obscureNumeric(String host) {
        if (host.startsWith("[") || literal(host).isPresent()) return false;
        String h = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
        String last = h.substring(h.lastIndexOf('.') + 1).toLowerCase(java.util.Locale.ROOT);
        return last.matches("[0-9]+") || last.startsWith("0x");
    }

    /**
     * Where names are looked up: the system resolver blocks (up to its own timeouts for a dead DNS
     * server), so lookups run on virtual threads, never on the webhook event loop, which carries
     * every endpoint's connections.
     */
    private static final java.util.concurrent.Executor LOOKUPS =
            java.util.concurrent.Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("webhook-dns-", 0).factory());

    /**
     * A resolver for Reactor Netty that refuses forbidden addresses (unless {@code allowAll}). The
     * addresses it hands back are the only ones the client connects to.
     */
    static AddressResolverGroup<InetSocketAddress> resolverGroup(boolean allowAll) {
        return new AddressResolverGroup<>() {
            @Override
            protected AddressResolver<InetSocketAddress> newResolver(EventExecutor executor) {
                return new InetSocketAddressResolver(executor, new InetNameResolver(executor) {
                    @Override
                    protected void doResolve(String host, Promise<InetAddress> promise) {
                        LOOKUPS.execute(() -> {
                            try {
                                promise.trySuccess(checked(host, allowAll).getFirst());
                            } catch (UnknownHostException | RuntimeException e) {
                                promise.tryFailure(e);
                            }
                        });
                    }

                    @Override
                    protected void doResolveAll(String host, Promise<List<InetAddress>> promise) {
                        LOOKUPS.execute(() -> {
                            try {
                                promise.trySuccess(checked(host, allowAll));
                            } catch (UnknownHostException | RuntimeException e) {
                                promise.tryFailure(e);
                            }
                        });
                    }
                });
            }
        };
    }

    /** Resolves {@code host}; fails when any of its addresses is forbidden. */
    static List<InetAddress> checked(String host, boolean allowAll) throws UnknownHostException {
        List<InetAddress> all = List.of(InetAddress.getAllByName(host));
        if (!allowAll) {
            for (InetAddress a : all) {
                if (forbidden(a)) throw new ForbiddenAddress(host);
            }
        }
        return all;
    }

    /** A target resolved to a loopback, private, link-local or otherwise forbidden address. */
    static final class ForbiddenAddress extends UnknownHostException {
        ForbiddenAddress(String host) {
            super("refused: " + host + " resolves to a loopback, private, link-local or reserved address");
        }
    }
}
