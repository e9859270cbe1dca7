package dev.pushservice.dashboard;

import dev.pushservice.analytics.AnalyticsService;
import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.devices.DeviceCounts;
import dev.pushservice.devices.DeviceService;
import dev.pushservice.notifications.NotificationViews;
import dev.pushservice.notifications.NotificationView;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.List;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;

/** The sign-in page and the overview pages. Every app shown is checked against the member's organisation. */
@Controller
class DashboardController {

    /** How many of an app's latest notifications its overview lists. */
    static final int RECENT_NOTIFICATIONS = 10;
    /** Days of the overview's events chart, today included. */
    static final int CHART_DAYS = 30;
    /** The event types the overview's chart draws, one line each. */
    static final List<String> CHART_EVENTS = List.of("received", "confirmed_delivered", "opened", "clicked", "dismissed");

    private final TenantService tenants;
    private final DashboardAccess access;
    private final DeviceService devices;
    private final NotificationViews notifications;
    private final AnalyticsService analytics;

    DashboardController(TenantService tenants, DashboardAccess access, DeviceService devices, NotificationViews notifications,
                        AnalyticsService analytics) {
        this.analytics = analytics;
        this.tenants = tenants;
        this.access = access;
        this.devices = devices;
        this.notifications = notifications;
    }

    @GetMapping(DashboardSecurity.SIGN_IN)
    String signIn() {
        return "sign-in";
    }

    /** The organisation's apps. */
    @GetMapping("/dashboard")
    String apps(@AuthenticationPrincipal DashboardMember me, Model model) {
        model.addAttribute("me", me);
        model.addAttribute("organisation", tenants.organisation(me.orgId()));
        model.addAttribute("apps", tenants.apps(me.orgId()));
        return "apps";
    }

    /** One app: devices by platform and state, the latest notifications with their delivery counts. */
    @GetMapping("/dashboard/apps/{appId}")
    String app(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        Tenants.App app = access.app(me, appId);
        List<DeviceCounts> counts = devices.countsByPlatform(app.id());
        List<NotificationView> recent = notifications.list(app.id(), new PageRequest(1, RECENT_NOTIFICATIONS)).data();
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("devices", counts);
        model.addAttribute("subscribed", counts.stream().mapToLong(DeviceCounts::subscribed).sum());
        model.addAttribute("invalid", counts.stream().mapToLong(DeviceCounts::invalid).sum());
        model.addAttribute("notifications", recent);
        model.addAttribute("dailyEvents", dailyEvents(analytics.lastDays(app.id(), CHART_DAYS)));
        return "app";
    }

    /**
     * The daily counters of {@code GET /v1/analytics} (events per day in the app's time zone) as the
     * chart's JSON: {@code {"days": ["2026-01-31", …], "series": {"opened": [..], …}, "total": n}}.
     */
    static String dailyEvents(AnalyticsService.Analytics a) {
        tools.jackson.databind.node.ObjectNode chart = tools.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        tools.jackson.databind.node.ArrayNode days = chart.putArray("days");
        tools.jackson.databind.node.ObjectNode series = chart.putObject("series");
        long total = 0;
        for (String type : CHART_EVENTS) series.putArray(type);
        for (AnalyticsService.Day d : a.daily()) {
            days.add(d.date().toString());
            for (String type : CHART_EVENTS) {
                long n = d.events().getOrDefault(type, 0L);
                ((tools.jackson.databind.node.ArrayNode) series.get(type)).add(n);
                total += n;
            }
        }
        chart.put("total", total);
        chart.put("timezone", a.timezone());
        return chart.toString();
    }
}
