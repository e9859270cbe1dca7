package dev.pushservice.delivery.webpush;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
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
        return Map.of("vapid_public_key", vapid.publicKey(caller.appId()));
    }
}
