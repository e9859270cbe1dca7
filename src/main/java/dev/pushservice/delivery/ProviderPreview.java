package dev.pushservice.delivery;

import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * What a provider would be sent for one {@link PushMessage}, built by the very code that builds
 * the real request ({@link PushProvider#preview}), with nothing sent and no token in it: either
 * the request, or the rejection the provider decides before sending (a payload over the
 * provider's limit, a token that can never be valid). Immutable.
 */
public sealed interface ProviderPreview {

    /**
     * The request as the provider would receive it.
     *
     * @param headers the headers that shape delivery (lower-case names; never {@code authorization})
     * @param body the JSON the provider, or for Web Push the browser after decryption, receives;
     *             the device token and the subscription endpoint are left out
     */
    record Request(Map<String, String> headers, JsonNode body) implements ProviderPreview {

        public Request {
            headers = Map.copyOf(headers);
        }
    }

    /** The message would be rejected before sending, permanently: {@code reason} as a recipient's last error shows it. */
    record Refused(ReasonCode reason, String detail) implements ProviderPreview {
    }
}
