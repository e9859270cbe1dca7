package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.segments.Filter;
import dev.pushservice.segments.SegmentInput;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentView;
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
 * An app's segments: list, create and edit with a JSON editor for the filter and a live estimate
 * (htmx posts the editor's text to {@code …/segments/estimate}, which answers a fragment: the count,
 * or the parser's messages), delete (archive). Bodies are read by {@link SegmentInput}, as
 * {@code /v1/segments} reads them; changes go through {@link SegmentService}.
 */
@Controller
class SegmentsPages {

    private static final String BASE = "/dashboard/apps/{appId}/segments";
    static final String EXAMPLE_FILTER = """
            {
              "field": "platform",
              "operator": "eq",
              "value": "ios"
            }""";

    private final DashboardAccess access;
    private final SegmentService segments;
    private final Forms forms;

    SegmentsPages(DashboardAccess access, SegmentService segments, Forms forms) {
        this.access = access;
        this.segments = segments;
        this.forms = forms;
    }

    @GetMapping(BASE)
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("page", segments.list(app.id(), Forms.page(page)));
        return Forms.appPage(me, app, model, "segments");
    }

    @GetMapping(BASE + "/new")
    String blank(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("form", Map.of("filter", EXAMPLE_FILTER));
        return Forms.appPage(me, app, model, "segment-form");
    }

    @PostMapping(BASE)
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        try {
            ObjectNode body = body(form);
            if (body.path("description").isNull()) body.remove("description");
            SegmentInput.Create in = SegmentInput.create(body);
            segments.create(app.id(), in.name(), in.description(), in.filter());
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            return Forms.appPage(me, app, model, "segment-form");
        }
        return "redirect:/dashboard/apps/" + app.id() + "/segments";
    }

    @GetMapping(BASE + "/{segmentId}")
    String edit(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String segmentId,
                Model model) {
        Tenants.App app = access.app(me, appId);
        SegmentView segment = segments.get(app.id(), Forms.id(segmentId, "Segment"));
        Map<String, String> form = new LinkedHashMap<>();
        form.put("name", segment.name());
        form.put("description", segment.description() == null ? "" : segment.description());
        form.put("filter", forms.pretty(segment.filter()));
        model.addAttribute("form", form);
        model.addAttribute("segment", segment);
        model.addAttribute("estimate", segments.count(app.id(), segment.segmentId(), "segment_id"));
        return Forms.appPage(me, app, model, "segment-form");
    }

    @PostMapping(BASE + "/{segmentId}")
    String update(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String segmentId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(segmentId, "Segment");
        SegmentView segment = segments.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        try {
            segments.update(app.id(), id, SegmentInput.update(body(form)));
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            model.addAttribute("segment", segment);
            return Forms.appPage(me, app, model, "segment-form");
        }
        return "redirect:/dashboard/apps/" + app.id() + "/segments";
    }

    @PostMapping(BASE + "/{segmentId}/delete")
    String delete(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String segmentId) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(segmentId, "Segment");
        segments.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        segments.archive(app.id(), id);
        return "redirect:/dashboard/apps/" + app.id() + "/segments";
    }

    /**
     * The live estimate: devices the editor's filter selects now ({@link SegmentService#count}, the
     * count {@code POST /v1/segments/estimate} answers), or what is wrong with the filter. Always a
     * 200 fragment, so htmx shows the message in place. Changes nothing, so any member may ask.
     */
    @PostMapping(BASE + "/estimate")
    String estimate(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                    @RequestParam(name = "filter", required = false) String filter, Model model) {
        Tenants.App app = access.app(me, appId);
        try {
            ObjectNode body = Forms.object();
            JsonNode parsed = forms.parse("filter", filter);
            if (parsed != null) body.set("filter", parsed);
            Filter valid = SegmentInput.estimateFilter(body);
            model.addAttribute("estimate", segments.count(app.id(), valid));
        } catch (InvalidInput e) {
            model.addAttribute("estimateErrors", Forms.messages(e));
        }
        return "segment-estimate :: estimate";
    }

    /** The body {@code /v1/segments} takes; a blank description is null (PATCH: remove it). */
    private ObjectNode body(Map<String, String> form) {
        ObjectNode body = Forms.object();
        body.put("name", form.getOrDefault("name", ""));
        String description = form.get("description");
        if (description == null || description.isBlank()) body.putNull("description");
        else body.put("description", description);
        JsonNode filter = forms.parse("filter", form.get("filter"));
        if (filter != null) body.set("filter", filter);
        return body;
    }
}
