package dev.pushservice.apps;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TimeZones;
import dev.pushservice.platform.rules.WallClockTimes;
import java.text.ParseException;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import dev.pushservice.audit.AuditLog;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * App settings: read, partial update, and the single values other features need on hot paths: the
 * parsed identity-verification keys and the app's time zone. Those are cached for
 * {@value #CACHE_SECONDS} s: a change made through this instance is visible at once, other
 * instances (and admin CLI runs) are seen within that time. Reading settings never writes.
 */
@Service
public class AppSettingsService {

    static final int CACHE_SECONDS = 5;
    private static final int MAX_KEYS = 10;
    /** The highest throttle: 100,000 sends a second is beyond what one app's providers take from us. */
    static final int MAX_THROTTLE_PER_MINUTE = 6_000_000;

    private final AppSettingsRepository repository;
    private final JsonMapper json;
    private final SettingsSection<AppSettings.ApnsView> apns;
    private final SettingsSection<AppSettings.FcmView> fcm;
    private final SettingsSection<AppSettings.WebPushView> webpush;
    private final List<SettingsSection<?>> sections;
    private final Cache<UUID, IdentityVerification> identity = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(CACHE_SECONDS)).maximumSize(10_000).build();
    private final Cache<UUID, ZoneId> zones = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(CACHE_SECONDS)).maximumSize(10_000).build();
    private final Cache<UUID, DeliveryControls> controls = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofSeconds(CACHE_SECONDS)).maximumSize(10_000).build();

    private final AuditLog audit;

    AppSettingsService(AppSettingsRepository repository, JsonMapper json, SettingsSection<AppSettings.ApnsView> apns,
                       SettingsSection<AppSettings.FcmView> fcm, SettingsSection<AppSettings.WebPushView> webpush,
                       AuditLog audit) {
        this.repository = repository;
        this.audit = audit;
        this.json = json;
        this.apns = apns;
        this.fcm = fcm;
        this.webpush = webpush;
        this.sections = List.of(apns, fcm, webpush);
    }

    public AppSettings read(UUID appId) {
        AppSettingsRepository.Row row = repository.find(appId);
        IdentityVerification iv = parseIdentity(row.settings().path("identity_verification"));
        List<Map<String, Object>> keys = iv.keys().stream().map(ECKey::toJSONObject).toList();
        DeliveryTiming timing = timing(row);
        DeliveryTiming.QuietHours q = timing.quietHours();
        return new AppSettings(row.name(), row.timezone(),
                new AppSettings.IdentityVerificationView(iv.required(), iv.issuer(), keys),
                apns.read(appId), fcm.read(appId), webpush.read(appId),
                NotificationDefaults.from(row.settings()), FrequencyCap.from(row.settings()),
                q == null ? null : new AppSettings.QuietHoursView(hhmm(q.start()), hhmm(q.end())),
                timing.throttlePerMinute());
    }

    /**
     * What new notifications of the app get where neither request nor template sets a value; cached,
     * at most {@value #CACHE_SECONDS} s stale after a change made elsewhere.
     */
    public NotificationDefaults notificationDefaults(UUID appId) {
        return controls(appId).defaults();
    }

    /**
     * The app's frequency cap, empty when it has none; cached like {@link #notificationDefaults}. Read
     * by delivery for every claimed chunk, so a cache hit costs no database work.
     */
    public Optional<FrequencyCap> frequencyCap(UUID appId) {
        return Optional.ofNullable(controls(appId).cap());
    }

    private DeliveryControls controls(UUID appId) {
        return controls.get(appId, id -> {
            JsonNode settings = repository.find(id).settings();
            return new DeliveryControls(NotificationDefaults.from(settings), FrequencyCap.from(settings));
        });
    }

    /** The parsed delivery-control settings of one app, cached together. */
    private record DeliveryControls(NotificationDefaults defaults, FrequencyCap cap) {
    }

    /**
     * The settings that decide when recipients become due (quiet hours, throttle, the default zone),
     * read fresh (one indexed read): the fan-out reads them once per run.
     */
    public DeliveryTiming deliveryTiming(UUID appId) {
        return timing(repository.find(appId));
    }

    private static DeliveryTiming timing(AppSettingsRepository.Row row) {
        JsonNode q = row.settings().path("quiet_hours");
        DeliveryTiming.QuietHours quiet = q.isObject()
                ? new DeliveryTiming.QuietHours(WallClockTimes.parse(q.path("start").stringValue()),
                        WallClockTimes.parse(q.path("end").stringValue()))
                : null;
        JsonNode t = row.settings().path("throttle_per_minute");
        return new DeliveryTiming(zone(row.timezone()), quiet, t.isIntegralNumber() ? t.intValue() : null);
    }

    private static String hhmm(LocalTime time) {
        return String.format("%02d:%02d", time.getHour(), time.getMinute());
    }

    public IdentityVerification identityVerification(UUID appId) {
        return identity.get(appId, id -> parseIdentity(repository.find(id).settings().path("identity_verification")));
    }

    /**
     * The app's time zone (for "today" in analytics, local-time segment rules), read alone and
     * cached; at most {@value #CACHE_SECONDS} s stale after a change made elsewhere.
     */
    public ZoneId timeZone(UUID appId) {
        return zones.get(appId, id -> zone(repository.timezone(id)));
    }

    private static ZoneId zone(String id) {
        try {
            return ZoneId.of(id);
        } catch (DateTimeException e) {
            return ZoneOffset.UTC; // never stored: every write checks the name
        }
    }

    /** Validates and applies a PATCH body; only supplied fields change. Throws 422 listing every problem. */
    @Transactional
    public AppSettings update(UUID appId, JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String name = in.value("name") != null ? in.requiredText("name", Limits.NAME) : null;
        if (in.has("name") && in.value("name") == null) in.reject("name", "must not be null");
        String timezone = in.string("timezone", Limits.TIMEZONE);
        if (in.has("timezone") && in.value("timezone") == null) in.reject("timezone", "must not be null");
        if (timezone != null && !TimeZones.isValid(timezone)) in.reject("timezone", TimeZones.RULE);
        ObjectNode settings = (ObjectNode) repository.lock(appId).settings().deepCopy();
        in.nested("identity_verification").ifPresent(iv -> updateIdentity(iv, settings));
        NotificationDefaults.update(in, settings);
        FrequencyCap.update(in, settings);
        updateTiming(in, settings);
        List<Runnable> changes = new ArrayList<>();
        for (SettingsSection<?> section : sections) {
            if (in.has(section.name())) changes.add(section.prepare(appId, in.raw().get(section.name()), in));
        }
        in.check();
        repository.update(appId, name == null ? null : name.strip(), timezone, settings);
        changes.forEach(Runnable::run);
        recordAudit(appId, in);
        forget(appId);
        // and again once committed: a read on another thread between the first forget and the commit
        // (delivery reads the frequency cap for every claimed chunk) caches the settings as they were
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    forget(appId);
                }
            });
        }
        return read(appId);
    }

    private void forget(UUID appId) {
        identity.invalidate(appId);
        zones.invalidate(appId);
        controls.invalidate(appId);
    }

    /**
     * Audit entries naming what the body supplied (never the values): provider credentials as
     * {@code credentials.update}, everything else as {@code settings.update}.
     */
    private void recordAudit(UUID appId, JsonInput in) {
        List<String> settingsFields = new ArrayList<>();
        List<String> credentialFields = new ArrayList<>();
        for (String field : List.of("name", "timezone", "quiet_hours", "throttle_per_minute")) if (in.has(field)) settingsFields.add(field);
        JsonNode identityBody = in.raw().get("identity_verification");
        if (identityBody != null && identityBody.isObject()) {
            identityBody.propertyNames().forEach(f -> settingsFields.add("identity_verification." + f));
        }
        for (String field : List.of(NotificationDefaults.FIELD, FrequencyCap.FIELD)) supplied(in, field, settingsFields);
        for (SettingsSection<?> section : sections) {
            supplied(in, section.name(), section == webpush ? settingsFields : credentialFields);
        }
        if (!settingsFields.isEmpty()) audit.record(appId, "settings.update", "app", appId, settingsFields);
        if (!credentialFields.isEmpty()) audit.record(appId, "credentials.update", "app", appId, credentialFields);
    }

    /** Adds {@code field}'s keys the body supplied ({@code field.key}), or {@code field} itself when not an object with keys. */
    private static void supplied(JsonInput in, String field, List<String> target) {
        JsonNode part = in.raw().get(field);
        if (part == null) return;
        if (part.isObject() && !part.isEmpty()) part.propertyNames().forEach(f -> target.add(field + "." + f));
        else target.add(field);
    }

    /** {@code quiet_hours} and {@code throttle_per_minute}: JSON null removes; a supplied quiet-hours object replaces the stored one whole. */
    private static void updateTiming(JsonInput in, ObjectNode settings) {
        if (in.has("quiet_hours")) {
            if (in.value("quiet_hours") == null) {
                settings.remove("quiet_hours");
            } else {
                in.nested("quiet_hours").ifPresent(q -> {
                    String start = q.requiredString("start", 5);
                    String end = q.requiredString("end", 5);
                    if (start != null && !WallClockTimes.isValid(start)) q.reject("start", WallClockTimes.RULE);
                    else if (end != null && !WallClockTimes.isValid(end)) q.reject("end", WallClockTimes.RULE);
                    else if (start != null && end != null && start.equals(end)) q.reject("end", "must differ from start");
                    else if (start != null && end != null) settings.putObject("quiet_hours").put("start", start).put("end", end);
                });
            }
        }
        if (in.has("throttle_per_minute")) {
            if (in.value("throttle_per_minute") == null) {
                settings.remove("throttle_per_minute");
            } else {
                Long perMinute = in.integer("throttle_per_minute", 1, MAX_THROTTLE_PER_MINUTE);
                if (perMinute != null) settings.put("throttle_per_minute", perMinute.intValue());
            }
        }
    }

    private void updateIdentity(JsonInput in, ObjectNode settings) {
        ObjectNode current = settings.has("identity_verification") && settings.get("identity_verification").isObject()
                ? (ObjectNode) settings.get("identity_verification") : settings.putObject("identity_verification");
        Boolean required = in.bool("required");
        if (required != null) current.put("required", required);
        if (in.has("issuer")) {
            String issuer = in.string("issuer", 255);
            if (in.value("issuer") == null) current.remove("issuer");
            else if (issuer != null && issuer.isBlank()) in.reject("issuer", "must not be empty");
            else if (issuer != null) current.put("issuer", issuer);
        }
        if (in.has("keys")) {
            JsonNode keys = in.value("keys");
            if (keys == null || !keys.isArray()) {
                in.reject("keys", "must be an array of EC P-256 public keys in JWK form");
            } else if (keys.size() > MAX_KEYS) {
                in.reject("keys", "must have at most " + MAX_KEYS + " keys");
            } else {
                Set<String> kids = new HashSet<>();
                for (int i = 0; i < keys.size(); i++) {
                    String problem = checkKey(keys.get(i), kids);
                    if (problem != null) in.reject("keys[" + i + "]", problem);
                }
                current.set("keys", keys);
            }
        }
        if (!in.hasErrors() && current.path("required").asBoolean(false)) {
            if (!current.path("issuer").isString()) in.reject("issuer", "is required when required is true");
            if (!current.path("keys").isArray() || current.get("keys").isEmpty()) {
                in.reject("keys", "at least one key is required when required is true");
            }
        }
    }

    private String checkKey(JsonNode node, Set<String> kids) {
        if (!node.isObject()) return "must be a JWK object";
        try {
            ECKey key = ECKey.parse(json.writeValueAsString(node));
            if (!Curve.P_256.equals(key.getCurve())) return "must be an EC key on curve P-256";
            if (key.isPrivate()) return "must be a public key only: never send the private part (\"d\")";
            if (key.getKeyID() == null || key.getKeyID().isBlank()) return "needs a \"kid\"";
            if (!kids.add(key.getKeyID())) return "duplicate kid " + key.getKeyID();
            return null;
        } catch (ParseException | RuntimeException e) {
            return "must be an EC P-256 public key in JWK form (kty EC, crv P-256, x, y, kid)";
        }
    }

    private IdentityVerification parseIdentity(JsonNode node) {
        if (node == null || !node.isObject()) return IdentityVerification.OFF;
        List<ECKey> keys = new ArrayList<>();
        for (JsonNode k : node.path("keys")) {
            try {
                keys.add(ECKey.parse(json.writeValueAsString(k)));
            } catch (ParseException e) {
                throw new IllegalStateException("Stored identity key does not parse", e);
            }
        }
        String issuer = node.path("issuer").isString() ? node.get("issuer").stringValue() : null;
        return new IdentityVerification(node.path("required").asBoolean(false), issuer, List.copyOf(keys));
    }

}
