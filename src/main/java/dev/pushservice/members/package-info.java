/**
 * Members of an organisation: the people who sign in to the dashboard, their roles, their one-time
 * links (a setup link made by the admin CLI, an invite link made by an owner) and the sign-in rules
 * (password check, delay and lock-out after repeated failures).
 *
 * <p>Invariants: an e-mail address belongs to at most one member, stored lower-case; passwords are
 * stored only as Spring Security encoded hashes, link tokens only as SHA-256 hashes, and neither is
 * ever logged or shown again; a link works once; failed sign-ins are counted in the database, per
 * address, so a lock-out holds on every instance. Knows nothing of HTTP: the dashboard maps these
 * rules to Spring Security.
 */
package dev.pushservice.members;
