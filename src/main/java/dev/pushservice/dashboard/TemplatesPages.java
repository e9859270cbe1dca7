package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.templates.TemplateInput;
import dev.pushservice.templates.TemplateService;
import dev.pushservice.templates.TemplateView;
import jakarta.servlet.http.HttpServletResponse;
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
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's templates: list, create, edit (a new version), delete (archive, as {@code DELETE
 * /v1/templates/…}). Forms become the body {@code /v1/templates} takes and {@link TemplateInput}
 * reads it; {@link TemplateService} makes the change and audits it.
 */
@Controller
class TemplatesPages {

    private static final String BASE = "/dashboard/apps/{appId}/templates";

    private final DashboardAccess access;
    private final TemplateService templates;
    private final Forms forms;

    TemplatesPages(DashboardAccess access, TemplateService templates, Forms forms) {
        this.access = access;
        this.templates = templates;
        this.forms = forms;
    }

    @GetMapping(BASE)
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("page", templates.list(app.id(), Forms.page(page)));
        return Forms.appPage(me, app, model, "templates");
    }

    @GetMapping(BASE + "/new")
    String blank(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("form", Map.of("status", "draft"));
        return Forms.appPage(me, app, model, "template-form");
    }

    @PostMapping(BASE)
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        try {
            TemplateInput.Create in = TemplateInput.create(body(form));
            templates.create(app.id(), in.name(), in.status(), in.content());
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            return Forms.appPage(me, app, model, "template-form");
        }
        return "redirect:/dashboard/apps/" + app.id() + "/templates";
    }

    @GetMapping(BASE + "/{templateId}")
    String edit(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String templateId,
                Model model) {
        Tenants.App app = access.app(me, appId);
        TemplateView template = templates.get(app.id(), Forms.id(templateId, "Template"));
        Map<String, String> form = new LinkedHashMap<>();
        form.put("name", template.name());
        form.put("status", template.status());
        ObjectNode content = template.content().toJson();
        form.put("title", content.path("title").asString(""));
        form.put("body", content.path("body").asString(""));
        form.put("click_url", content.path("click_url").asString(""));
        form.put("interruption_level", content.path("interruption_level").asString(""));
        form.put("data", content.has("data") ? forms.pretty(content.get("data")) : "");
        model.addAttribute("form", form);
        model.addAttribute("template", template);
        return Forms.appPage(me, app, model, "template-form");
    }

    @PostMapping(BASE + "/{templateId}")
    String update(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String templateId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(templateId, "Template");
        TemplateView template = templates.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        try {
            TemplateInput.Update in = TemplateInput.update(body(form));
            templates.update(app.id(), id, in.name(), in.status(), in.content());
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            model.addAttribute("template", template);
            return Forms.appPage(me, app, model, "template-form");
        }
        return "redirect:/dashboard/apps/" + app.id() + "/templates";
    }

    @PostMapping(BASE + "/{templateId}/delete")
    String delete(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String templateId) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(templateId, "Template");
        templates.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        templates.archive(app.id(), id);
        return "redirect:/dashboard/apps/" + app.id() + "/templates";
    }

    /** The body {@code /v1/templates} takes: name, status and content (title, body, click_url, data, interruption_level). */
    private ObjectNode body(Map<String, String> form) {
        ObjectNode body = Forms.object();
        body.put("name", form.getOrDefault("name", ""));
        Forms.text(body, form, "status");
        ObjectNode content = body.putObject("content");
        content.put("title", form.getOrDefault("title", ""));
        content.put("body", form.getOrDefault("body", ""));
        Forms.text(content, form, "click_url");
        Forms.text(content, form, "interruption_level");
        JsonNode data = forms.parse("content.data", form.get("data"));
        if (data != null) content.set("data", data);
        return body;
    }
}
