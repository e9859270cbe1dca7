/**
 * The request id: what {@code X-Request-ID} carries on every response and {@code request_id} in
 * every error body and log line. Depends on nothing else in the project, so both the request path
 * ({@code platform.web}) and the error writers ({@code platform.error}) can read it without
 * depending on each other.
 */
package dev.pushservice.platform.requestid;
