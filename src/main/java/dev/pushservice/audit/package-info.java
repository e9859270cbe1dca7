/**
 * The audit log: an append-only record of every change made through an API key, the dashboard or
 * the admin CLI.
 *
 * <p>A feature that changes something calls {@link dev.pushservice.audit.AuditLog#record} inside
 * the transaction that makes the change, so the entry commits or rolls back with it. The caller
 * names the action ({@code template.update}), the target (type and id) and the names of the fields
 * that changed; never their values, so no secret can reach the log. Who acted is found here: the
 * API key of the current request (id and kind) and its request id; the dashboard member the
 * request names ({@link dev.pushservice.audit.AuditLog#MEMBER_ATTRIBUTE}, set once their role was
 * checked); in the admin CLI (a non-web
 * application context), {@code cli}; anything else (in-process calls outside a request, such as
 * start-up bootstrap) is {@code system}.
 *
 * <h2>What must stay true</h2>
 * <ul>
 *   <li>Rows are only ever inserted: there is no UPDATE or DELETE path in the code, and database
 *       triggers refuse UPDATE, DELETE and TRUNCATE on {@code audit_log}.</li>
 *   <li>Entries are read only through the {@code audit} export ({@code exports}) and
 *       {@link dev.pushservice.audit.AuditLog#newest} (the dashboard's audit page).</li>
 *   <li>Membership changes are the organisation's, not an app's: they go to {@code org_audit_log}
 *       ({@link dev.pushservice.audit.AuditLog#recordForOrganisation}, append-only the same way),
 *       read only by {@link dev.pushservice.audit.AuditLog#newestOfOrganisation} (the dashboard's
 *       organisation audit page), never by an app's export or a {@code /v1} route. An organisation
 *       entry may carry non-secret values ({@code details}: a role, an address), never a secret.</li>
 * </ul>
 */
package dev.pushservice.audit;
