package dev.pushservice.webhooks;

import dev.pushservice.audit.AuditLog;
import dev.pushservice.platform.crypto.SecretBox;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.net.TargetAddresses;
import dev.pushservice.platform.storage.Uuid7;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Webhook endpoints of an app: create, list, change, rotate, delete, queue a test, read recent
 * deliveries. Owns the URL rule (HTTPS; no loopback, private or link-local literal or local name
 * unless {@code PUSH_WEBHOOKS_ALLOW_INSECURE}) and the secrets: 32 random bytes shown once as
 * {@code whsec_<base64>}, stored sealed by {@link SecretBox} under the webhook's id. Thread-safe.
 */
@Service
public class WebhookService {

    static final int URL_MAX = 2048;
    static final int DESCRIPTION_MAX = 500;
    static final int EVENTS_MAX = 50;
    static final int RECENT_DELIVERIES = 50;

    private final WebhookRepository webhooks;
    private final AuditLog audit;
    private final SecretBox secrets;
    private final WebhookProperties properties;
    private final Clock clock;
    private final SecureRandom random = new SecureRandom();

    WebhookService(WebhookRepository webhooks, AuditLog audit, SecretBox secrets, WebhookProperties properties, Clock clock) {
        this.webhooks = webhooks;
        this.audit = audit;
        this.secrets = secrets;
        this.properties = properties;
        this.clock = clock;
    }

    static String secretContext(UUID webhookId) {
        return "webhook:" + webhookId + ":secret";
    }

    /** A parsed create or update body ({@link WebhookInput}); null fields are left unchanged by an update. */
    public record Changes(String url, boolean descriptionGiven, String description, List<String> events, Boolean enabled,
                   boolean rotateSecret) {
    }

    @Transactional
    public WebhookView.WithSecret create(UUID appId, Changes in) {
        checkUrl(in.url());
        UUID id = UUID.randomUUID();
        String secret = newSecret();
        Instant now = clock.instant();
        boolean enabled = in.enabled() == null || in.enabled();
        webhooks.insert(appId, id, in.url(), in.description(), in.events(), enabled,
                secrets.seal(secret.getBytes(StandardCharsets.UTF_8), secretContext(id)), now);
        audit.record(appId, "webhook.create", "webhook", id, in.enabled() == null
                ? List.of("url", "description", "events") : List.of("url", "description", "events", "enabled"));
        return view(webhooks.find(appId, id, false).orElseThrow()).withSecret(secret);
    }

    @Transactional(readOnly = true)
    public Page<WebhookView> list(UUID appId, PageRequest page) {
        return Page.of(webhooks.list(appId, page).stream().map(WebhookService::view).toList(), page);
    }

    /** Applies the changes; returns the view, with the new secret when it was rotated. */
    @Transactional
    public Object update(UUID appId, UUID id, Changes in) {
        WebhookRepository.Row row = webhooks.find(appId, id, true).orElseThrow(() -> new NotFound("webhook"));
        if (in.url() != null) checkUrl(in.url());
        Instant now = clock.instant();
        webhooks.update(appId, id,
                in.url() != null ? in.url() : row.url(),
                in.descriptionGiven() ? in.description() : row.description(),
                in.events() != null ? in.events() : row.events(),
                in.enabled() != null ? in.enabled() : row.enabled(), now);
        String secret = null;
        if (in.rotateSecret()) {
            secret = newSecret();
            webhooks.rotate(appId, id, secrets.seal(secret.getBytes(StandardCharsets.UTF_8), secretContext(id)),
                    now.plus(properties.rotationGrace()), now);
        }
        List<String> changed = new ArrayList<>();
        if (in.url() != null) changed.add("url");
        if (in.descriptionGiven()) changed.add("description");
        if (in.events() != null) changed.add("events");
        if (in.enabled() != null) changed.add("enabled");
        if (in.rotateSecret()) changed.add("secret");
        audit.record(appId, "webhook.update", "webhook", id, changed);
        WebhookView view = view(webhooks.find(appId, id, false).orElseThrow());
        return secret == null ? view : view.withSecret(secret);
    }

    @Transactional
    public WebhookView.Deletion delete(UUID appId, UUID id) {
        if (!webhooks.delete(appId, id)) throw new NotFound("webhook");
        audit.record(appId, "webhook.delete", "webhook", id);
        return new WebhookView.Deletion(id, true);
    }

    /**
     * Which of {@code ids} name a webhook of the app (enabled or not): one query, for features that
     * refer to webhooks (a journey's webhook node).
     */
    @Transactional(readOnly = true)
    public java.util.Set<UUID> existing(UUID appId, java.util.Collection<UUID> ids) {
        return ids.isEmpty() ? java.util.Set.of() : webhooks.existing(appId, ids);
    }

    /** Queues a signed {@code webhook.test}, whatever the webhook subscribes to (sent once it is enabled). */
    @Transactional
    public WebhookView.Queued test(UUID appId, UUID id) {
        webhooks.find(appId, id, false).orElseThrow(() -> new NotFound("webhook"));
        Instant now = clock.instant();
        // time-ordered: webhook_deliveries is partitioned by id (docs/storage.md)
        UUID delivery = Uuid7.at(now);
        webhooks.queueTest(appId, id, delivery, now);
        return new WebhookView.Queued(id, delivery, WebhookEvents.TEST, "queued");
    }

    /** What {@link #queueDirect} did. */
    public enum DirectOutcome {
        /** One delivery per body was queued. */
        QUEUED,
        /** The webhook does not exist (deleted, or not the app's): nothing queued. */
        NOT_FOUND,
        /** The webhook is disabled: nothing queued (as the relay sends nothing to a disabled endpoint). */
        DISABLED
    }

    /**
     * Queues one signed delivery of {@code kind} to one endpoint per data object, in the caller's
     * transaction, set-based (one statement however many): for work the service does itself that
     * names an endpoint directly (a journey's webhook step), whatever the endpoint subscribes to. The
     * body is {@code {"type": kind, "timestamp": now, "data": data}}; the dispatcher delivers and
     * signs it as every delivery, retries included.
     */
    @Transactional(propagation = org.springframework.transaction.annotation.Propagation.MANDATORY)
    public DirectOutcome queueDirect(UUID appId, UUID webhookId, String kind, List<tools.jackson.databind.JsonNode> data) {
        WebhookRepository.Row row = webhooks.find(appId, webhookId, false).orElse(null);
        if (row == null) return DirectOutcome.NOT_FOUND;
        if (!row.enabled()) return DirectOutcome.DISABLED;
        webhooks.queueDirect(appId, webhookId, kind, data, clock.instant());
        return DirectOutcome.QUEUED;
    }

    @Transactional(readOnly = true)
    public WebhookView.Deliveries deliveries(UUID appId, UUID id) {
        webhooks.find(appId, id, false).orElseThrow(() -> new NotFound("webhook"));
        return new WebhookView.Deliveries(id, webhooks.deliveries(appId, id, RECENT_DELIVERIES, 0).stream()
                .map(WebhookService::delivery).toList());
    }

    /** The app's webhook (never its secret); 404 when unknown or another app's. */
    @Transactional(readOnly = true)
    public WebhookView get(UUID appId, UUID id) {
        return view(webhooks.find(appId, id, false).orElseThrow(() -> new NotFound("webhook")));
    }

    /** One page of the webhook's deliveries, newest first, each with its attempts so far and its last attempt. */
    @Transactional(readOnly = true)
    public Page<WebhookView.Delivery> deliveries(UUID appId, UUID id, PageRequest page) {
        webhooks.find(appId, id, false).orElseThrow(() -> new NotFound("webhook"));
        return Page.of(webhooks.deliveries(appId, id, page.fetchSize(), page.offset()).stream()
                .map(WebhookService::delivery).toList(), page);
    }

    /**
     * The retried (failed, not last) attempts of these deliveries of the app's webhook, oldest first, by
     * delivery; one statement. A delivery of another app or webhook has none.
     */
    @Transactional(readOnly = true)
    public Map<UUID, List<WebhookView.Attempt>> attempts(UUID appId, UUID webhookId, List<UUID> deliveryIds) {
        Map<UUID, List<WebhookView.Attempt>> byDelivery = new java.util.LinkedHashMap<>();
        for (WebhookRepository.AttemptRow a : webhooks.attempts(appId, webhookId, deliveryIds, Schedule.MAX_ATTEMPTS)) {
            byDelivery.computeIfAbsent(a.deliveryId(), k -> new ArrayList<>())
                    .add(new WebhookView.Attempt(a.attempt(), a.at(), a.statusCode(), a.error(), a.latencyMs()));
        }
        return byDelivery;
    }

    private static WebhookView.Delivery delivery(WebhookRepository.DeliveryRow d) {
        return new WebhookView.Delivery(d.id(), d.eventType(), d.status(), d.attempts(), d.lastStatusCode(),
                d.lastError(), d.lastLatencyMs(), d.lastAttemptAt(), d.nextAttemptAt(), d.createdAt());
    }

    private static WebhookView view(WebhookRepository.Row r) {
        return new WebhookView(r.id(), r.url(), r.description(), r.events(), r.enabled(), r.disabledReason(),
                r.createdAt(), r.updatedAt());
    }

    private String newSecret() {
        byte[] key = new byte[32];
        random.nextBytes(key);
        return "whsec_" + Base64.getEncoder().encodeToString(key);
    }

    /** The URL rule at creation and update (delivery checks the resolved address again). */
    void checkUrl(String url) {
        List<Violation> problems = new ArrayList<>();
        URI uri = null;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            problems.add(new Violation("url", "must be an absolute https:// URL"));
        }
        if (uri != null) {
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            boolean schemeOk = scheme.equals("https") || (properties.allowInsecure() && scheme.equals("http"));
            if (!schemeOk || uri.getHost() == null || uri.getRawAuthority() == null) {
                problems.add(new Violation("url", properties.allowInsecure()
                        ? "must be an absolute http:// or https:// URL with a host"
                        : "must be an absolute https:// URL with a host"));
            } else if (uri.getRawUserInfo() != null) {
                problems.add(new Violation("url", "must not contain credentials"));
            } else if (!properties.allowInsecure() && localTarget(uri.getHost())) {
                problems.add(new Violation("url", "must not point to a loopback, private, link-local or reserved address"));
            }
        }
        if (!problems.isEmpty()) throw new InvalidInput(problems);
    }

    /** A local name, a numeric host other than a plain literal, or an address literal that delivery would refuse (no DNS lookup here). */
    private static boolean localTarget(String host) {
        return TargetAddresses.refusedHost(host);
    }
}
