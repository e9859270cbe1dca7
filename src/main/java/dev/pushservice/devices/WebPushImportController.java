package dev.pushservice.devices;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * {@code POST /v1/app/webpush/imports}: imports a previous provider's Web Push subscriptions with its
 * VAPID key pair ({@link WebPushImport}). A server key with {@code devices:write} only: public client
 * keys are refused (the body carries a private key, and the rows skip identity tokens). See
 * docs/api-decisions.md.
 */
@RestController
class WebPushImportController {

    private final WebPushImport imports;

    WebPushImportController(WebPushImport imports) {
        this.imports = imports;
    }

    @PostMapping("/v1/app/webpush/imports")
    @Authorize(Scope.DEVICES_WRITE)
    WebPushImport.Result importSubscriptions(ApiPrincipal caller, @RequestBody JsonNode body) {
        return imports.importSubscriptions(caller.appId(), body);
    }
}
