package dev.pushservice.devices;

import dev.pushservice.audit.AuditLog;
import dev.pushservice.delivery.webpush.ImportedVapidKeys;
import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.delivery.webpush.WebPushProperties;
import dev.pushservice.delivery.webpush.WebPushSubscription;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Platform;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;

/**
 * Imports a previous Web Push provider's subscriptions with its VAPID key pair (issue 28 part 4), so
 * those browsers keep receiving without subscribing again: each subscription becomes a {@code web}
 * device whose token names the imported public key, and sends to it are signed with the imported
 * pair ({@link ImportedVapidKeys}, the private key sealed at rest).
 *
 * <p>Everything is validated before anything changes: the key pair (both keys well-formed and
 * belonging together), and every row with the registration's own rules ({@link PushTokens}: the
 * endpoint is an absolute https URL whose host is not refused by the SSRF guard, the keys are a
 * P-256 point and 16 bytes; {@code external_user_id} and {@code tags} as in a registration). One bad
 * row refuses the whole import (422 naming every bad row) and nothing is stored. A row repeating an
 * endpoint earlier in the same import is skipped and reported. Then the pair is stored and audited
 * ({@code webpush.import}, target the public key; never the private key) in one transaction, and the
 * rows are registered one by one through the registration's own path (one device per endpoint: an
 * endpoint already registered is updated, with the imported key), without identity tokens: the
 * caller holds a server key.
 */
@Service
public class WebPushImport {

    /** Rows per request: a script sends a large export in several requests. */
    public static final int MAX_ROWS = 5_000;
    private static final tools.jackson.databind.json.JsonMapper JSON = tools.jackson.databind.json.JsonMapper.builder().build();

    private final DeviceService devices;
    private final ImportedVapidKeys keys;
    private final AuditLog audit;
    private final TransactionTemplate transaction;
    private final boolean allowInsecureEndpoints;

    WebPushImport(DeviceService devices, ImportedVapidKeys keys, AuditLog audit, PlatformTransactionManager transactions,
                  WebPushProperties webPush) {
        this.devices = devices;
        this.keys = keys;
        this.audit = audit;
        this.transaction = new TransactionTemplate(transactions);
        this.allowInsecureEndpoints = webPush.allowInsecureEndpoints();
    }

    /** A row left out: its index in the request and why. */
    public record Skipped(int index, String reason) {
    }

    /** What an import did. */
    public record Result(String vapidPublicKey, int received, int created, int updated, List<Skipped> skipped) {
    }

    private record Row(Registration registration, PushTokens.Checked token) {
    }

    /**
     * Validates the whole request (throwing {@code InvalidInput}, 422, with every problem, before any
     * change), then imports it.
     */
    public Result importSubscriptions(UUID appId, JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String publicKey = in.requiredString("vapid_public_key", 200);
        String privateKey = in.requiredString("vapid_private_key", 200);
        VapidKeys pair = null;
        if (publicKey != null && privateKey != null) {
            try {
                pair = VapidKeys.of(publicKey, privateKey, null);
            } catch (IllegalArgumentException e) {
                // the message names the problem, never the key itself
                in.reject("vapid_private_key", e.getMessage());
            }
        }
        JsonNode subscriptions = in.value("subscriptions");
        List<Row> rows = new ArrayList<>();
        List<Skipped> skipped = new ArrayList<>();
        int received = 0;
        if (subscriptions == null || !subscriptions.isArray() || subscriptions.isEmpty()) {
            in.reject("subscriptions", "must be a non-empty array of subscriptions");
        } else if (subscriptions.size() > MAX_ROWS) {
            in.reject("subscriptions", "must have at most " + MAX_ROWS + " subscriptions per request");
        } else {
            received = subscriptions.size();
            String serverKey = pair == null ? null : pair.publicKeyBase64Url();
            Set<String> endpoints = new HashSet<>();
            for (int i = 0; i < subscriptions.size(); i++) {
                int index = i;
                in.element("subscriptions", i, subscriptions.get(i)).ifPresent(row -> {
                    Row valid = row(row, serverKey);
                    if (valid == null) return;
                    String endpoint = WebPushSubscription.parse(valid.token().stored(), true).endpoint().toString();
                    if (!endpoints.add(endpoint)) skipped.add(new Skipped(index, "repeats the endpoint of an earlier row"));
                    else rows.add(valid);
                });
            }
        }
        in.check();

        VapidKeys imported = pair;
        transaction.executeWithoutResult(status -> {
            keys.store(appId, imported);
            audit.record(appId, "webpush.import", "vapid_key", imported.publicKeyBase64Url(), List.of("devices"));
        });
        int created = 0;
        int updated = 0;
        for (Row row : rows) {
            if (devices.registerVerified(appId, row.registration(), row.token()).created()) created++;
            else updated++;
        }
        return new Result(imported.publicKeyBase64Url(), received, created, updated, List.copyOf(skipped));
    }

    /** One row checked with the registration's rules, or null (problems recorded on {@code row}). */
    private Row row(JsonInput row, String serverKey) {
        String endpoint = row.requiredString("endpoint", Limits.PUSH_TOKEN);
        String p256dh = row.requiredString("p256dh", 200);
        String auth = row.requiredString("auth", 100);
        String externalUserId = row.value("external_user_id") == null ? null
                : row.requiredText("external_user_id", Limits.EXTERNAL_USER_ID);
        Map<String, String> tags = Tags.read(row, "tags");
        if (endpoint == null || p256dh == null || auth == null) return null;
        var subscription = JSON.createObjectNode();
        subscription.put("endpoint", endpoint);
        subscription.putObject("keys").put("p256dh", p256dh).put("auth", auth);
        String raw = subscription.toString();
        PushTokens.Checked token;
        try {
            token = PushTokens.check(Platform.WEB, raw, allowInsecureEndpoints, serverKey);
        } catch (IllegalArgumentException e) {
            String message = e.getMessage() == null ? "is not a valid subscription" : e.getMessage();
            row.reject(message.contains("p256dh") ? "p256dh" : message.contains("auth") ? "auth" : "endpoint", message);
            return null;
        }
        if (serverKey == null) return null; // the pair is refused: the request fails anyway
        return new Row(new Registration(Platform.WEB, raw, externalUserId, null, null, null, null, null, null, tags), token);
    }
}
