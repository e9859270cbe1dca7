package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.exports.ExportInput;
import dev.pushservice.exports.ExportService;
import dev.pushservice.exports.ExportType;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.json.Uuids;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's exports: the newest (as {@code GET /v1/exports} lists them), a form to create one (type
 * and filters, read by {@link ExportInput} as {@code POST /v1/exports} reads them), and the download
 * of a completed file, streamed chunk by chunk from {@link ExportService} as CSV with its file name.
 */
@Controller
class ExportsPages {

    private static final String BASE = "/dashboard/apps/{appId}/exports";

    private final DashboardAccess access;
    private final ExportService exports;

    ExportsPages(DashboardAccess access, ExportService exports) {
        this.access = access;
        this.exports = exports;
    }

    @GetMapping(BASE)
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        return page(me, app, page, Map.of("type", "audience"), model);
    }

    @PostMapping(BASE)
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam Map<String, String> form, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        try {
            ObjectNode body = Forms.object();
            body.put("type", form.getOrDefault("type", ""));
            for (String field : new String[] {"from", "to", "notification_id", "segment_id"}) Forms.text(body, form, field);
            ExportInput.Create in = ExportInput.create(body);
            exports.create(app.id(), in.type(), in.filters());
        } catch (InvalidInput e) {
            Forms.refused(e, model, response);
            return page(me, app, null, form, model);
        }
        return "redirect:/dashboard/apps/" + app.id() + "/exports";
    }

    /**
     * The completed file as {@code text/csv} (uncompressed; {@code Content-Length} known), named as the
     * API names it. Not ready, failed or expired: the 409 page with the reason; another app's: 404.
     */
    @GetMapping(BASE + "/{exportId}/download")
    void download(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String exportId,
                  HttpServletResponse response) throws IOException {
        Tenants.App app = access.app(me, appId);
        UUID id = Uuids.parse(exportId);
        if (id == null) throw new NotFound("Export");
        ExportService.Download file = exports.download(app.id(), id);
        response.setStatus(HttpServletResponse.SC_OK);
        response.setContentType("text/csv; charset=utf-8; header=present");
        response.setHeader("Content-Disposition", "attachment; filename=\"" + file.fileName() + "\"");
        response.setContentLengthLong(file.length(false));
        OutputStream out = response.getOutputStream();
        file.writeTo(out, false);
        out.flush();
    }

    private String page(DashboardMember me, Tenants.App app, String page, Map<String, String> form, Model model) {
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("canChange", Forms.canChange(me));
        model.addAttribute("page", exports.newest(app.id(), Forms.page(page)));
        model.addAttribute("types", Arrays.stream(ExportType.values()).map(ExportType::value).toList());
        model.addAttribute("form", form);
        return "exports";
    }
}
