package dev.pushservice.webhooks;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
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
 * {@code /v1/webhooks}: reads bodies field by field and answers every problem in one 422; another
 * app's webhook is a 404 on every route.
 */
@RestController
@RequestMapping("/v1/webhooks")
class WebhookController {

    private final WebhookService webhooks;

    WebhookController(WebhookService webhooks) {
        this.webhooks = webhooks;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<WebhookView> list(ApiPrincipal caller, PageRequest page) {
        return webhooks.list(caller.appId(), page);
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<WebhookView.WithSecret> create(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String url = in.requiredString("url", WebhookService.URL_MAX);
        String description = in.text("description", WebhookService.DESCRIPTION_MAX);
        List<String> events = in.value("events") == null ? reject(in, "events", "is required") : events(in);
        Boolean enabled = in.bool("enabled");
        in.check();
        WebhookService.Changes changes = new WebhookService.Changes(url, true, description, events, enabled, false);
        return ResponseEntity.status(HttpStatus.CREATED).body(webhooks.create(caller.appId(), changes));
    }

    @PatchMapping("/{webhook_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    Object update(ApiPrincipal caller, @PathVariable("webhook_id") String webhookId, @RequestBody JsonNode body) {
        var id = Uuids.pathId(webhookId, "webhook_id");
        JsonInput in = JsonInput.object(body);
        for (String field : new String[] {"url", "events", "enabled", "rotate_secret"}) {
            if (in.has(field) && in.value(field) == null) in.reject(field, "must not be null (leave it out to keep the current value)");
        }
        String url = in.string("url", WebhookService.URL_MAX);
        String description = in.text("description", WebhookService.DESCRIPTION_MAX);
        List<String> events = in.value("events") == null ? null : events(in);
        Boolean enabled = in.bool("enabled");
        Boolean rotate = in.bool("rotate_secret");
        if (!in.hasErrors() && !in.has("url") && !in.has("description") && !in.has("events") && !in.has("enabled")
                && !in.has("rotate_secret")) {
            throw new InvalidInput("Nothing to change: give url, description, events, enabled or rotate_secret");
        }
        in.check();
        WebhookService.Changes changes = new WebhookService.Changes(url, in.has("description"), description, events,
                enabled, Boolean.TRUE.equals(rotate));
        return webhooks.update(caller.appId(), id, changes);
    }

    @DeleteMapping("/{webhook_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    WebhookView.Deletion delete(ApiPrincipal caller, @PathVariable("webhook_id") String webhookId) {
        return webhooks.delete(caller.appId(), Uuids.pathId(webhookId, "webhook_id"));
    }

    @PostMapping("/{webhook_id}/test")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<WebhookView.Queued> test(ApiPrincipal caller, @PathVariable("webhook_id") String webhookId) {
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(webhooks.test(caller.appId(), Uuids.pathId(webhookId, "webhook_id")));
    }

    @GetMapping("/{webhook_id}/deliveries")
    @Authorize(Scope.NOTIFICATIONS_READ)
    WebhookView.Deliveries deliveries(ApiPrincipal caller, @PathVariable("webhook_id") String webhookId) {
        return webhooks.deliveries(caller.appId(), Uuids.pathId(webhookId, "webhook_id"));
    }

    private static <T> T reject(JsonInput in, String field, String message) {
        in.reject(field, message);
        return null;
    }

    /** {@code events}: a non-empty array of catalogue names or {@code *}; duplicates collapse. */
    private static List<String> events(JsonInput in) {
        JsonNode value = in.value("events");
        if (!value.isArray()) return reject(in, "events", "must be an array of event kinds");
        if (value.isEmpty()) return reject(in, "events", "must name at least one event kind (or \"*\" for all)");
        if (value.size() > WebhookService.EVENTS_MAX) return reject(in, "events", "must have at most " + WebhookService.EVENTS_MAX + " items");
        Set<String> kinds = new LinkedHashSet<>();
        List<String> bad = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            JsonNode item = value.get(i);
            if (!item.isString()) {
                in.reject("events[" + i + "]", "must be a string");
            } else if (!WebhookEvents.subscribable(item.asString())) {
                in.reject("events[" + i + "]", "is not a known event kind; see the event catalogue (or \"*\" for all)");
                bad.add(item.asString());
            } else {
                kinds.add(item.asString());
            }
        }
        return bad.isEmpty() ? List.copyOf(kinds) : null;
    }
}
