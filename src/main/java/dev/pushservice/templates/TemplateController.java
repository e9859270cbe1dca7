package dev.pushservice.templates;

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
 * {@code /v1/templates}. Bodies are checked whole by {@link TemplateInput} (types, lengths, statuses,
 * placeholder syntax in every content string) before anything is stored; every problem comes back in one 422.
 */
@RestController
@RequestMapping("/v1/templates")
class TemplateController {

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
        TemplateInput.Create in = TemplateInput.create(body);
        TemplateView created = templates.create(caller.appId(), in.name(), in.status(), in.content());
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
        TemplateInput.Update in = TemplateInput.update(body);
        return templates.update(caller.appId(), id, in.name(), in.status(), in.content());
    }

    @DeleteMapping("/{template_id}")
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    TemplateView.Deletion archive(ApiPrincipal caller, @PathVariable("template_id") String templateId) {
        return templates.archive(caller.appId(), Uuids.pathId(templateId, "template_id"));
    }
}
