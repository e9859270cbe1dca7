/**
 * The published contract: {@code GET /openapi.yaml} serves {@code src/main/resources/openapi.yaml}
 * byte for byte, and {@code GET /docs} renders it with the Swagger UI shipped in the jar (no CDN,
 * so it works offline). Both are unauthenticated and outside {@code /v1}.
 */
package dev.pushservice.platform.docs;
