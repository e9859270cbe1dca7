package dev.pushservice.platform.error;

import dev.pushservice.platform.requestid.RequestIds;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

/** Writes an error straight to the servlet response, for filters that answer before MVC runs. */
@Component
public class ErrorWriter {

    private final JsonMapper json;

    ErrorWriter(JsonMapper json) {
        this.json = json;
    }

    public void write(HttpServletRequest request, HttpServletResponse response, ApiException e) throws IOException {
        if (!response.isCommitted()) e.headers().forEach(response::setHeader);
        write(request, response, e.code(), e.getMessage(), e.details());
    }

    public void write(HttpServletRequest request, HttpServletResponse response, ErrorCode code, String message,
                      List<ErrorDetail> details) throws IOException {
        if (response.isCommitted()) return;
        response.setStatus(code.status().value());
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        response.setCharacterEncoding("UTF-8");
        byte[] body = json.writeValueAsBytes(ErrorBody.of(code, message, details, RequestIds.current(request)));
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }
}
