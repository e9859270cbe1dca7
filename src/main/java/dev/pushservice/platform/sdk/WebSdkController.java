package dev.pushservice.platform.sdk;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import org.springframework.core.io.ClassPathResource;
import org.springframework.http.CacheControl;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Serves the web SDK and its demo page from the jar. Read once at start, like the contract: a jar
 * without them fails to start instead of serving a broken SDK.
 *
 * <p>The scripts: {@code text/javascript} (RFC 9239; browsers refuse a module or a service worker
 * of another type), {@code nosniff}, cacheable for an hour with a strong {@code ETag} (a revalidation
 * is a 304), {@code Access-Control-Allow-Origin: *} because a site on another origin loads
 * {@code push.js} as a module script, which browsers fetch with CORS (the files are public; no
 * credentials). The worker also carries {@code Service-Worker-Allowed: /}, so a page of this origin
 * may register it for the whole origin. A site on another origin cannot register a worker from here
 * (browsers require the same origin): it serves its own file that calls {@code importScripts}.
 *
 * <p>The demo page: its own strict Content-Security-Policy (scripts and styles only from here, no
 * inline script; {@code connect-src 'self'}, so the server key typed into it can reach no other host).
 */
@RestController
class WebSdkController {

    static final MediaType JAVASCRIPT = new MediaType("text", "javascript", StandardCharsets.UTF_8);
    static final String DEMO_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
            + "connect-src 'self'; worker-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";
    private static final CacheControl SCRIPT_CACHE = CacheControl.maxAge(Duration.ofHours(1)).cachePublic();

    private final Asset sdk = Asset.read("sdk/v1/push.js");
    private final Asset worker = Asset.read("sdk/v1/push-sw.js");
    private final Asset demoPage = Asset.read("sdk/demo/demo.html");
    private final Asset demoScript = Asset.read("sdk/demo/demo.js");
    private final Asset demoStyle = Asset.read("sdk/demo/demo.css");

    @GetMapping("/sdk/v1/push.js")
    ResponseEntity<byte[]> sdk() {
        return script(sdk).body(sdk.bytes());
    }

    @GetMapping("/sdk/v1/push-sw.js")
    ResponseEntity<byte[]> worker() {
        return script(worker).header("Service-Worker-Allowed", "/").body(worker.bytes());
    }

    @GetMapping("/sdk/v1/demo")
    ResponseEntity<byte[]> demo() {
        return ResponseEntity.ok()
                .contentType(new MediaType(MediaType.TEXT_HTML, StandardCharsets.UTF_8))
                .cacheControl(CacheControl.noCache())
                .header("Content-Security-Policy", DEMO_POLICY)
                .header("X-Content-Type-Options", "nosniff")
                .header("Referrer-Policy", "no-referrer")
                .eTag(demoPage.etag())
                .body(demoPage.bytes());
    }

    @GetMapping("/sdk/v1/demo.js")
    ResponseEntity<byte[]> demoScript() {
        return script(demoScript).body(demoScript.bytes());
    }

    @GetMapping("/sdk/v1/demo.css")
    ResponseEntity<byte[]> demoStyle() {
        return ResponseEntity.ok()
                .contentType(new MediaType("text", "css", StandardCharsets.UTF_8))
                .cacheControl(SCRIPT_CACHE)
                .header("X-Content-Type-Options", "nosniff")
                .eTag(demoStyle.etag())
                .body(demoStyle.bytes());
    }

    private static ResponseEntity.BodyBuilder script(Asset asset) {
        return ResponseEntity.ok()
                .contentType(JAVASCRIPT)
                .cacheControl(SCRIPT_CACHE)
                .header("X-Content-Type-Options", "nosniff")
                .header("Access-Control-Allow-Origin", "*")
                .header("Cross-Origin-Resource-Policy", "cross-origin")
                .eTag(asset.etag());
    }

    /** A file of the jar and its strong ETag (the first 16 bytes of its SHA-256, base64url). */
    private record Asset(byte[] bytes, String etag) {
        static Asset read(String path) {
            try (InputStream in = new ClassPathResource(path).getInputStream()) {
                byte[] bytes = in.readAllBytes();
                byte[] hash = MessageDigest.getInstance("SHA-256").digest(bytes);
                return new Asset(bytes, "\"" + Base64.getUrlEncoder().withoutPadding().encodeToString(Arrays.copyOf(hash, 16)) + "\"");
            } catch (IOException e) {
                throw new UncheckedIOException("Missing classpath resource " + path
                        + " (the web SDK is copied from sdk/web at build time: build with Maven)", e);
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
