package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.webhooks.WebhookInput;
import dev.pushservice.webhooks.WebhookService;
import dev.pushservice.webhooks.WebhookView;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's webhooks: list, create (the signing secret shown in that answer only, as the API shows
 * it once), edit, rotate the secret (shown once), delete; a webhook's page lists its deliveries,
 * newest first and paged, each with its attempts so far and its last attempt (status code, error,
 * time) and, while pending, when the next one is due. Bodies are read by {@link WebhookInput};
 * {@link WebhookService} checks the URL rule, changes and audits.
 */
@Controller
class WebhooksPages {

    private static final String BASE = "/dashboard/apps/{appId}/webhooks";

    private final DashboardAccess access;
    private final WebhookService webhooks;

    WebhooksPages(DashboardAccess access, WebhookService webhooks) {
        this.access = access;
        this.webhooks = webhooks;
    }

    @GetMapping(BASE)
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("page", webhooks.list(app.id(), Forms.page(page)));
        return Forms.appPage(me, app, model, "webhooks");
    }

    @GetMapping(BASE + "/new")
    String blank(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("form", Map.of("events", "*", "enabled", "true"));
        return Forms.appPage(me, app, model, "webhook-new");
    }

    @PostMapping(BASE)
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        WebhookView.WithSecret created;
        try {
            ObjectNode body = body(form);
            if (body.path("description").isNull()) body.remove("description");
            created = webhooks.create(app.id(), WebhookInput.create(body));
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            return Forms.appPage(me, app, model, "webhook-new");
        }
        // shown in this answer only: a reload does not show it again
        model.addAttribute("secret", created.secret());
        return page(me, app, webhooks.get(app.id(), created.webhookId()), null, null, model);
    }

    @GetMapping(BASE + "/{webhookId}")
    String webhook(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String webhookId,
                   @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        return page(me, app, webhooks.get(app.id(), Forms.id(webhookId, "Webhook")), page, null, model);
    }

    @PostMapping(BASE + "/{webhookId}")
    String update(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String webhookId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(webhookId, "Webhook");
        WebhookView webhook = webhooks.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        try {
            ObjectNode body = body(form);
            webhooks.update(app.id(), id, WebhookInput.update(body));
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            return page(me, app, webhook, null, form, model);
        }
        return "redirect:/dashboard/apps/" + app.id() + "/webhooks/" + id;
    }

    /** A new signing secret, shown in this answer only; the old one still signs for the API's grace period. */
    @PostMapping(BASE + "/{webhookId}/rotate")
    String rotate(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String webhookId,
                  Model model) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(webhookId, "Webhook");
        webhooks.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        ObjectNode body = Forms.object();
        body.put("rotate_secret", true);
        Object rotated = webhooks.update(app.id(), id, WebhookInput.update(body));
        if (rotated instanceof WebhookView.WithSecret s) model.addAttribute("secret", s.secret());
        return page(me, app, webhooks.get(app.id(), id), null, null, model);
    }

    @PostMapping(BASE + "/{webhookId}/delete")
    String delete(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String webhookId) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(webhookId, "Webhook");
        webhooks.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        webhooks.delete(app.id(), id);
        return "redirect:/dashboard/apps/" + app.id() + "/webhooks";
    }

    private String page(DashboardMember me, Tenants.App app, WebhookView webhook, String page, Map<String, String> form,
                        Model model) {
        if (form == null) {
            form = new LinkedHashMap<>();
            form.put("url", webhook.url());
            form.put("description", webhook.description() == null ? "" : webhook.description());
            form.put("events", String.join(", ", webhook.events()));
            form.put("enabled", String.valueOf(webhook.enabled()));
        }
        model.addAttribute("webhook", webhook);
        model.addAttribute("form", form);
        var deliveries = webhooks.deliveries(app.id(), webhook.webhookId(), Forms.page(page));
        model.addAttribute("deliveries", deliveries);
        // each delivery's earlier (failed, retried) attempts, for the page's deliveries in one read
        model.addAttribute("attempts", webhooks.attempts(app.id(), webhook.webhookId(),
                deliveries.data().stream().map(WebhookView.Delivery::deliveryId).toList()));
        return Forms.appPage(me, app, model, "webhook");
    }

    /** The body {@code /v1/webhooks} takes: url, description (blank: none), events (separated by commas or spaces), enabled (the checkbox). */
    private static ObjectNode body(Map<String, String> form) {
        ObjectNode body = Forms.object();
        body.put("url", form.getOrDefault("url", "").strip());
        String description = form.get("description");
        if (description == null || description.isBlank()) body.putNull("description");
        else body.put("description", description);
        ArrayNode events = body.putArray("events");
        Arrays.stream(form.getOrDefault("events", "").split("[,\\s]+")).filter(s -> !s.isBlank()).forEach(events::add);
        body.put("enabled", "true".equals(form.get("enabled")));
        return body;
    }
}
