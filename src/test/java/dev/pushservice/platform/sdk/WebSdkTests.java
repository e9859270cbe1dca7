package dev.pushservice.platform.sdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The web SDK, its worker and the demo page over real HTTP: the jar serves sdk/web's files byte
 * for byte, with the types, caching and headers browsers need, without a key (docs/web-sdk.md).
 */
class WebSdkTests extends ApiTest {

    @Test
    void theSdkIsServedAsSdkWebHasIt() throws Exception {
        TestApi.Response r = api.get("/sdk/v1/push.js", null);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.body()).isEqualTo(Files.readString(Path.of("sdk/web/push.js"), StandardCharsets.UTF_8));
        assertThat(r.body()).contains("export default push", "'/v1/devices/register'");
        assertThat(r.header("Content-Type").orElseThrow()).isEqualTo("text/javascript;charset=UTF-8");
        assertThat(r.header("X-Content-Type-Options")).contains("nosniff");
        assertThat(r.header("Cache-Control").orElseThrow()).contains("max-age=3600").contains("public");
        assertThat(r.header("Access-Control-Allow-Origin")).as("a module script of another origin is fetched with CORS").contains("*");
        assertThat(r.header("Service-Worker-Allowed")).isEmpty();
    }

    @Test
    void theWorkerIsServedAsSdkWebHasItAndMayControlTheWholeOrigin() throws Exception {
        TestApi.Response r = api.get("/sdk/v1/push-sw.js", null);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.body()).isEqualTo(Files.readString(Path.of("sdk/web/push-sw.js"), StandardCharsets.UTF_8));
        assertThat(r.body()).contains("addEventListener('push'", "addEventListener('notificationclick'");
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("text/javascript");
        assertThat(r.header("Service-Worker-Allowed")).contains("/");
        assertThat(r.header("Cache-Control").orElseThrow()).contains("max-age=3600");
    }

    @Test
    void aRevalidationWithTheEtagIsNotModified() {
        for (String path : List.of("/sdk/v1/push.js", "/sdk/v1/push-sw.js", "/sdk/v1/demo", "/sdk/v1/demo.js", "/sdk/v1/demo.css")) {
            TestApi.Response first = api.get(path, null);
            String etag = first.header("ETag").orElseThrow();
            assertThat(etag).as(path).matches("\"[A-Za-z0-9_-]{22}\"");
            TestApi.Response again = api.send(api.request(path, null).header("If-None-Match", etag).GET());
            assertThat(again.status()).as(path).isEqualTo(304);
            assertThat(again.body()).as(path).isEmpty();
            TestApi.Response stale = api.send(api.request(path, null).header("If-None-Match", "\"stale\"").GET());
            assertThat(stale.status()).as(path).isEqualTo(200);
        }
    }

    @Test
    void theDemoPageLoadsOnlyFilesOfItsOwnWithoutInlineScript() {
        TestApi.Response page = api.get("/sdk/v1/demo", null);
        assertThat(page.status()).isEqualTo(200);
        assertThat(page.header("Content-Type").orElseThrow()).startsWith("text/html");
        String csp = page.header("Content-Security-Policy").orElseThrow();
        assertThat(csp).contains("script-src 'self'", "connect-src 'self'", "style-src 'self'").doesNotContain("unsafe");
        assertThat(page.body()).doesNotContainPattern("<script(?![^>]*\\ssrc=)").doesNotContain(" style=").doesNotContainPattern("\\son[a-z]+=");
        assertThat(page.body()).contains("sent only to this service");

        List<String> assets = new ArrayList<>();
        Matcher m = Pattern.compile("(?:src|href)=\"([^\"]+)\"").matcher(page.body());
        while (m.find()) assets.add(m.group(1));
        assertThat(assets).containsExactlyInAnyOrder("demo.css", "demo.js");
        for (String asset : assets) {
            TestApi.Response r = api.get("/sdk/v1/" + asset, null);
            assertThat(r.status()).as(asset).isEqualTo(200);
            assertThat(r.header("Content-Type").orElseThrow()).as(asset).startsWith(asset.endsWith(".js") ? "text/javascript" : "text/css");
        }
        assertThat(api.get("/sdk/v1/demo.js", null).body()).contains("from './push.js'");
    }

    @Test
    void onlyGetIsServedAndUnknownFilesAreNotFound() {
        TestApi.Response post = api.post("/sdk/v1/push.js", null, "{}");
        assertThat(post.status()).isEqualTo(405);
        assertThat(api.get("/sdk/v1/nope.js", null).status()).isEqualTo(404);
        assertThat(api.get("/sdk/v2/push.js", null).status()).isEqualTo(404);
    }
}
