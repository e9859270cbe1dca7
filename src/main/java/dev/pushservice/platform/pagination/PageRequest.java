package dev.pushservice.platform.pagination;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code page} (1-based, default 1, at most {@value #MAX_PAGE}) and {@code limit} (default
 * {@value #DEFAULT_LIMIT}, 1 to {@value #MAX_LIMIT}) of a list request. Controllers take it as a
 * method argument; bad values are a 422 naming the parameter.
 */
public record PageRequest(int page, int limit) {

    public static final int DEFAULT_LIMIT = 50;
    public static final int MAX_LIMIT = 200;
    public static final int MAX_PAGE = 100_000;

    public long offset() {
        return (long) (page - 1) * limit;
    }

    /** Rows to fetch: one more than a page, to know whether another page follows. */
    public int fetchSize() {
        return limit + 1;
    }

    public static PageRequest parse(String page, String limit) {
        List<Violation> errors = new ArrayList<>();
        int p = parse("page", page, 1, 1, MAX_PAGE, errors);
        int l = parse("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT, errors);
        if (!errors.isEmpty()) {
            throw new InvalidInput("Invalid pagination parameters", errors);
        }
        return new PageRequest(p, l);
    }

    private static int parse(String name, String raw, int fallback, int min, int max, List<Violation> errors) {
        if (raw == null) return fallback;
        if (!raw.matches("-?[0-9]{1,10}")) {
            errors.add(new Violation(name, "must be an integer"));
            return fallback;
        }
        long value = Long.parseLong(raw);
        if (value < min || value > max) {
            errors.add(new Violation(name, "must be between " + min + " and " + max));
            return fallback;
        }
        return (int) value;
    }
}
