package dev.pushservice.platform.error;

import dev.pushservice.platform.requestid.RequestIds;
import java.io.IOException;
import java.io.Writer;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.coyote.ActionCode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * Tomcat's last word on a request, in the spec's error shape: requests the container refuses before
 * any servlet runs (a malformed request line, {@code %00} or a malformed escape such as {@code %zz}
 * in the path, a header section over the limit, an unsupported HTTP version) would otherwise get
 * Tomcat's HTML page without {@code X-Request-ID}. Errors the application answers itself (through
 * MVC or {@code /error}) have a body already and are left alone, exactly as Tomcat's valve would.
 *
 * <p>The status stays the one Tomcat chose (400, 505, …): it is the honest HTTP answer. Messages are
 * fixed texts; nothing from the refused request (its path, its headers) is echoed. Thread-safe.
 */
public final class JsonErrorReportValve extends ErrorReportValve {

    private static final Logger log = LoggerFactory.getLogger(JsonErrorReportValve.class);

    private final JsonMapper json;

    /** Installed on Tomcat's host by {@code platform.web.WebConfiguration}. */
    public JsonErrorReportValve(JsonMapper json) {
        this.json = json;
    }

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        // the same guards as Tomcat's: only errors, only once, only when nothing was written yet
        if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) return;
        AtomicBoolean ioAllowed = new AtomicBoolean(false);
        response.getCoyoteResponse().action(ActionCode.IS_IO_ALLOWED, ioAllowed);
        if (!ioAllowed.get()) return;
        ErrorCode code = ErrorCode.forStatus(status);
        String id = RequestIds.current(request);
        try {
            response.setHeader(RequestIds.HEADER, id);
            response.setContentType("application/json");
            response.setCharacterEncoding("UTF-8");
            Writer writer = response.getReporter();
            if (writer != null) {
                writer.write(json.writeValueAsString(ErrorBody.of(code, message(status, code), List.of(), id)));
                response.finishResponse();
            }
        } catch (IOException | IllegalStateException e) {
            log.debug("Could not write the error body for a refused request", e);
        }
    }

    static String message(int status, ErrorCode code) {
        return switch (status) {
            case 400 -> "Malformed request: the request line, the path (no %00, every % followed by two hex digits)"
                    + " or a header could not be read, or the header section is too large";
            case 505 -> "HTTP version not supported; use HTTP/1.1 or HTTP/2";
            case 501 -> "Not implemented: the request uses a method or transfer coding this server does not support";
            default -> code == ErrorCode.INTERNAL_ERROR
                    ? "Internal error; quote the request id when reporting it"
                    : "Request refused by the HTTP server (" + status + ")";
        };
    }
}
