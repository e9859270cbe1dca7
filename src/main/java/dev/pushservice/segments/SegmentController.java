package dev.pushservice.segments;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
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
 * Bodies are read by {@link SegmentInput}.
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
        SegmentInput.Create in = SegmentInput.create(body);
        return ResponseEntity.status(HttpStatus.CREATED).body(segments.create(caller.appId(), in.name(), in.description(), in.filter()));
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
        return segments.update(caller.appId(), id, SegmentInput.update(body));
    }

    @DeleteMapping("/{segment_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    SegmentView archive(ApiPrincipal caller, @PathVariable("segment_id") String segmentId) {
        return segments.archive(caller.appId(), Uuids.pathId(segmentId, "segment_id"));
    }

    @PostMapping("/estimate")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    SegmentService.Estimate estimate(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        boolean bySegment = in.value("segment_id") != null;
        boolean byFilter = in.value("filter") != null;
        if (bySegment == byFilter) {
            throw InvalidInput.of(bySegment ? "filter" : "segment_id",
                    "give exactly one of segment_id (a saved segment) and filter (an unsaved filter)");
        }
        SegmentService.Estimate count;
        if (bySegment) {
            JsonNode raw = in.value("segment_id");
            UUID id = raw.isString() ? Uuids.parse(raw.stringValue()) : null;
            if (id == null) in.reject("segment_id", "must be a UUID");
            in.check();
            count = segments.count(caller.appId(), id, "segment_id");
        } else {
            Filter filter = SegmentInput.filter(in, true);
            in.check();
            count = segments.count(caller.appId(), filter);
        }
        return count;
    }
}
