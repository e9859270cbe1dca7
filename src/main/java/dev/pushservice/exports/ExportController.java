package dev.pushservice.exports;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Enumeration;
import java.util.Locale;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/exports}: create an export of one data type ({@code type}, with optional {@code from},
 * {@code to}, {@code notification_id}, {@code segment_id}), list the {@value ExportService#LIST_LIMIT}
 * newest, and download a completed, unexpired file as {@code text/csv} (gzip-encoded when the client
 * accepts gzip).
 */
@RestController
@RequestMapping("/v1/exports")
class ExportController {

    private final ExportService exports;

    ExportController(ExportService exports) {
        this.exports = exports;
    }

    @PostMapping
    @Authorize(Scope.NOTIFICATIONS_WRITE)
    ResponseEntity<ExportView> create(ApiPrincipal caller, @RequestBody JsonNode body) {
        ExportInput.Create in = ExportInput.create(body);
        ExportView created = exports.create(caller.appId(), in.type(), in.filters());
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(created);
    }

    @GetMapping
    @Authorize(Scope.NOTIFICATIONS_READ)
    Page<ExportView> list(ApiPrincipal caller, PageRequest page) {
        return exports.newest(caller.appId(), page);
    }

    @GetMapping("/{export_id}/download")
    @Authorize(Scope.NOTIFICATIONS_READ)
    void download(ApiPrincipal caller, @PathVariable("export_id") String exportId, HttpServletRequest request,
                  HttpServletResponse response) throws IOException {
        ExportService.Download file = exports.download(caller.appId(), Uuids.pathId(exportId, "export_id"));
        boolean gzip = acceptsGzip(request.getHeaders("Accept-Encoding"));
        response.setStatus(HttpServletResponse.SC_OK);
        response.setContentType("text/csv; charset=utf-8; header=present");
        response.setHeader("Content-Disposition", "attachment; filename=\"" + file.fileName() + "\"");
        response.setHeader("Vary", "Accept-Encoding");
        if (gzip) response.setHeader("Content-Encoding", "gzip");
        response.setContentLengthLong(file.length(gzip));
        OutputStream out = response.getOutputStream();
        file.writeTo(out, gzip);
        out.flush();
    }

    /** Whether an {@code Accept-Encoding} header accepts gzip (listed without {@code q=0}). */
    static boolean acceptsGzip(Enumeration<String> headers) {
        while (headers != null && headers.hasMoreElements()) {
            for (String part : headers.nextElement().split(",")) {
                String[] pieces = part.trim().toLowerCase(Locale.ROOT).split(";");
                String coding = pieces[0].trim();
                if (!coding.equals("gzip") && !coding.equals("x-gzip")) continue;
                boolean refused = false;
                for (int i = 1; i < pieces.length; i++) {
                    String p = pieces[i].trim().replace(" ", "");
                    if (p.matches("q=0(\\.0{0,3})?")) refused = true;
                }
                if (!refused) return true;
            }
        }
        return false;
    }
}
