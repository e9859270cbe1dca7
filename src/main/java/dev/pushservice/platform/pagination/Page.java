package dev.pushservice.platform.pagination;

import java.util.List;

/**
 * The one list shape: {@code {"data":[…],"pagination":{"page","limit","has_more"}}}. No total
 * count: counting millions of devices on every page costs more than it tells.
 */
public record Page<T>(List<T> data, Pagination pagination) {

    public record Pagination(int page, int limit, boolean has_more) {
    }

    /** Builds a page from up to {@link PageRequest#fetchSize()} rows. */
    public static <T> Page<T> of(List<T> rows, PageRequest request) {
        boolean more = rows.size() > request.limit();
        List<T> data = more ? rows.subList(0, request.limit()) : rows;
        return new Page<>(List.copyOf(data), new Pagination(request.page(), request.limit(), more));
    }
}
