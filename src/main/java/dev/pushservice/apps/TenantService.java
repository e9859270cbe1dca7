package dev.pushservice.apps;

import dev.pushservice.platform.auth.ApiKeys;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.TimeZones;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import dev.pushservice.audit.AuditLog;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.UUID;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Organisations, apps and API keys: creation, listing, rotation and revocation. Used by the admin
 * CLI, first-start bootstrap and tests. Raw keys are returned once, in {@link Tenants.IssuedKey};
 * only their SHA-256 is stored. Bad input is an {@link IllegalArgumentException} with a message
 * fit for a person; an unknown id is a {@link NoSuchElementException}.
 */
@Service
public class TenantService {

    private final TenantRepository repository;
    private final Clock clock;
    private final ApplicationEventPublisher events;
    private final AuditLog audit;

    TenantService(TenantRepository repository, Clock clock, ApplicationEventPublisher events, AuditLog audit) {
        this.repository = repository;
        this.clock = clock;
        this.events = events;
        this.audit = audit;
    }

    public Tenants.Organisation createOrganisation(String name) {
        return repository.insertOrganisation(requireName(name, "organisation"));
    }

    public List<Tenants.Organisation> organisations() {
        return repository.organisations();
    }

    public Tenants.Organisation organisation(UUID orgId) {
        return repository.organisation(orgId).orElseThrow(() -> new NoSuchElementException("No organisation " + orgId));
    }

    /** Creates the app and, in the same transaction, what every app owns (see {@link AppCreated}). */
    @Transactional
    public Tenants.App createApp(UUID orgId, String name, String timezone) {
        organisation(orgId);
        String zone = timezone == null || timezone.isBlank() ? "UTC" : timezone;
        if (!TimeZones.isValid(zone)) {
            throw new IllegalArgumentException("Unknown time zone '" + zone + "'; use an IANA name such as Europe/Berlin");
        }
        return insertApp(orgId, requireName(name, "app"), zone);
    }

    private Tenants.App insertApp(UUID orgId, String name, String zone) {
        Tenants.App app = repository.insertApp(orgId, name, zone);
        events.publishEvent(new AppCreated(app.id()));
        return app;
    }

    public List<Tenants.App> apps(UUID orgIdOrNull) {
        return repository.apps(orgIdOrNull);
    }

    public Tenants.App app(UUID appId) {
        return repository.app(appId).orElseThrow(() -> new NoSuchElementException("No app " + appId));
    }

    /**
     * Issues a key. A public key always gets {@code devices:write} and {@code events:write},
     * whatever {@code scopes} asks; a server key with no scopes gets all of them. A name, when
     * given, follows the rule for names (as the admin CLI's {@code --name}; the dashboard relies on it).
     */
    @Transactional
    public Tenants.IssuedKey issueKey(UUID appId, KeyKind kind, String name, Set<Scope> scopes, Instant expiresAt) {
        app(appId);
        if (expiresAt != null && !expiresAt.isAfter(clock.instant())) {
            throw new IllegalArgumentException("Expiry must be in the future");
        }
        String raw = ApiKeys.generate(kind);
        Set<Scope> granted = kind.grantedScopes(scopes == null ? EnumSet.noneOf(Scope.class) : scopes);
        String label = name == null || name.isBlank() ? kind.value() + " key" : requireName(name, "key");
        Tenants.Key key = repository.insertKey(appId, kind, label, ApiKeys.hint(raw), ApiKeys.hash(raw), granted, expiresAt);
        audit.record(appId, "key.create", "api_key", key.id(),
                expiresAt == null ? List.of("kind", "name", "scopes") : List.of("kind", "name", "scopes", "expires_at"));
        return new Tenants.IssuedKey(key, raw);
    }

    public List<Tenants.Key> keys(UUID appId) {
        app(appId);
        return repository.keys(appId);
    }

    public Tenants.Key key(UUID keyId) {
        return repository.key(keyId).orElseThrow(() -> new NoSuchElementException("No key " + keyId));
    }

    /**
     * Issues a replacement with the same app, kind, name and scopes. With no grace the old key stops
     * working at once (revoked); with a grace it keeps working until then, so deployed clients can
     * move over.
     */
    @Transactional
    public Tenants.IssuedKey rotateKey(UUID keyId, Duration grace) {
        Tenants.Key old = key(keyId);
        if (!"active".equals(old.state(clock.instant()))) {
            throw new IllegalArgumentException("Key " + keyId + " is " + old.state(clock.instant()) + "; only an active key can be rotated");
        }
        Set<Scope> scopes = EnumSet.noneOf(Scope.class);
        old.scopes().forEach(s -> Scope.fromValue(s).ifPresent(scopes::add));
        KeyKind kind = KeyKind.valueOf(old.kind().toUpperCase(java.util.Locale.ROOT));
        Tenants.IssuedKey fresh = issueKey(old.appId(), kind, old.name(), scopes, old.expiresAt());
        if (grace == null || grace.isZero() || grace.isNegative()) {
            repository.revoke(keyId, fresh.key().id());
            audit.record(old.appId(), "key.rotate", "api_key", keyId, List.of("revoked_at", "replaced_by"));
        } else {
            repository.expireAt(keyId, clock.instant().plus(grace), fresh.key().id());
            audit.record(old.appId(), "key.rotate", "api_key", keyId, List.of("expires_at", "replaced_by"));
        }
        return fresh;
    }

    /** Revokes a key at once. Returns false when it was already revoked. */
    @Transactional
    public boolean revokeKey(UUID keyId) {
        Tenants.Key key = key(keyId);
        boolean changed = repository.revoke(keyId, null);
        if (changed) audit.record(key.appId(), "key.revoke", "api_key", keyId, List.of("revoked_at"));
        return changed;
    }

    /**
     * On an empty installation: one organisation, one app, a server key with every scope and a
     * public key. Runs at most once per database, even with several instances starting together.
     */
    @Transactional
    public java.util.Optional<BootstrapResult> bootstrapIfEmpty() {
        if (!repository.claimBootstrap()) return java.util.Optional.empty();
        if (!repository.organisations().isEmpty()) return java.util.Optional.empty();
        Tenants.Organisation org = repository.insertOrganisation("Default organisation");
        Tenants.App app = insertApp(org.id(), "Default app", "UTC");
        Tenants.IssuedKey server = issueKey(app.id(), KeyKind.SERVER, "bootstrap server key", EnumSet.allOf(Scope.class), null);
        Tenants.IssuedKey client = issueKey(app.id(), KeyKind.PUBLIC, "bootstrap public key", Set.of(), null);
        return java.util.Optional.of(new BootstrapResult(org, app, server, client));
    }

    public record BootstrapResult(Tenants.Organisation organisation, Tenants.App app,
                                  Tenants.IssuedKey serverKey, Tenants.IssuedKey publicKey) {
    }

    private static String requireName(String name, String what) {
        String problem = TextRules.textProblem(name, Limits.NAME);
        if (problem != null) throw new IllegalArgumentException("The " + what + " name " + problem);
        return name.strip();
    }
}
