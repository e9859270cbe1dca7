package dev.pushservice.platform.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.UnknownHostException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The address rule alone: literals only, no DNS lookup and no connection. */
class TargetAddressesTests {

    private static InetAddress literal(String address) throws UnknownHostException {
        return InetAddress.getByName(address); // a literal: parsed, never looked up
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "127.0.0.1", "127.255.0.9", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1",
            "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.255", "192.0.0.170", "198.18.0.1",
            "224.0.0.1", "240.0.0.1", "255.255.255.255",
            "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "fec0::1",
            "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1",
            "2002:7f00:1::", "2002:a9fe:a9fe::", "2001:db8::1"})
    void privateLoopbackLinkLocalAndMetadataAddressesAreForbidden(String address) throws Exception {
        assertThat(TargetAddresses.forbidden(literal(address))).as(address).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"93.184.216.34", "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "192.169.0.1",
            "169.253.1.1", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "64:ff9b::808:808", "2002:808:808::"})
    void publicAddressesAreAllowed(String address) throws Exception {
        assertThat(TargetAddresses.forbidden(literal(address))).as(address).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "LOCALHOST.", "api.localhost"})
    void localNamesAreLocal(String host) {
        assertThat(TargetAddresses.localName(host)).isTrue();
    }

    @org.junit.jupiter.api.Test
    void resolvingALoopbackLiteralIsRefusedUnlessInsecureIsAllowed() throws Exception {
        assertThatThrownBy(() -> TargetAddresses.checked("127.0.0.1", false)).isInstanceOf(TargetAddresses.ForbiddenAddress.class);
        assertThatThrownBy(() -> TargetAddresses.checked("::1", false)).isInstanceOf(TargetAddresses.ForbiddenAddress.class);
        assertThat(TargetAddresses.checked("127.0.0.1", true)).containsExactly(literal("127.0.0.1"));
    }

    /** Hosts as {@link java.net.URI#getHost()} gives them, refused without any lookup. */
    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "10.0.0.8", "169.254.169.254", "100.64.0.1", "0.0.0.0", "localhost", "LocalHost.",
            "api.localhost", "[::1]", "[0:0:0:0:0:0:0:1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:a9fe:a9fe]",
            "[fe80::1]", "[fd00:ec2::254]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[fe80::1%25nosuchinterface0]",
            "0x7f000001", "0X7F000001", "2130706433", "017700000001", "0", "0177.0.0.1", "127.000.000.001", "0x7f.0.0.1",
            "192.168.0.010", "999.1.1.1", ""})
    void hostsStandingForAForbiddenAddressAreRefusedAsWritten(String host) {
        assertThat(TargetAddresses.refusedHost(host)).as(host).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"push.example.com", "fcm.googleapis.com", "updates.push.services.mozilla.com", "93.184.216.34",
            "[2606:4700:4700::1111]", "10.example.com", "localhost.example.com", "push.example.test"})
    void publicLiteralsAndNamesPassAsWritten(String host) {
        assertThat(TargetAddresses.refusedHost(host)).as(host).isFalse();
    }
}
