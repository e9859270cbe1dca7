package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.devices.DeviceMigration;
import dev.pushservice.members.Member;
import dev.pushservice.members.MemberRole;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.multipart.MultipartFile;

/**
 * An app's migration page (docs/dashboard.md "Migration upload"): the import history for every member,
 * the upload form for owners. The upload is checked against the stored role before its file is read;
 * {@link DeviceMigration} validates and stages it.
 */
@Controller
class MigrationController {

    private static final Logger log = LoggerFactory.getLogger(MigrationController.class);
    static final int HISTORY = 20;

    private final DashboardAccess access;
    private final DeviceMigration migration;

    MigrationController(DashboardAccess access, DeviceMigration migration) {
        this.access = access;
        this.migration = migration;
    }

    @GetMapping("/dashboard/apps/{appId}/migration")
    String page(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        return show(me, app, model);
    }

    /**
     * Stages the uploaded CSV. The part is on disk already (Spring's multipart parts are written to a
     * temporary file); it is moved to a file of our own, read twice from there, and deleted.
     */
    @PostMapping("/dashboard/apps/{appId}/migration")
    String upload(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam(name = "file", required = false) MultipartFile file,
                  @RequestParam(name = "provider", required = false) String provider,
                  Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        Member owner = access.require(me, MemberRole.OWNER);
        if (file == null || file.isEmpty()) {
            return refused(me, app, model, response, new DeviceMigration.Refused("Choose a CSV file to upload."));
        }
        Path copy = null;
        try {
            copy = Files.createTempFile("push-migration-", ".csv");
            file.transferTo(copy.toFile());
            DeviceMigration.Imported imported = migration.upload(app.id(), new DeviceMigration.Uploader(owner.id(), owner.email()),
                    file.getOriginalFilename(), provider, copy);
            log.info("Migration upload {} for app {}: {} rows read, {} staged, skipped {}", imported.id(), app.id(),
                    imported.rowsRead(), imported.rowsStaged(), imported.skipped());
            model.addAttribute("imported", imported);
            return show(me, app, model);
        } catch (DeviceMigration.Refused e) {
            return refused(me, app, model, response, e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (copy != null) {
                try {
                    Files.deleteIfExists(copy);
                } catch (IOException e) {
                    log.warn("Could not delete the upload's temporary file {}", copy, e);
                }
            }
        }
    }

    private String refused(DashboardMember me, Tenants.App app, Model model, HttpServletResponse response, RuntimeException e) {
        response.setStatus(422);
        model.addAttribute("refusal", e.getMessage());
        if (e instanceof DeviceMigration.Refused r) {
            model.addAttribute("refusedLines", r.lines());
            model.addAttribute("refusedCount", r.count());
        }
        return show(me, app, model);
    }

    private String show(DashboardMember me, Tenants.App app, Model model) {
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("history", migration.history(app.id(), HISTORY));
        model.addAttribute("staged", migration.stagedCounts(app.id()));
        model.addAttribute("maxRows", migration.maxRows());
        model.addAttribute("maxMegabytes", migration.maxBytes() / (1024 * 1024));
        if (!model.containsAttribute("refusedLines")) model.addAttribute("refusedLines", List.of());
        return "migration";
    }
}
