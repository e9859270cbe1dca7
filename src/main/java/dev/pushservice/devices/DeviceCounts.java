package dev.pushservice.devices;

/**
 * An app's devices of one platform by state: {@code subscribed} (enabled and not invalidated: the
 * devices a notification reaches), {@code disabled} (unsubscribed, still valid) and {@code invalid}
 * (a provider rejected the token; never sent to again).
 */
public record DeviceCounts(String platform, long subscribed, long disabled, long invalid) {
}
