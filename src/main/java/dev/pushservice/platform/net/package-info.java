/**
 * Outbound connections to addresses that clients of this service chose (webhook URLs, Web Push
 * subscription endpoints): {@link dev.pushservice.platform.net.TargetAddresses}, the one rule of which
 * addresses such a connection may reach, checked on the URL as written when it is accepted and on
 * every resolved address when a connection is made.
 *
 * <p>Invariant: a client that connects to a client-chosen URL uses
 * {@link dev.pushservice.platform.net.TargetAddresses#resolverGroup} as its only resolver and refuses
 * {@link dev.pushservice.platform.net.TargetAddresses#refusedHost} hosts before connecting, unless
 * its feature's insecure setting is on. Operator-configured endpoints (FCM, APNs) are not subject to it.
 */
package dev.pushservice.platform.net;
