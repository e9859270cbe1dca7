package dev.pushservice.webhooks;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
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
 * {@code /v1/webhooks}: reads bodies field by field ({@link WebhookInput}) and answers every problem in one 422; another
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
        return ResponseEntity.status(HttpStatus.CREATED).body(webhooks.create(caller.appId(), WebhookInput.create(body)));
    }

    @PatchMapping("/{webhook_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    Object update(ApiPrincipal caller, @PathVariable("webhook_id") String webhookId, @RequestBody JsonNode body) {
        var id = Uuids.pathId(webhookId, "webhook_id");
        WebhookService.Changes changes = WebhookInput.update(body);
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
}
