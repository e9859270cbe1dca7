package dev.pushservice.notifications;

import dev.pushservice.events.EventReads;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/notifications}: create (202, idempotent by {@code Idempotency-Key}), list, read,
 * cancel, recipients and events, and the preview of a creation body. HTTP only: the body is checked field by field here
 * ({@link NotificationRequest#read}), everything else is the services': creation {@link NotificationService}'s,
 * reads {@link NotificationViews}', cancel {@link NotificationStates}'.
 */
@RestController
@RequestMapping("/v1/notifications")
class NotificationController {

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    /** Visible ASCII, no spaces: what clients put in keys (UUIDs, hashes, request ids). */
    private static final Pattern KEY = Pattern.compile("[\\x21-\\x7E]+");

    private final NotificationService notifications;
    private final NotificationViews views;
    private final NotificationStates states;
    private final NotificationPreviews previews;
    private final Clock clock;

    NotificationController(NotificationService notifications, NotificationViews views, NotificationStates states,
                           NotificationPreviews previews, Clock clock) {
        this.notifications = notifications;
        this.views = views;
        this.states = states;
        this.previews = previews;
        this.clock = clock;
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<NotificationView.Created> create(ApiPrincipal caller,
                                                    @RequestHeader(value = IDEMPOTENCY_KEY, required = false) String key,
                                                    @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        List<Violation> keyProblems = new ArrayList<>();
        if (key == null || key.isEmpty()) {
            keyProblems.add(new Violation(IDEMPOTENCY_KEY, "header is required: a unique key per notification, reused only to retry it"));
        } else if (key.length() > NotificationLimits.IDEMPOTENCY_KEY || !KEY.matcher(key).matches()) {
            keyProblems.add(new Violation(IDEMPOTENCY_KEY, "must be 1 to " + NotificationLimits.IDEMPOTENCY_KEY
                    + " visible ASCII characters (no spaces)"));
        }
        NotificationRequest request = NotificationRequest.read(in, clock.instant());
        if (!keyProblems.isEmpty()) {
            // one 422 tells all: the header's problem, then the body's; with a well-formed body, what
            // only the app's data shows (title or body missing after the template, an unknown device
            // or segment) too, as a request with a key would be told
            List<Violation> problems = new ArrayList<>(keyProblems);
            try {
                if (in.hasErrors()) in.check();
                else notifications.prepare(caller.appId(), request, List.of());
            } catch (InvalidInput e) {
                problems.addAll(e.violations());
            }
            throw new InvalidInput(problems);
        }
        in.check();
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(notifications.create(caller.appId(), key, request));
    }

    /**
     * A creation body previewed: validated as creation validates it, nothing stored or sent. An
     * {@code Idempotency-Key} header is ignored (not required, not checked, not consumed), so the very
     * request that will create the notification can be previewed first.
     */
    @PostMapping("/preview")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    PreviewView preview(ApiPrincipal caller, @RequestParam(value = "device_id", required = false) String deviceId,
                        @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        UUID device = null;
        if (deviceId != null) {
            device = Uuids.parse(deviceId);
            if (device == null) in.reject("device_id", "must be a UUID");
        }
        NotificationRequest request = NotificationRequest.read(in, clock.instant());
        in.check();
        return previews.preview(caller.appId(), request, device);
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<NotificationView> list(ApiPrincipal caller, PageRequest page) {
        return views.list(caller.appId(), page);
    }

    @GetMapping("/{notification_id}")
    @Authorize(Scope.NOTIFICATIONS_READ)
    NotificationView get(ApiPrincipal caller, @PathVariable("notification_id") String id) {
        return views.get(caller.appId(), Uuids.pathId(id, "notification_id"));
    }

    @PostMapping("/{notification_id}/cancel")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    NotificationView cancel(ApiPrincipal caller, @PathVariable("notification_id") String id) {
        return states.cancel(caller.appId(), Uuids.pathId(id, "notification_id"));
    }

    @GetMapping("/{notification_id}/recipients")
    @Authorize(Scope.NOTIFICATIONS_READ)
    RecipientPage recipients(ApiPrincipal caller, @PathVariable("notification_id") String id, PageRequest page,
                             @RequestParam(name = "cursor", required = false) String cursor) {
        return views.recipients(caller.appId(), Uuids.pathId(id, "notification_id"), page, cursor);
    }

    @GetMapping("/{notification_id}/events")
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<EventReads.EventView> events(ApiPrincipal caller, @PathVariable("notification_id") String id, PageRequest page) {
        return views.events(caller.appId(), Uuids.pathId(id, "notification_id"), page);
    }
}
