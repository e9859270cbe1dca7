package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.journeys.JourneyInput;
import dev.pushservice.journeys.JourneyService;
import dev.pushservice.journeys.JourneyView;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.pagination.Page;
import jakarta.servlet.http.HttpServletResponse;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * An app's journeys: the list with state and execution stats, a journey's page (definition, warnings,
 * stats, the state changes {@code PATCH /v1/journeys/…} offers, and an edit of name, reentry limit
 * and definition as JSON), and creation from JSON. Bodies are read by {@link JourneyInput};
 * {@link JourneyService} checks references, changes and audits.
 */
@Controller
class JourneysPages {

    private static final String BASE = "/dashboard/apps/{appId}/journeys";
    /** The states a journey's page may set by a button (archive has its own, as DELETE). */
    private static final Set<String> STATES = Set.of("draft", "active", "paused");

    private final DashboardAccess access;
    private final JourneyService journeys;
    private final Forms forms;

    JourneysPages(DashboardAccess access, JourneyService journeys, Forms forms) {
        this.access = access;
        this.journeys = journeys;
        this.forms = forms;
    }

    /** A journey of the list with its execution totals. */
    record Row(JourneyView.Summary journey, String trigger, long entered, long running, long completed, long goals) {
    }

    @GetMapping(BASE)
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        Page<JourneyView.Summary> journeysPage = journeys.list(app.id(), Forms.page(page));
        // the page's totals in one statement, not one per journey
        Map<UUID, JourneyView.ListTotals> totals = journeys.listTotals(app.id(),
                journeysPage.data().stream().map(JourneyView.Summary::journeyId).toList());
        List<Row> rows = journeysPage.data().stream().map(j -> {
            JourneyView.ListTotals t = totals.getOrDefault(j.journeyId(), JourneyView.ListTotals.NONE);
            return new Row(j, j.trigger().path("type").asString(""), t.entered(), t.running(), t.completed(), t.goals());
        }).toList();
        model.addAttribute("page", journeysPage);
        model.addAttribute("rows", rows);
        return Forms.appPage(me, app, model, "journeys");
    }

    @GetMapping(BASE + "/new")
    String blank(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        model.addAttribute("form", Map.of("reentry_limit", "1", "definition", ""));
        return Forms.appPage(me, app, model, "journey-new");
    }

    @PostMapping(BASE)
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        JourneyView created;
        try {
            created = journeys.create(app.id(), JourneyInput.create(body(form, true)));
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            model.addAttribute("form", form);
            return Forms.appPage(me, app, model, "journey-new");
        }
        return "redirect:/dashboard/apps/" + app.id() + "/journeys/" + created.journeyId();
    }

    @GetMapping(BASE + "/{journeyId}")
    String journey(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String journeyId,
                   Model model) {
        Tenants.App app = access.app(me, appId);
        JourneyView journey = journeys.get(app.id(), Forms.id(journeyId, "Journey"));
        Map<String, String> form = new LinkedHashMap<>();
        form.put("name", journey.name());
        form.put("reentry_limit", String.valueOf(journey.reentryLimit()));
        form.put("definition", forms.pretty(journey.definition()));
        return page(me, app, journey, form, model);
    }

    @PostMapping(BASE + "/{journeyId}")
    String update(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String journeyId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(journeyId, "Journey");
        JourneyView journey = journeys.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        try {
            journeys.update(app.id(), id, JourneyInput.update(body(form, false)));
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            return page(me, app, journey, form, model);
        }
        return "redirect:/dashboard/apps/" + app.id() + "/journeys/" + id;
    }

    /** Activate, pause or back to draft: {@code PATCH /v1/journeys/…} with only a status. */
    @PostMapping(BASE + "/{journeyId}/status")
    String status(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String journeyId,
                  @RequestParam(name = "status", required = false) String status) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(journeyId, "Journey");
        journeys.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        if (status == null || !STATES.contains(status)) throw InvalidInput.of("status", "must be draft, active or paused");
        ObjectNode body = Forms.object();
        body.put("status", status);
        journeys.update(app.id(), id, JourneyInput.update(body));
        return "redirect:/dashboard/apps/" + app.id() + "/journeys/" + id;
    }

    @PostMapping(BASE + "/{journeyId}/archive")
    String archive(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String journeyId) {
        Tenants.App app = access.app(me, appId);
        UUID id = Forms.id(journeyId, "Journey");
        journeys.get(app.id(), id);
        access.require(me, MemberRole.ADMIN);
        journeys.archive(app.id(), id);
        return "redirect:/dashboard/apps/" + app.id() + "/journeys/" + id;
    }

    private String page(DashboardMember me, Tenants.App app, JourneyView journey, Map<String, String> form, Model model) {
        model.addAttribute("journey", journey);
        model.addAttribute("stats", journeys.stats(app.id(), journey.journeyId()));
        model.addAttribute("form", form);
        return Forms.appPage(me, app, model, "journey");
    }

    /** The body {@code /v1/journeys} takes: name, reentry_limit (an integer), definition (JSON). */
    private ObjectNode body(Map<String, String> form, boolean create) {
        ObjectNode body = Forms.object();
        body.put("name", form.getOrDefault("name", ""));
        String reentry = form.get("reentry_limit");
        if (reentry != null && !reentry.isBlank()) {
            JsonNode n = forms.parse("reentry_limit", reentry.strip());
            body.set("reentry_limit", n);
        }
        if (create) Forms.text(body, form, "status");
        JsonNode definition = forms.parse("definition", form.get("definition"));
        if (definition != null) body.set("definition", definition);
        else if (!create) body.putNull("definition");
        return body;
    }
}
