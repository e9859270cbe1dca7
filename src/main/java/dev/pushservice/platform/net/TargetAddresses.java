package dev.pushservice.platform.net;

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
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

/**
 * Which addresses a URL that a client of this service gave (a webhook URL, a Web Push subscription
 * endpoint) may reach: never loopback, unspecified, private (RFC 1918, IPv6 unique local),
 * carrier-grade NAT, link-local (which holds the cloud metadata address 169.254.169.254), multicast,
 * reserved or benchmarking ranges, nor an IPv4 address of those kinds embedded in an IPv6 one (mapped,
 * compatible, NAT64 {@code 64:ff9b::/96}, 6to4 {@code 2002::/16}). The one rule for every such
 * client; each feature's insecure setting ({@code PUSH_WEBHOOKS_ALLOW_INSECURE},
 * {@code PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS}) lifts it for local testing.
 *
 * <p>Two checks, both needed. Where a URL is accepted (and again just before sending),
 * {@link #refusedHost} refuses, without any lookup, a host that stands for a forbidden address as
 * written: a local name, an address literal, a numeric host in any form other than the plain dotted
 * quad. Where the connection is made, {@link #resolverGroup} is the client's only resolver, so the
 * address that was checked is the address connected to: a name that resolves to a public address
 * when it is accepted and to a private one later (DNS rebinding) is refused at send time, failing the
 * connection with {@link ForbiddenAddress}. Reactor Netty connects to an address literal without
 * asking a resolver, which is why literals must pass {@link #refusedHost} before a request is made.
 *
 * <p>Names are looked up with {@link InetAddress#getAllByName}, so the JVM's resolver (and its
 * cache, and a test's {@link java.net.spi.InetAddressResolverProvider}) decides what a name means.
 * Stateless and thread-safe.
 */
public final class TargetAddresses {

    private static final Pattern DOTTED_QUAD = Pattern.compile("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
    /** A dotted quad whose parts have no leading zero: the only numeric form every parser reads alike. */
    private static final Pattern PLAIN_QUAD = Pattern.compile("(0|[1-9][0-9]{0,2})(\\.(0|[1-9][0-9]{0,2})){3}");
    private static final Pattern NUMERIC_LABEL = Pattern.compile("[0-9]+|0x.*");

    private TargetAddresses() {
    }

    /** True when a client-given URL must not connect to {@code address}. */
    public static boolean forbidden(InetAddress address) {
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

    /**
     * True when a URL's host, as written ({@link java.net.URI#getHost()}: IPv6 literals in brackets),
     * must be refused without any lookup: a name that stands for this machine ({@link #localName}), a
     * numeric host in any form but the plain dotted quad ({@link #obscureNumeric}), a bracketed literal
     * that does not parse (an unknown zone id, say), or an address literal that is {@link #forbidden}.
     * A DNS name is not refused here: only {@link #resolverGroup} can tell what it stands for.
     */
    public static boolean refusedHost(String host) {
        if (host == null || host.isEmpty()) return true;
        if (localName(host) || obscureNumeric(host)) return true;
        Optional<InetAddress> literal = literal(host);
        if (literal.isPresent()) return forbidden(literal.get());
        // a literal that does not parse (an IPv6 zone id of no interface here, a part over 255): fail closed
        return host.startsWith("[") || host.contains(":") || DOTTED_QUAD.matcher(host).matches();
    }

    /** The host of a URL as written is a name that stands for this machine ({@code localhost}, {@code *.localhost}). */
    public static boolean localName(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        if (h.endsWith(".")) h = h.substring(0, h.length() - 1);
        return h.equals("localhost") || h.endsWith(".localhost");
    }

    /**
     * The address a URL host stands for without any lookup: an IPv4 dotted quad or a bracketed IPv6
     * literal; empty for a DNS name. Reactor Netty connects to a literal without asking the resolver,
     * so senders check literals with this before connecting.
     */
    public static Optional<InetAddress> literal(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (!h.contains(":") && !(PLAIN_QUAD.matcher(h).matches() && partsInRange(h))) return Optional.empty();
        try {
            return Optional.of(InetAddress.getByName(h)); // a literal: parsed, never looked up
        } catch (UnknownHostException e) {
            return Optional.empty();
        }
    }

    private static boolean partsInRange(String quad) {
        for (String part : quad.split("\\.")) if (Integer.parseInt(part) > 255) return false;
        return true;
    }

    /**
     * A host in a numeric form other than the plain dotted quad ({@code 0x7f000001}, {@code 2130706433},
     * {@code 127.1}, {@code 0177.0.0.1}): resolvers disagree on what it means (the C library reads
     * {@code 0177} as octal 127, Java as decimal 177), so such hosts are refused outright. No real
     * top-level domain is numeric, so no DNS name is caught.
     */
    public static boolean obscureNumeric(String host) {
        if (host.startsWith("[")) return false;
        String h = host.toLowerCase(Locale.ROOT);
        if (h.endsWith(".")) h = h.substring(0, h.length() - 1);
        if (DOTTED_QUAD.matcher(h).matches()) return !PLAIN_QUAD.matcher(h).matches();
        return NUMERIC_LABEL.matcher(h.substring(h.lastIndexOf('.') + 1)).matches();
    }

    /**
     * Where names are looked up: the system resolver blocks (up to its own timeouts for a dead DNS
     * server), so lookups run on virtual threads, never on a client's event loop, which carries every
     * endpoint's connections.
     */
    private static final Executor LOOKUPS =
            Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("target-dns-", 0).factory());

    /**
     * A resolver for Reactor Netty that refuses forbidden addresses (unless {@code allowAll}) by
     * failing the lookup with {@link ForbiddenAddress}. The addresses it hands back are the only ones
     * the client connects to.
     */
    public static AddressResolverGroup<InetSocketAddress> resolverGroup(boolean allowAll) {
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

    /** Resolves {@code host}; fails when any of its addresses is forbidden (one bad answer taints the name). */
    public static List<InetAddress> checked(String host, boolean allowAll) throws UnknownHostException {
        List<InetAddress> all = List.of(InetAddress.getAllByName(host));
        if (!allowAll) {
            for (InetAddress a : all) {
                if (forbidden(a)) throw new ForbiddenAddress(host);
            }
        }
        return all;
    }

    /**
     * A target resolved to a loopback, private, link-local or otherwise forbidden address. An
     * {@link UnknownHostException}, so clients that do not look for it still fail the connection; its
     * message names the host, so callers show their own words instead.
     */
    public static final class ForbiddenAddress extends UnknownHostException {
        ForbiddenAddress(String host) {
            super("refused: " + host + " resolves to a loopback, private, link-local or reserved address");
        }
    }
}
