package dev.pushservice.segments;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * {@code /v1/segments}: create, list, read, PATCH (new version), DELETE (archive) and estimate.
 * Names are 1–{@value Limits#NAME} characters, descriptions up to {@value Limits#DESCRIPTION}; neither
 * may contain control characters (a description may contain line breaks and tabs).
 */
@RestController
@RequestMapping("/v1/segments")
class SegmentController {

    private final SegmentService segments;

    SegmentController(SegmentService segments) {
        this.segments = segments;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<SegmentView> list(ApiPrincipal caller, PageRequest page) {
        return segments.list(caller.appId(), page);
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<SegmentView> create(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = name(in, true);
        String description = description(in);
        Filter filter = filter(in, true);
        in.check();
        return ResponseEntity.status(HttpStatus.CREATED).body(segments.create(caller.appId(), name, description, filter));
    }

    @GetMapping("/{segment_id}")
    @Authorize(Scope.NOTIFICATIONS_READ)
    SegmentView get(ApiPrincipal caller, @PathVariable("segment_id") String segmentId) {
        return segments.get(caller.appId(), Uuids.pathId(segmentId, "segment_id"));
    }

    @PatchMapping("/{segment_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    SegmentView update(ApiPrincipal caller, @PathVariable("segment_id") String segmentId, @RequestBody JsonNode body) {
        UUID id = Uuids.pathId(segmentId, "segment_id");
        JsonInput in = JsonInput.object(body);
        String name = name(in, false);
        String description = description(in);
        Filter filter = filter(in, false);
        in.check();
        boolean clearDescription = in.has("description") && in.value("description") == null;
        return segments.update(caller.appId(), id, new SegmentService.Patch(name, description, clearDescription, filter));
    }

    @DeleteMapping("/{segment_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    SegmentView archive(ApiPrincipal caller, @PathVariable("segment_id") String segmentId) {
        return segments.archive(caller.appId(), Uuids.pathId(segmentId, "segment_id"));
    }

    @PostMapping("/estimate")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    Map<String, Long> estimate(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        boolean bySegment = in.value("segment_id") != null;
        boolean byFilter = in.value("filter") != null;
        if (bySegment == byFilter) {
            throw InvalidInput.of(bySegment ? "filter" : "segment_id",
                    "give exactly one of segment_id (a saved segment) and filter (an unsaved filter)");
        }
        long count;
        if (bySegment) {
            JsonNode raw = in.value("segment_id");
            UUID id = raw.isString() ? Uuids.parse(raw.stringValue()) : null;
            if (id == null) in.reject("segment_id", "must be a UUID");
            in.check();
            count = segments.count(caller.appId(), id, "segment_id");
        } else {
            Filter filter = filter(in, true);
            in.check();
            count = segments.count(caller.appId(), filter);
        }
        return Map.of("estimated_recipients", count);
    }

    private static String name(JsonInput in, boolean required) {
        if (!required && in.has("name") && in.value("name") == null) {
            in.reject("name", "cannot be removed; give a new name or leave the field out");
            return null;
        }
        return required || in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
    }

    private static String description(JsonInput in) {
        String description = in.string("description", Limits.DESCRIPTION);
        if (description != null && TextRules.hasControlBesidesLineBreaks(description)) {
            in.reject("description", TextRules.NO_CONTROL_BUT_LINE_BREAKS);
            return null;
        }
        return description;
    }

    private static Filter filter(JsonInput in, boolean required) {
        JsonNode node = in.value("filter");
        if (node == null) {
            if (required || in.has("filter")) in.reject("filter", "is required: a condition or a group");
            return null;
        }
        List<Violation> errors = new ArrayList<>();
        Filter filter = FilterParser.parse(node, in.name("filter"), errors);
        // JsonInput prefixes its own path, which is empty at the top level
        errors.forEach(e -> in.reject(e.field(), e.message()));
        return filter;
    }
}
