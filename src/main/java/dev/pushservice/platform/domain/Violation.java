package dev.pushservice.platform.domain;

/**
 * One broken rule: which input ({@code field}, a JSON path such as {@code tags.plan} or
 * {@code filter.all[2].operator}, or a query/header name) and what is wrong with it, in words a
 * client developer can act on.
 */
public record Violation(String field, String message) {
}
