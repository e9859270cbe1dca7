package dev.pushservice.dashboard;

import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.pagination.PageRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Component;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ModelAttribute;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * What the configuration pages share: a form turned into the JSON body the API takes (so the
 * features' own body rules read it, {@code *Input} classes), a JSON field parsed with the problem
 * named, a refused form's messages, paging parameters, and times as the pages show them ({@code fmt}).
 */
@Component
final class Forms {

    static final DateTimeFormatter AT = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);
    /** Rows per page of the configuration lists. */
    static final int PAGE = 25;

    private final JsonMapper json;

    Forms(JsonMapper json) {
        this.json = json;
    }

    static ObjectNode object() {
        return JsonNodeFactory.instance.objectNode();
    }

    /** Puts {@code form[field]} as a string when it is not blank. */
    static void text(ObjectNode body, Map<String, String> form, String field) {
        String value = form.get(field);
        if (value != null && !value.isBlank()) body.put(field, value.strip());
    }

    /**
     * {@code raw} parsed as JSON; blank is null. Not JSON: an {@link InvalidInput} naming {@code field},
     * so the page says what is wrong where.
     */
    JsonNode parse(String field, String raw) {
        if (raw == null || raw.isBlank()) return null;
        try {
            return json.readTree(raw);
        } catch (JacksonException e) {
            String why = e.getOriginalMessage();
            if (why != null && why.length() > 200) why = why.substring(0, 200) + "…";
            throw InvalidInput.of(field, "is not valid JSON (" + why + ")");
        }
    }

    String pretty(JsonNode node) {
        return node == null ? "" : json.writerWithDefaultPrettyPrinter().writeValueAsString(node);
    }

    /** The messages of a refused body, one per problem ("field: message"). */
    static List<String> messages(InvalidInput e) {
        if (e.violations().isEmpty()) return List.of(e.getMessage());
        return e.violations().stream().map(Forms::message).toList();
    }

    private static String message(Violation v) {
        return v.field() == null || v.field().isEmpty() ? v.message() : v.field() + ": " + v.message();
    }

    /** A refused form: 422 and its messages on the page. */
    static void refused(InvalidInput e, Model model, HttpServletResponse response) {
        response.setStatus(422);
        model.addAttribute("errors", messages(e));
    }

    static PageRequest page(String page) {
        return PageRequest.parse(page, String.valueOf(PAGE));
    }

    static boolean canChange(DashboardMember me) {
        return me.role().includes(MemberRole.ADMIN);
    }

    /** A resource's id from the path; a malformed one is "not found", as an unknown one is. */
    static java.util.UUID id(String raw, String what) {
        java.util.UUID id = dev.pushservice.platform.json.Uuids.parse(raw);
        if (id == null) throw new dev.pushservice.platform.domain.NotFound(what);
        return id;
    }

    /** The attributes every page of an app's configuration section reads (who, which app, may they change it); returns {@code view}. */
    static String appPage(DashboardMember me, dev.pushservice.apps.Tenants.App app, Model model, String view) {
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("canChange", canChange(me));
        return view;
    }

    /** Model attributes of every dashboard page: {@code fmt} formats times. */
    @ControllerAdvice(basePackageClasses = Forms.class)
    static class Attributes {
        @ModelAttribute("fmt")
        Format fmt() {
            return Format.INSTANCE;
        }
    }

    /** Times and bytes as the pages show them. */
    public static final class Format {
        static final Format INSTANCE = new Format();

        public String at(Instant at) {
            return at == null ? "—" : AT.format(at);
        }

        public String bytes(Long bytes) {
            if (bytes == null) return "—";
            if (bytes < 1024) return bytes + " B";
            if (bytes < 1024 * 1024) return String.format("%.1f KiB", bytes / 1024.0);
            return String.format("%.1f MiB", bytes / (1024.0 * 1024));
        }
    }
}
