/**
 * {@code GET /health} (JSON for load balancers and monitoring) and {@code GET /status} (the same
 * facts as a page for people). Both are unversioned, unauthenticated and not rate limited.
 *
 * <p>Invariants: the database is checked through a pool of its own with short timeouts, so a dead
 * or saturated database yields a 503 within a few seconds instead of a hung probe; one snapshot is
 * computed at most once per second however many probes arrive; nothing secret (URLs, credentials,
 * error texts, ids) is ever shown.
 */
package dev.pushservice.platform.health;
