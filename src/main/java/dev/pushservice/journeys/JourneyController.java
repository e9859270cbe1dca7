package dev.pushservice.journeys;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Limits;
import java.math.BigInteger;
import java.util.List;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/journeys}: create, list, read, PATCH (new version, states), DELETE (archive) and stats.
 * {@code name} is 1–{@value Limits#NAME} characters without control characters; {@code reentry_limit}
 * is an integer clamped to 1..{@value Limits#REENTRY_LIMIT_MAX} (default 1); {@code definition} is
 * read by {@link JourneyDefinitions}.
 */
@RestController
@RequestMapping("/v1/journeys")
class JourneyController {

    static final List<String> CREATE_STATUSES = List.of("draft", "active");
    static final List<String> STATUSES = List.of("draft", "active", "paused", "archived");
    static final int DEFAULT_REENTRY_LIMIT = 1;

    private final JourneyService journeys;

    JourneyController(JourneyService journeys) {
        this.journeys = journeys;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<JourneyView.Summary> list(ApiPrincipal caller, PageRequest page) {
        return journeys.list(caller.appId(), page);
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<JourneyView> create(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.requiredText("name", Limits.NAME);
        String status = status(in, CREATE_STATUSES);
        Integer reentry = reentryLimit(in);
        JourneyDefinition definition = JourneyDefinitions.read(in, true);
        in.check();
        JourneyService.Create create = new JourneyService.Create(name, status == null ? "draft" : status,
                reentry == null ? DEFAULT_REENTRY_LIMIT : reentry, definition);
        return ResponseEntity.status(HttpStatus.CREATED).body(journeys.create(caller.appId(), create));
    }

    @GetMapping("/{journey_id}")
    @Authorize(Scope.NOTIFICATIONS_READ)
    JourneyView get(ApiPrincipal caller, @PathVariable("journey_id") String journeyId) {
        return journeys.get(caller.appId(), Uuids.pathId(journeyId, "journey_id"));
    }

    @PatchMapping("/{journey_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    JourneyView update(ApiPrincipal caller, @PathVariable("journey_id") String journeyId, @RequestBody JsonNode body) {
        UUID id = Uuids.pathId(journeyId, "journey_id");
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
        return journeys.update(caller.appId(), id, new JourneyService.Patch(name, status, reentry, definition));
    }

    @DeleteMapping("/{journey_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    JourneyView archive(ApiPrincipal caller, @PathVariable("journey_id") String journeyId) {
        return journeys.archive(caller.appId(), Uuids.pathId(journeyId, "journey_id"));
    }

    @GetMapping("/{journey_id}/stats")
    @Authorize(Scope.NOTIFICATIONS_READ)
    JourneyView.Stats stats(ApiPrincipal caller, @PathVariable("journey_id") String journeyId) {
        return journeys.stats(caller.appId(), Uuids.pathId(journeyId, "journey_id"));
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
