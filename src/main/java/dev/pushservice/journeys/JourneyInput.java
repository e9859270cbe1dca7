package dev.pushservice.journeys;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import java.math.BigInteger;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * The rules of a journey create or PATCH body, for every caller ({@code /v1/journeys} and the
 * dashboard). {@code name} is 1–{@value Limits#NAME} characters without control characters;
 * {@code reentry_limit} is an integer clamped to 1..{@value Limits#REENTRY_LIMIT_MAX} (default 1);
 * {@code definition} is read by {@link JourneyDefinitions}. Every problem in one {@link InvalidInput};
 * references to segments and webhooks are checked by {@link JourneyService}.
 */
public final class JourneyInput {

    static final List<String> CREATE_STATUSES = List.of("draft", "active");
    static final List<String> STATUSES = List.of("draft", "active", "paused", "archived");
    static final int DEFAULT_REENTRY_LIMIT = 1;

    private JourneyInput() {
    }

    public static JourneyService.Create create(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.requiredText("name", Limits.NAME);
        String status = status(in, CREATE_STATUSES);
        Integer reentry = reentryLimit(in);
        JourneyDefinition definition = JourneyDefinitions.read(in, true);
        in.check();
        return new JourneyService.Create(name, status == null ? "draft" : status,
                reentry == null ? DEFAULT_REENTRY_LIMIT : reentry, definition);
    }

    public static JourneyService.Patch update(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        for (String field : List.of("name", "status", "reentry_limit")) {
            if (in.has(field) && in.value(field) == null) {
                in.reject(field, "cannot be removed; give a value or leave the field out");
            }
        }
        String name = in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
        String status = status(in, STATUSES);
        Integer reentry = reentryLimit(in);
        JourneyDefinition definition = JourneyDefinitions.read(in, false);
        in.check();
        return new JourneyService.Patch(name, status, reentry, definition);
    }

    private static String status(JsonInput in, List<String> allowed) {
        String status = in.string("status", 40);
        if (status != null && !allowed.contains(status)) {
            in.reject("status", "must be one of " + String.join(", ", allowed));
            return null;
        }
        return status;
    }

    /** An integer of any size, clamped to 1..100 (the spec's rule); anything else is a violation. */
    private static Integer reentryLimit(JsonInput in) {
        JsonNode value = in.value("reentry_limit");
        if (value == null) return null;
        if (!value.isIntegralNumber()) {
            in.reject("reentry_limit", "must be an integer (it is clamped to 1.." + Limits.REENTRY_LIMIT_MAX + ")");
            return null;
        }
        BigInteger n = value.bigIntegerValue();
        if (n.compareTo(BigInteger.ONE) < 0) return 1;
        if (n.compareTo(BigInteger.valueOf(Limits.REENTRY_LIMIT_MAX)) > 0) return Limits.REENTRY_LIMIT_MAX;
        return n.intValueExact();
    }
}
