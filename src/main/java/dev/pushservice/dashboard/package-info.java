/**
 * The dashboard for organisation members, served at {@code /dashboard} from the jar: server-rendered
 * Thymeleaf pages, sign-in with Spring Security, sessions in PostgreSQL (Spring Session JDBC).
 *
 * <p>What must stay true: Spring Security and the session filter run for {@code /dashboard} and
 * {@code /dashboard/*} only ({@link DashboardSecurity}); the API ({@code /v1}, {@code /health},
 * {@code /status}, {@code /docs}, {@code /openapi.yaml}, metrics) never sees them, keeps its own
 * API-key check, CORS and error shape, and a dashboard session never authorizes it (its cookie's path
 * is {@code /dashboard}, and the API reads only {@code Authorization}). An API key never signs in
 * here. Pages read through the features' services (no second copy of a rule), and every page checks
 * on the server that what it shows belongs to the member's organisation: anything else is a 404.
 */
package dev.pushservice.dashboard;
