/**
 * Domain exceptions: how services and domain code say that a request cannot be honoured, without
 * knowing about HTTP. {@code platform.error.ApiExceptionHandler} is the one place that maps each
 * type to a status code and the spec's error shape. Controllers, services, parsers and repositories
 * throw these; {@code platform.error.ApiException} is left to the request-path filters and
 * interceptors of {@code platform.web} (size, media type, API key, scope, rate limit), which answer
 * before any controller runs.
 *
 * <ul>
 *   <li>{@link Malformed}: the input cannot be read as what it must be (400 {@code malformed_request}).</li>
 *   <li>{@link InvalidInput}: the input breaks a rule (422 {@code validation_failed}), with one
 *       {@link Violation} per offending field, named by its JSON path.</li>
 *   <li>{@link NotFound}: the resource does not exist for this app (404; also for another app's).</li>
 *   <li>{@link Conflict}: the request clashes with the current state (409).</li>
 *   <li>{@link Unavailable}: a dependency is saturated or down; retry after a hint (503).</li>
 * </ul>
 */
package dev.pushservice.platform.domain;
