package dev.pushservice.dashboard;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.members.MemberRole;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.json.Uuids;
import jakarta.servlet.http.HttpServletResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.UUID;
import org.springframework.security.core.annotation.AuthenticationPrincipal;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * An app's API keys: the list (hints only), and for admins create, revoke and rotate through
 * {@link TenantService}, the code the admin CLI uses (same defaults, scopes rule, rotation and audit
 * entries). A raw key exists only in the response that created it: it is put in that page and
 * nowhere else (not in the session, a redirect or a log line), and the page is {@code no-store}.
 */
@Controller
class ApiKeysController {

    /** How long a rotated key may keep working, as the page offers it (the CLI's {@code --grace}). */
    static final Map<String, Duration> GRACES = ordered("none", Duration.ZERO, "1h", Duration.ofHours(1),
            "24h", Duration.ofHours(24), "7d", Duration.ofDays(7));

    /** Lifetimes a new key may be given on the page (the CLI's {@code --expires-in}); "never" by default. */
    static final Map<String, Duration> LIFETIMES = ordered("never", Duration.ZERO, "30d", Duration.ofDays(30),
            "90d", Duration.ofDays(90), "365d", Duration.ofDays(365));

    private final TenantService tenants;
    private final DashboardAccess access;
    private final Clock clock;

    ApiKeysController(TenantService tenants, DashboardAccess access, Clock clock) {
        this.tenants = tenants;
        this.access = access;
        this.clock = clock;
    }

    @GetMapping("/dashboard/apps/{appId}/keys")
    String keys(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, Model model) {
        return page(me, access.app(me, appId), model);
    }

    /** Issues a key and shows it in this response only. */
    @PostMapping("/dashboard/apps/{appId}/keys")
    String create(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId,
                  @RequestParam(name = "kind", required = false) String kind,
                  @RequestParam(name = "name", required = false) String name,
                  @RequestParam(name = "scopes", required = false) List<String> scopes,
                  @RequestParam(name = "expires", required = false) String expires,
                  Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        KeyKind chosen = "public".equals(kind) ? KeyKind.PUBLIC : "server".equals(kind) ? KeyKind.SERVER : null;
        Set<Scope> asked = EnumSet.noneOf(Scope.class);
        String problem = chosen == null ? "Kind: choose server or public" : null;
        for (String s : scopes == null ? List.<String>of() : scopes) {
            Scope scope = Scope.fromValue(s).orElse(null);
            if (scope == null) problem = "Scopes: '" + s + "' is not a scope";
            else asked.add(scope);
        }
        Duration lifetime = LIFETIMES.get(expires == null || expires.isBlank() ? "never" : expires);
        if (lifetime == null) problem = "Expiry: choose one of " + String.join(", ", LIFETIMES.keySet());
        if (problem == null) {
            try {
                Instant expiresAt = lifetime.isZero() ? null : clock.instant().plus(lifetime);
                Tenants.IssuedKey issued = tenants.issueKey(app.id(), chosen, name, asked, expiresAt);
                model.addAttribute("issued", issued);
                return page(me, app, model);
            } catch (IllegalArgumentException e) {
                problem = e.getMessage();
            }
        }
        response.setStatus(422);
        model.addAttribute("problem", problem);
        model.addAttribute("formName", name);
        return page(me, app, model);
    }

    /** Revokes a key at once (requests with it get 401 from now on). */
    @PostMapping("/dashboard/apps/{appId}/keys/{keyId}/revoke")
    String revoke(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String keyId) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        Tenants.Key key = key(app, keyId);
        tenants.revokeKey(key.id());
        return "redirect:/dashboard/apps/" + app.id() + "/keys?revoked=" + key.id();
    }

    /**
     * Issues a replacement (same kind, name, scopes and expiry) shown in this response only; the old
     * key is revoked at once, or keeps working for the chosen grace (the CLI's {@code key rotate}).
     */
    @PostMapping("/dashboard/apps/{appId}/keys/{keyId}/rotate")
    String rotate(@AuthenticationPrincipal DashboardMember me, @PathVariable String appId, @PathVariable String keyId,
                  @RequestParam(name = "grace", required = false) String grace, Model model, HttpServletResponse response) {
        Tenants.App app = access.app(me, appId);
        access.require(me, MemberRole.ADMIN);
        Tenants.Key key = key(app, keyId);
        Duration wait = GRACES.get(grace == null || grace.isBlank() ? "none" : grace);
        if (wait == null) throw InvalidInput.of("grace", "choose one of " + String.join(", ", GRACES.keySet()));
        try {
            Tenants.IssuedKey fresh = tenants.rotateKey(key.id(), wait);
            model.addAttribute("issued", fresh);
            Tenants.Key replaced = tenants.key(key.id());
            model.addAttribute("replaced", replaced);
            model.addAttribute("replacedUntil", DashboardFormat.minute(replaced.expiresAt()));
            return page(me, app, model);
        } catch (IllegalArgumentException e) {
            response.setStatus(409);
            model.addAttribute("problem", e.getMessage());
            return page(me, app, model);
        }
    }

    private Tenants.Key key(Tenants.App app, String rawId) {
        UUID id = Uuids.parse(rawId);
        if (id == null) throw new NotFound("Key");
        try {
            Tenants.Key key = tenants.key(id);
            if (!key.appId().equals(app.id())) throw new NotFound("Key");
            return key;
        } catch (NoSuchElementException e) {
            throw new NotFound("Key");
        }
    }

    private String page(DashboardMember me, Tenants.App app, Model model) {
        Instant now = clock.instant();
        model.addAttribute("me", me);
        model.addAttribute("app", app);
        model.addAttribute("now", now);
        model.addAttribute("keys", tenants.keys(app.id()).stream().map(k -> KeyRow.of(k, now)).toList());
        model.addAttribute("scopes", Scope.values());
        model.addAttribute("graces", GRACES.keySet());
        model.addAttribute("lifetimes", LIFETIMES.keySet());
        model.addAttribute("mayChange", me.role().includes(MemberRole.ADMIN));
        return "keys";
    }

    private static Map<String, Duration> ordered(Object... pairs) {
        Map<String, Duration> map = new java.util.LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) map.put((String) pairs[i], (Duration) pairs[i + 1]);
        return java.util.Collections.unmodifiableMap(map);
    }
}
