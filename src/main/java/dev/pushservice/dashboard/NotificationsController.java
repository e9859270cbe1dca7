package dev.pushservice.dashboard;

import dev.pushservice.apps.Tenants;
import dev.pushservice.members.MemberRole;
import dev.pushservice.notifications.NotificationPages;
import dev.pushservice.notifications.NotificationViews;
import dev.pushservice.notifications.NotificationView;
import dev.pushservice.notifications.PreviewView;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentView;
import dev.pushservice.templates.TemplateService;
import dev.pushservice.templates.TemplateView;
import jakarta.servlet.http.HttpServletResponse;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.util.MultiValueMap;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's notifications: the list, compose (with the live audience estimate and the per-platform
 * preview as htmx fragments), the report page, cancel, and one recipient's timeline. The compose form
 * becomes the JSON body {@code POST /v1/notifications} takes ({@link #body}) and goes through the same
 * reading and creation code ({@link NotificationPages}), so the page can accept nothing the API would
 * refuse, and refuses with the API's messages.
 */
@Controller
class NotificationsController {

    static final int PAGE_SIZE = 25;
    /** Visible ASCII, as the API's Idempotency-Key. */
    private static final Pattern KEY = Pattern.compile("[\\x21-\\x7E]{1,255}");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final DashboardAccess access;
    private final NotificationViews notifications;
    private final NotificationPages pages;
    private final SegmentService segments;
    private final TemplateService templates;

    NotificationsController(DashboardAccess access, NotificationViews notifications, NotificationPages pages,
                            SegmentService segments, TemplateService templates) {
        this.access = access;
        this.notifications = notifications;
        this.pages = pages;
        this.segments = segments;
        this.templates = templates;
    }

    private static String base(Tenants.App app) {
        return "/dashboard/apps/" + app.id() + "/notifications";
    }

    @GetMapping("/dashboard/apps/{appId}/notifications")
    String list(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                @RequestParam(name = "page", required = false) String page, Model model) {
        Tenants.App app = access.app(me, appId);
        PageRequest request = new PageRequest(pageNumber(page), PAGE_SIZE);
        Page<NotificationView> found = notifications.list(app.id(), request);
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("notifications", found.data());
        model.addAttribute("page", request.page());
        model.addAttribute("hasMore", found.pagination().has_more());
        return "notifications";
    }

    private static int pageNumber(String raw) {
        try {
            int n = raw == null ? 1 : Integer.parseInt(raw.strip());
            return Math.min(Math.max(n, 1), PageRequest.MAX_PAGE);
        } catch (NumberFormatException e) {
            return 1;
        }
    }

    // --- compose -----------------------------------------------------------------------------------

    @GetMapping("/dashboard/apps/{appId}/notifications/new")
    String compose(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        Map<String, String> form = new LinkedHashMap<>();
        form.put("idempotency_key", UUID.randomUUID().toString());
        form.put("target_type", "all");
        form.put("send", "now");
        return composePage(me, app, form, List.of(), List.of(), List.of(), model);
    }

    private String composePage(DashboardMember me, Tenants.App app, Map<String, String> form, List<String> included,
                               List<String> excluded, List<Violation> problems, Model model) {
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("form", form);
        model.addAttribute("included", included);
        model.addAttribute("excluded", excluded);
        model.addAttribute("problems", problems);
        model.addAttribute("segments", activeSegments(app));
        model.addAttribute("templates", activeTemplates(app));
        return "notification-new";
    }

    private List<SegmentView> activeSegments(Tenants.App app) {
        return segments.list(app.id(), new PageRequest(1, PageRequest.MAX_LIMIT)).data().stream()
                .filter(s -> "active".equals(s.status())).toList();
    }

    private List<TemplateView.Summary> activeTemplates(Tenants.App app) {
        return templates.list(app.id(), new PageRequest(1, PageRequest.MAX_LIMIT)).data().stream()
                .filter(t -> !"archived".equals(t.status())).toList();
    }

    /**
     * Creates the notification as {@code POST /v1/notifications} does, under the form's idempotency
     * key (made when the form was shown: sending the same form twice creates it once). A refusal
     * re-shows the form with the API's messages, 422, and stores nothing.
     */
    @PostMapping("/dashboard/apps/{appId}/notifications")
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam MultiValueMap<String, String> params, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.MEMBER);
        Map<String, String> form = form(params);
        String key = form.get("idempotency_key");
        if (key == null || !KEY.matcher(key).matches()) {
            key = UUID.randomUUID().toString();
            form.put("idempotency_key", key);
        }
        List<Violation> problems = new ArrayList<>();
        ObjectNode body = body(app, params, problems);
        if (problems.isEmpty()) {
            try {
                NotificationPages.Created created = pages.create(app.id(), key, body);
                return "redirect:" + base(app) + "/" + created.notificationId() + (created.replay() ? "" : "?created");
            } catch (InvalidInput e) {
                problems.addAll(e.violations().isEmpty() ? List.of(new Violation("notification", e.getMessage())) : e.violations());
                if (problems.stream().anyMatch(p -> p.field().equals("Idempotency-Key"))) {
                    // this form created a notification before, with other content (edited after going back):
                    // a new key, so sending it again creates a new notification, as the message says
                    problems.removeIf(p -> p.field().equals("Idempotency-Key"));
                    problems.add(new Violation("form", "this form was sent before with other content and created a notification then;"
                            + " send it again to create a new one"));
                    form.put("idempotency_key", UUID.randomUUID().toString());
                }
            }
        } else {
            problems.addAll(pages.problems(app.id(), body));
        }
        response.setStatus(422);
        return composePage(me, app, form, list(params, "included_segment_ids"), list(params, "excluded_segment_ids"), problems, model);
    }

    /** The live audience estimate: the preview's audience count (the fan-out's selection), title and body not needed. */
    @PostMapping("/dashboard/apps/{appId}/notifications/new/estimate")
    String estimate(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                    @RequestParam MultiValueMap<String, String> params, Model model) {
        Tenants.App app = access.app(me, appId);
        List<Violation> problems = new ArrayList<>();
        ObjectNode full = body(app, params, problems);
        // only the audience matters here: the rest is left out, so an unfinished message still gets its estimate
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        for (String field : List.of("target", "included_segment_ids", "excluded_segment_ids")) {
            if (full.has(field)) body.set(field, full.get(field));
        }
        body.put("title", "estimate");
        body.put("body", "estimate");
        problems.removeIf(p -> !p.field().startsWith("target"));
        if (problems.isEmpty()) {
            try {
                model.addAttribute("audience", pages.preview(app.id(), body).audience());
            } catch (InvalidInput e) {
                problems.addAll(e.violations());
            }
        }
        model.addAttribute("problems", problems);
        return "notification-fragments :: estimate";
    }

    /** The per-platform preview: what a sample recipient of each platform would be sent (the API's preview). */
    @PostMapping("/dashboard/apps/{appId}/notifications/new/preview")
    String preview(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                   @RequestParam MultiValueMap<String, String> params, Model model) {
        Tenants.App app = access.app(me, appId);
        List<Violation> problems = new ArrayList<>();
        ObjectNode body = body(app, params, problems);
        if (problems.isEmpty()) {
            try {
                PreviewView preview = pages.preview(app.id(), body);
                model.addAttribute("preview", preview);
                model.addAttribute("cards", preview.samples().stream().map(NotificationsController::card).toList());
            } catch (InvalidInput e) {
                problems.addAll(e.violations());
            }
        }
        model.addAttribute("problems", problems);
        return "notification-fragments :: preview";
    }

    /**
     * A sample as a person would see it, read from the provider request the preview built: APNs
     * {@code aps.alert}, FCM {@code message.notification}, Web Push the JSON the browser decrypts.
     */
    record Card(String platform, String title, String body, String localization, boolean inAudience, String rejected,
                String request) {
    }

    static Card card(PreviewView.Sample s) {
        String title = null;
        String text = null;
        String request = null;
        if (s.request() != null) {
            JsonNode b = s.request().body();
            JsonNode shown = switch (s.platform()) {
                case "ios" -> b.path("aps").path("alert");
                case "android" -> b.path("message").path("notification");
                default -> b;
            };
            title = shown.path("title").isString() ? shown.path("title").stringValue() : null;
            text = shown.path("body").isString() ? shown.path("body").stringValue() : null;
            ObjectNode whole = JsonNodeFactory.instance.objectNode();
            ObjectNode headers = whole.putObject("headers");
            s.request().headers().forEach(headers::put);
            whole.set("body", b);
            request = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(whole);
        }
        String rejected = s.rejected() == null ? null : s.rejected().reason() + (s.rejected().detail() == null ? "" : ": " + s.rejected().detail());
        return new Card(s.platform(), title, text, s.localization(), s.inAudience(), rejected, request);
    }

    private static Map<String, String> form(MultiValueMap<String, String> params) {
        Map<String, String> form = new LinkedHashMap<>();
        params.forEach((k, v) -> {
            if (!k.equals("_csrf") && !v.isEmpty()) form.put(k, v.getFirst());
        });
        return form;
    }

    private static List<String> list(MultiValueMap<String, String> params, String name) {
        return params.getOrDefault(name, List.of()).stream().filter(v -> v != null && !v.isBlank()).map(String::strip).toList();
    }

    private static String text(MultiValueMap<String, String> params, String name) {
        String v = params.getFirst(name);
        return v == null || v.isBlank() ? null : v;
    }

    /**
     * The form as the JSON body of {@code POST /v1/notifications}: an empty field is left out (the
     * API's default applies), every value goes as typed, for the API's reading code to judge. What
     * only a form can get wrong (data that is not JSON, a send time that is not a time) is added to
     * {@code problems} under the API's field name.
     */
    static ObjectNode body(Tenants.App app, MultiValueMap<String, String> params, List<Violation> problems) {
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        for (String field : List.of("name", "title", "body", "template_id", "click_url", "image_url", "priority",
                "interruption_level", "local_delivery_time")) {
            String v = text(params, field);
            if (v != null) body.put(field, field.equals("title") || field.equals("body") || field.equals("name") ? v : v.strip());
        }
        String type = text(params, "target_type");
        ObjectNode target = body.putObject("target");
        target.put("type", type == null ? "all" : type.strip());
        switch (type == null ? "all" : type.strip()) {
            case "segment" -> putStripped(target, "segment_id", text(params, "target_segment_id"));
            case "user" -> putStripped(target, "external_user_id", text(params, "target_external_user_id"));
            case "device" -> putStripped(target, "device_id", text(params, "target_device_id"));
            case "tag" -> {
                putStripped(target, "key", text(params, "target_tag_key"));
                String value = text(params, "target_tag_value");
                if (value != null) target.put("value", value);
            }
            default -> {
            }
        }
        for (String field : List.of("included_segment_ids", "excluded_segment_ids")) {
            List<String> ids = list(params, field);
            if (!ids.isEmpty()) {
                ArrayNode array = body.putArray(field);
                ids.forEach(array::add);
            }
        }
        String data = text(params, "data");
        if (data != null) {
            try {
                JsonNode parsed = JSON.readTree(data);
                if (parsed == null || !parsed.isObject()) problems.add(new Violation("data", "must be a JSON object, such as {\"order\": \"A-1\"}"));
                else body.set("data", parsed);
            } catch (JacksonException e) {
                problems.add(new Violation("data", "is not valid JSON: write an object, such as {\"order\": \"A-1\"}"));
            }
        }
        if ("true".equals(text(params, "frequency_cap_override"))) body.put("frequency_cap_override", true);
        if ("at".equals(text(params, "send"))) {
            String at = text(params, "send_at");
            if (at == null) {
                problems.add(new Violation("scheduled_at", "is required to send at a time: choose the date and time"));
            } else {
                try {
                    body.put("scheduled_at", LocalDateTime.parse(at.strip()).atZone(ZoneId.of(app.timezone())).toOffsetDateTime().toString());
                } catch (DateTimeParseException e) {
                    problems.add(new Violation("scheduled_at", "must be a date and time, such as 2030-01-31T09:00"));
                }
            }
        }
        return body;
    }

    private static void putStripped(ObjectNode node, String field, String value) {
        if (value != null) node.put(field, value.strip());
    }

    // --- report, cancel, recipient -----------------------------------------------------------------

    private NotificationView notification(Tenants.App app, String rawId) {
        UUID id = Uuids.parse(rawId);
        if (id == null) throw new NotFound("Notification");
        return pages.get(app.id(), id);
    }

    @GetMapping("/dashboard/apps/{appId}/notifications/{id}")
    String report(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String id, Model model) {
        Tenants.App app = access.app(me, appId);
        NotificationView n = notification(app, id);
        NotificationPages.Report report = pages.report(app.id(), n);
        ObjectNode chart = JsonNodeFactory.instance.objectNode();
        ObjectNode accepted = chart.putObject("accepted");
        accepted.put("bucket", report.bucketSeconds());
        ArrayNode ax = accepted.putArray("x");
        ArrayNode ay = accepted.putArray("y");
        report.acceptedTimeline().forEach(p -> {
            ax.add((long) p[0]);
            ay.add(p[1]);
        });
        ObjectNode opens = chart.putObject("opens");
        ArrayNode ox = opens.putArray("x");
        ArrayNode opened = opens.putArray("opened");
        ArrayNode clicked = opens.putArray("clicked");
        report.opensTimeline().forEach(p -> {
            ox.add(p[0]);
            opened.add(p[1]);
            clicked.add(p[2]);
        });
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("n", n);
        model.addAttribute("report", report);
        model.addAttribute("chart", chart.toString());
        model.addAttribute("cancellable", List.of("draft", "queued", "processing").contains(n.status()));
        return "notification";
    }

    /** Cancels as {@code POST /v1/notifications/{id}/cancel} does; a terminal notification is a 422 page. */
    @PostMapping("/dashboard/apps/{appId}/notifications/{id}/cancel")
    String cancel(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String id) {
        Tenants.App app = access.app(me, appId);
        NotificationView n = notification(app, id);
        access.require(me, MemberRole.MEMBER);
        pages.cancel(app.id(), n.notificationId());
        return "redirect:" + base(app) + "/" + n.notificationId() + "?cancelled";
    }

    @GetMapping("/dashboard/apps/{appId}/notifications/{id}/recipients")
    String recipient(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String id,
                     @RequestParam(name = "device", required = false) String device,
                     @RequestParam(name = "user", required = false) String user, Model model) {
        Tenants.App app = access.app(me, appId);
        NotificationView n = notification(app, id);
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("n", n);
        model.addAttribute("device", device == null ? "" : device);
        model.addAttribute("user", user == null ? "" : user);
        boolean asked = (device != null && !device.isBlank()) || (user != null && !user.isBlank());
        if (asked) {
            UUID deviceId = null;
            if (device != null && !device.isBlank()) {
                deviceId = Uuids.parse(device.strip());
                if (deviceId == null) throw InvalidInput.of("device", "must be a device id (a UUID)");
            }
            model.addAttribute("timeline", pages.recipient(app.id(), n.notificationId(), deviceId, deviceId == null ? user.strip() : null));
        }
        return "notification-recipient";
    }
}
