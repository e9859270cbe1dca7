package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.devices.DeviceMigration;
import dev.pushservice.devices.WebPushImport;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
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
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's migration page (docs/dashboard.md "Migration upload"): the import history for every member,
 * the upload form for owners. The upload is checked against the stored role before its file is read;
 * {@link DeviceMigration} validates and stages it.
 */
@Controller
class MigrationController {

    private static final Logger log = LoggerFactory.getLogger(MigrationController.class);
    static final int HISTORY = 20;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final DashboardAccess access;
    private final DeviceMigration migration;
    private final WebPushImport webPush;

    MigrationController(DashboardAccess access, DeviceMigration migration, WebPushImport webPush) {
        this.access = access;
        this.migration = migration;
        this.webPush = webPush;
    }

    /**
     * Imports a previous provider's web subscriptions with its VAPID pair (owners only), through the
     * same {@link WebPushImport} as {@code POST /v1/app/webpush/imports}: the page again with what was
     * imported, or 422 listing every problem (nothing changed). The private key is never put back
     * into the page.
     */
    @PostMapping("/dashboard/apps/{appId}/migration/webpush")
    String importWebPush(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                         @RequestParam(name = "vapid_public_key", required = false) String publicKey,
                         @RequestParam(name = "vapid_private_key", required = false) String privateKey,
                         @RequestParam(name = "subscriptions", required = false) String subscriptions,
                         Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.OWNER);
        model.addAttribute("webPushPublicKey", publicKey);
        model.addAttribute("webPushSubscriptions", subscriptions);
        ObjectNode body = JSON.createObjectNode();
        body.put("vapid_public_key", blankToNull(publicKey));
        body.put("vapid_private_key", blankToNull(privateKey));
        try {
            JsonNode rows = subscriptions == null || subscriptions.isBlank() ? null : JSON.readTree(subscriptions);
            body.set("subscriptions", rows);
        } catch (JacksonException e) {
            return webPushRefused(me, app, model, response,
                    List.of(new Violation("subscriptions", "must be a JSON array of subscriptions")));
        }
        try {
            WebPushImport.Result result = webPush.importSubscriptions(app.id(), body);
            log.info("Web Push import for app {}: key {}, {} rows, {} created, {} updated, {} skipped", app.id(),
                    result.vapidPublicKey(), result.received(), result.created(), result.updated(), result.skipped().size());
            model.addAttribute("webPushImported", result);
            model.addAttribute("webPushSubscriptions", null);
            return show(me, app, model);
        } catch (InvalidInput e) {
            return webPushRefused(me, app, model, response, e.violations());
        }
    }

    private String webPushRefused(DashboardMember me, Tenants.App app, Model model, HttpServletResponse response,
                                  List<Violation> problems) {
        response.setStatus(422);
        model.addAttribute("webPushProblems", problems);
        return show(me, app, model);
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.strip();
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
        if (!model.containsAttribute("webPushProblems")) model.addAttribute("webPushProblems", List.of());
        return "migration";
    }
}
