package dev.pushservice.delivery.webpush;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.Unavailable;
import java.time.Duration;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /v1/app/webpush}: the app's VAPID public key, which a browser needs for
 * {@code pushManager.subscribe({applicationServerKey})}. Public client keys may read it: it is
 * public by design (an addition to the spec; see docs/api-decisions.md).
 */
@RestController
class WebPushKeyController {

    private final VapidKeyService vapid;

    WebPushKeyController(VapidKeyService vapid) {
        this.vapid = vapid;
    }

    @GetMapping("/v1/app/webpush")
    @Authorize(value = Scope.DEVICES_WRITE, publicKeyAllowed = true)
    Map<String, String> vapidPublicKey(ApiPrincipal caller) {
        String key = vapid.publicKey(caller.appId()).orElseThrow(() -> new Unavailable(
                "The app's Web Push key pair is not generated yet; retry shortly", Duration.ofSeconds(5)));
        return Map.of("vapid_public_key", key);
    }
}
