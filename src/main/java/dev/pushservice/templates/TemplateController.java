package dev.pushservice.templates;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Limits;
import java.util.Set;
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
 * {@code /v1/templates}. Bodies are checked whole (types, lengths, statuses, placeholder syntax in
 * every content string) before anything is stored; every problem comes back in one 422.
 */
@RestController
@RequestMapping("/v1/templates")
class TemplateController {

    private static final Set<String> CREATE_STATUSES = Set.of("draft", "published");
    private static final Set<String> STATUSES = Set.of("draft", "published", "archived");

    private final TemplateService templates;

    TemplateController(TemplateService templates) {
        this.templates = templates;
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<TemplateView.Summary> list(ApiPrincipal caller, PageRequest page) {
        return templates.list(caller.appId(), page);
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<TemplateView> create(ApiPrincipal caller, @RequestBody JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.requiredText("name", Limits.NAME);
        String status = in.string("status", 20);
        if (status != null && !CREATE_STATUSES.contains(status)) {
            in.reject("status", "must be draft or published on creation");
        }
        TemplateContent content = null;
        if (in.value("content") == null) in.reject("content", "is required");
        else content = in.nested("content").map(TemplateContent::read).orElse(null);
        in.check();
        TemplateView created = templates.create(caller.appId(), name, status == null ? TemplateService.DRAFT : status, content);
        return ResponseEntity.status(HttpStatus.CREATED).body(created);
    }

    @GetMapping("/{template_id}")
    @Authorize(Scope.NOTIFICATIONS_READ)
    TemplateView get(ApiPrincipal caller, @PathVariable("template_id") String templateId) {
        return templates.get(caller.appId(), Uuids.pathId(templateId, "template_id"));
    }

    @PatchMapping("/{template_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    TemplateView update(ApiPrincipal caller, @PathVariable("template_id") String templateId, @RequestBody JsonNode body) {
        UUID id = Uuids.pathId(templateId, "template_id");
        JsonInput in = JsonInput.object(body);
        for (String field : new String[] {"name", "status", "content"}) {
            if (in.has(field) && in.value(field) == null) in.reject(field, "must not be null (leave it out to keep the current value)");
        }
        String name = in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
        String status = in.string("status", 20);
        if (status != null && !STATUSES.contains(status)) in.reject("status", "must be draft, published or archived");
        TemplateContent content = in.nested("content").map(TemplateContent::read).orElse(null);
        if (!in.hasErrors() && !in.has("name") && !in.has("status") && !in.has("content")) {
            throw new InvalidInput("Nothing to change: give name, status or content");
        }
        in.check();
        return templates.update(caller.appId(), id, name, status, content);
    }

    @DeleteMapping("/{template_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    TemplateView.Deletion archive(ApiPrincipal caller, @PathVariable("template_id") String templateId) {
        return templates.archive(caller.appId(), Uuids.pathId(templateId, "template_id"));
    }
}
