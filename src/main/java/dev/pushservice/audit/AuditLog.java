package dev.pushservice.audit;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.requestid.RequestIds;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Clock;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.springframework.context.ApplicationContext;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.context.WebApplicationContext;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Appends audit entries (see the package documentation). Call {@link #record} inside the
 * transaction of the change ({@link Propagation#MANDATORY}: without one it throws, so an entry is
 * never written apart from its change). Thread-safe.
 */
@Component
public class AuditLog {

    /**
     * The request attribute (a {@link UUID}) naming the dashboard member who makes the changes of
     * this request; the dashboard sets it once it has checked the member's stored role.
     */
    public static final String MEMBER_ATTRIBUTE = AuditLog.class.getName() + ".member";

    /**
     * Who made a change: {@code api_key} (with the key's id and kind), {@code member} (a dashboard
     * member, with their id), {@code cli} or {@code system}.
     */
    public record Actor(String type, UUID keyId, String keyKind, UUID memberId) {
        public static final Actor CLI = new Actor("cli", null, null, null);
        public static final Actor SYSTEM = new Actor("system", null, null, null);

        static Actor of(ApiPrincipal principal) {
            return new Actor("api_key", principal.keyId(), principal.kind().value(), null);
        }

        /** A dashboard member acting through a page. */
        public static Actor member(UUID memberId) {
            return new Actor("member", null, null, Objects.requireNonNull(memberId, "memberId"));
        }
    }

    /** One entry as the dashboard's audit page shows it. */
    public record Entry(long id, java.time.Instant occurredAt, String actor, UUID keyId, String keyKind, UUID memberId,
                        String action, String targetType, String targetId, String requestId, List<String> changedFields) {
    }

    /** Where a page of {@link #newest} starts: strictly older than this entry (null: the newest). */
    public record Cursor(java.time.Instant occurredAt, long id) {
    }

    /**
     * One entry of an organisation's log (membership changes), as the dashboard shows it.
     *
     * @param details non-secret values of the change (such as {@code role_from}, {@code role_to},
     *                {@code email}), by name
     */
    public record OrgEntry(long id, java.time.Instant occurredAt, String actor, UUID memberId, String action,
                           String targetType, String targetId, String requestId, List<String> changedFields,
                           java.util.Map<String, String> details) {
    }

    private final AuditRepository entries;
    private final Clock clock;
    private final boolean cli;

    AuditLog(AuditRepository entries, Clock clock, ApplicationContext context) {
        this.entries = entries;
        this.clock = clock;
        // the admin CLI runs the application without a web server; the service always has one
        this.cli = !(context instanceof WebApplicationContext);
    }

    /**
     * Appends one entry for the app {@code appId}: {@code action} (such as {@code segment.update})
     * on {@code targetType}/{@code targetId}, naming the fields that changed (names only, never values).
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public void record(UUID appId, String action, String targetType, Object targetId, Collection<String> changedFields) {
        Objects.requireNonNull(appId, "appId");
        HttpServletRequest request = currentRequest();
        Actor actor = actor(request);
        String requestId = request == null ? null : RequestIds.current(request);
        entries.insert(appId, clock.instant(), actor, action, targetType, String.valueOf(targetId), requestId,
                changedFields == null ? List.of() : changedFields.stream().distinct().sorted().toList());
    }

    /**
     * Appends one entry made by {@code actor}, who the caller knows (a dashboard member staging a
     * migration), with the request's id when there is a request.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public void record(Actor actor, UUID appId, String action, String targetType, Object targetId, Collection<String> changedFields) {
        Objects.requireNonNull(appId, "appId");
        HttpServletRequest request = currentRequest();
        String requestId = request == null ? null : RequestIds.current(request);
        entries.insert(appId, clock.instant(), actor, action, targetType, String.valueOf(targetId), requestId,
                changedFields == null ? List.of() : changedFields.stream().distinct().sorted().toList());
    }

    /** {@link #record(UUID, String, String, Object, Collection)} with no changed fields to name. */
    @Transactional(propagation = Propagation.MANDATORY)
    public void record(UUID appId, String action, String targetType, Object targetId) {
        record(appId, action, targetType, targetId, List.of());
    }

    /**
     * Appends one entry to the organisation {@code orgId}'s log (membership changes are the
     * organisation's, not an app's): made by {@code actor}, or when null by whoever the current
     * request or process is (as {@link #record(UUID, String, String, Object, Collection)} finds it).
     * {@code details} are values shown with the entry; the caller passes only non-secret ones (a
     * role, an address), never a password, hash or link token.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public void recordForOrganisation(Actor actor, UUID orgId, String action, String targetType, Object targetId,
                                      Collection<String> changedFields, java.util.Map<String, String> details) {
        Objects.requireNonNull(orgId, "orgId");
        HttpServletRequest request = currentRequest();
        Actor who = actor != null ? actor : actor(request);
        if (who.keyId() != null) throw new IllegalArgumentException("API keys do not change an organisation's members");
        String requestId = request == null ? null : RequestIds.current(request);
        entries.insertForOrganisation(orgId, clock.instant(), who, action, targetType, String.valueOf(targetId), requestId,
                changedFields == null ? List.of() : changedFields.stream().distinct().sorted().toList(),
                details == null ? java.util.Map.of() : details);
    }

    /**
     * Up to {@code limit} of the organisation's entries, newest first, older than {@code before}
     * (null: from the newest). Keyset paging on an index.
     */
    @Transactional(readOnly = true)
    public List<OrgEntry> newestOfOrganisation(UUID orgId, Cursor before, int limit) {
        return entries.newestOfOrganisation(orgId, before, limit);
    }

    /**
     * Up to {@code limit} of the app's entries, newest first, older than {@code before} (null: from
     * the newest), of one {@code action} when given. Keyset paging on an index, so every page costs
     * the same however deep.
     */
    @Transactional(readOnly = true)
    public List<Entry> newest(UUID appId, String action, Cursor before, int limit) {
        return entries.newest(appId, action, before, limit);
    }

    private Actor actor(HttpServletRequest request) {
        if (request != null && request.getAttribute(ApiPrincipal.REQUEST_ATTRIBUTE) instanceof ApiPrincipal p) {
            return Actor.of(p);
        }
        if (request != null && request.getAttribute(MEMBER_ATTRIBUTE) instanceof UUID member) {
            return Actor.member(member);
        }
        return cli ? Actor.CLI : Actor.SYSTEM;
    }

    private static HttpServletRequest currentRequest() {
        return RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes a ? a.getRequest() : null;
    }
}
