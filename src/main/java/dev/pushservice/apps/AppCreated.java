package dev.pushservice.apps;

import java.util.UUID;

/**
 * Published inside the transaction that creates an app (admin CLI, first-start bootstrap), so that
 * features which give every app something of its own (the Web Push key pair) can create it in the
 * same transaction, and no read has to create it later.
 */
public record AppCreated(UUID appId) {
}
