package dev.pushservice.journeys;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
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
 * {@code /v1/journeys}: create, list, read, PATCH (new version, states), DELETE (archive) and stats.
 * Bodies are read by {@link JourneyInput}.
 */
@RestController
@RequestMapping("/v1/journeys")
class JourneyController {

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
        return ResponseEntity.status(HttpStatus.CREATED).body(journeys.create(caller.appId(), JourneyInput.create(body)));
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
        return journeys.update(caller.appId(), id, JourneyInput.update(body));
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
}
