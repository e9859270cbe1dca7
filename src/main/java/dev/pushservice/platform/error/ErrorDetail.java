package dev.pushservice.platform.error;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * One entry of an error's {@code details}: which input ({@code field}, a JSON path such as
 * {@code tags.plan} or {@code filter.all[2].operator}, or a query/header name) and what is wrong with it.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ErrorDetail(String field, String message) {
}
