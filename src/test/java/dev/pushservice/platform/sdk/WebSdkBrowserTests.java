package dev.pushservice.platform.sdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.AppCredentialStore;
import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.notifications.PeerApiTest;
import dev.pushservice.support.Chromium;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.TestApi;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.devtools.Command;
import org.openqa.selenium.devtools.Connection;
import org.openqa.selenium.devtools.Event;
import org.openqa.selenium.devtools.SeleniumCdpConnection;
import org.openqa.selenium.devtools.idealized.target.model.SessionID;
import org.springframework.beans.factory.annotation.Autowired;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;

/**
 * The web SDK in a real headless Chromium (Debian's, through Selenium and chromedriver), against the
 * running service and the project's local Web Push receiver (issue 28, "Tests"; docs/web-sdk.md).
 *
 * <p><b>The site.</b> A {@link LocalHttpServer} on another origin ({@code http://127.0.0.1:<its
 * port>}) plays the customer's web site: its page imports {@code /sdk/v1/push.js} from the service
 * and its own {@code /sw.js} is one line, {@code importScripts('<service>/sdk/v1/push-sw.js')}.
 * That is the setup docs/web-sdk.md prescribes, and the only one the service-worker rules allow for
 * a site that is not the service: a worker must come from the page's own origin, so the service's
 * own origin could only host a page if the service served test pages, which it does not. It also
 * puts the SDK's API calls and the worker's event reports through CORS, as on a real site.
 * {@code http://127.0.0.1} is a secure context, so service workers work over plain HTTP here.
 *
 * <p><b>The push service.</b> A browser cannot reach a real push service here (no network; and
 * Chromium's {@code PushManager.subscribe} asks Google's FCM for an endpoint). So the page replaces
 * {@code PushManager.prototype.subscribe} and {@code getSubscription} by a stand-in (the site's
 * {@code /fake-push.js}) that gets each new subscription from {@link PeerApiTest#WEB}, the local
 * receiver that checks VAPID and decrypts every push as a browser would, and keeps it in the
 * page's {@code localStorage} as a browser keeps its subscription. Like Chromium it refuses to
 * subscribe with another {@code applicationServerKey} while subscribed ({@code InvalidStateError}).
 * What the receiver decrypted is then handed to the service worker with the DevTools protocol's
 * {@code ServiceWorker.deliverPushMessage}, as the browser would after its push service delivered it.
 *
 * <p><b>The click.</b> No DevTools command clicks a notification. The test evaluates, in the
 * worker's own context (DevTools {@code Target.attachToTarget} with {@code flatten}, then
 * {@code Runtime.evaluate}), a {@code notificationclick} event built with {@code new NotificationEvent(…)} for
 * the shown notification, dispatched to the worker's listeners. A script-made event is not
 * trusted, and {@code ExtendableEvent.waitUntil} throws on untrusted events, so the test gives that
 * one event its own {@code waitUntil} that keeps the promise; the SDK's handler is unchanged. (The
 * handler's {@code openWindow}/{@code focus} then fails for want of a user gesture, which a real
 * click has: the report is made before, as documented, and that is what is checked.)
 *
 * <p>Tagged "browser": run with {@code -Dbrowser} (CI's first pass); without Chromium they fail.
 */
@Tag("browser")
class WebSdkBrowserTests extends PeerApiTest {

    private static final Duration PATIENCE = Duration.ofSeconds(20);
    private static Path profiles;
    private static LocalHttpServer site;
    /** The running service's origin, for the site's files (set before each test). */
    private static volatile String service;
    /** Every subscription the stand-in push manager got from the receiver, with the key it was asked for. */
    private static final List<Handed> handed = new CopyOnWriteArrayList<>();

    private record Handed(LocalWebPushReceiver.Subscriber subscriber, String applicationServerKey) {
    }

    @Autowired
    AppCredentialStore credentials;

    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void startSite() throws Exception {
        Chromium.requireInstalled();
        profiles = Files.createTempDirectory("web-sdk-browser-tests");
        site = LocalHttpServer.builder().http1Only().start(WebSdkBrowserTests::siteAnswer);
    }

    @AfterAll
    static void stopSite() throws Exception {
        if (site != null) site.close();
        if (profiles != null) {
            try (var walk = Files.walk(profiles)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @BeforeEach
    void pointSiteAtService() {
        service = "http://127.0.0.1:" + port;
    }

    @AfterEach
    void closeBrowsers() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
        open.clear();
    }

    private static String siteOrigin() {
        return "http://127.0.0.1:" + site.port();
    }

    // ---- the site: its page, its worker, and the stand-in push manager ----

    private static Mono<LocalHttpServer.Response> siteAnswer(LocalHttpServer.Request r) {
        String path = r.path();
        if (r.method().equals("GET") && path.startsWith("/p/")) {
            // the page, for the public key in the path
            String key = path.substring(3);
            return ok("text/html; charset=utf-8", "<!doctype html><html data-key=\"" + key + "\" data-base=\"" + service
                    + "\"><head><title>A site</title><link rel=\"icon\" href=\"data:,\"></head><body><p>site</p><script type=\"module\" src=\"/page.js\"></script></body></html>");
        }
        return switch (r.method() + " " + path) {
            case "GET /page.js" -> ok("text/javascript", """
                    import './fake-push.js';
                    import push from '%s/sdk/v1/push.js';
                    window.push = push;
                    const root = document.documentElement.dataset;
                    window.ready = push.init({ baseUrl: root.base, publicKey: root.key, serviceWorker: '/sw.js', scope: '/' });
                    """.formatted(service));
            case "GET /sw.js" -> ok("text/javascript", "importScripts('" + service + "/sdk/v1/push-sw.js');\n");
            case "GET /fake-push.js" -> ok("text/javascript", FAKE_PUSH);
            case "POST /subscriptions" -> {
                // the stand-in's push service: a new subscription of the local receiver
                LocalWebPushReceiver.Subscriber s = WEB.subscribe();
                handed.add(new Handed(s, new String(r.body(), StandardCharsets.US_ASCII)));
                yield ok("application/json", s.json());
            }
            default -> Mono.just(new LocalHttpServer.Response(404, Map.of(), null));
        };
    }

    private static Mono<LocalHttpServer.Response> ok(String type, String body) {
        return Mono.just(new LocalHttpServer.Response(200, Map.of("content-type", type, "cache-control", "no-store"), body));
    }

    /**
     * The stand-in for the browser's push manager (see the class comment): subscriptions come from
     * the local receiver through the site's {@code POST /subscriptions} and live in localStorage.
     */
    private static final String FAKE_PUSH = """
            // A browser cannot reach a real push service in this test: subscriptions come from the
            // project's local Web Push receiver instead, and live in localStorage as a browser keeps them.
            const STORE = 'fake-push-subscription';
            const bytes = (t) => Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
            const text = (b) => btoa(String.fromCharCode(...new Uint8Array(b.buffer ? b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) : b)))
              .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
            const current = () => JSON.parse(localStorage.getItem(STORE) || 'null');
            const log = (what) => localStorage.setItem('fake-push-log', JSON.stringify([...JSON.parse(localStorage.getItem('fake-push-log') || '[]'), what]));
            function make(rec) {
              return {
                endpoint: rec.endpoint, expirationTime: null,
                options: { userVisibleOnly: true, applicationServerKey: bytes(rec.applicationServerKey).buffer },
                getKey: (name) => bytes(rec.keys[name]).buffer,
                toJSON: () => ({ endpoint: rec.endpoint, expirationTime: null, keys: { ...rec.keys } }),
                async unsubscribe() {
                  const c = current();
                  if (!c || c.endpoint !== rec.endpoint) return false;
                  localStorage.removeItem(STORE);
                  log({ unsubscribe: rec.endpoint });
                  return true;
                },
              };
            }
            PushManager.prototype.getSubscription = async function () {
              const c = current();
              return c ? make(c) : null;
            };
            PushManager.prototype.subscribe = async function (options) {
              const key = text(options.applicationServerKey);
              const c = current();
              if (c) {
                if (c.applicationServerKey !== key) {
                  throw new DOMException('A subscription with a different applicationServerKey already exists.', 'InvalidStateError');
                }
                return make(c);
              }
              const made = await (await fetch('/subscriptions', { method: 'POST', body: key })).json();
              const rec = { endpoint: made.endpoint, keys: made.keys, applicationServerKey: key };
              localStorage.setItem(STORE, JSON.stringify(rec));
              log({ subscribe: rec.endpoint, key });
              return make(rec);
            };
            // the test's hand: the browser replaced its subscription (Chromium fires no pushsubscriptionchange)
            window.replaceSubscription = (json) => {
              const s = JSON.parse(json);
              localStorage.setItem(STORE, JSON.stringify({ endpoint: s.endpoint, keys: s.keys, applicationServerKey: current().applicationServerKey }));
            };
            """;

    // ---- the browser ----

    private Chromium chromium() {
        Chromium c = new Chromium(profiles, Chromium.LAPTOP);
        open.add(c);
        // as a visitor who allowed notifications: no prompt (headless Chromium would deny it)
        c.driver.executeCdpCommand("Browser.grantPermissions", Map.of("permissions", List.of("notifications"), "origin", siteOrigin()));
        return c;
    }

    /** Opens the site's page for {@code app} and waits for init(); returns what init resolved to. */
    private Object openSite(Chromium c, TestApp app) {
        c.get(siteOrigin() + "/p/" + app.publicKey());
        return c.driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                + " const wait = () => window.ready ? window.ready.then(done, (e) => done('error ' + e)) : setTimeout(wait, 20); wait();");
    }

    private static Object subscribe(Chromium c) {
        return c.driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                + " push.subscribe().then(done, (e) => done('error ' + e));");
    }

    // ---- DevTools ----

    /** A DevTools connection of its own to the browser (flattened sessions: one per target attached). */
    private Connection devtools(Chromium c) {
        Connection cdp = SeleniumCdpConnection.create(c.driver).orElseThrow();
        open.add(cdp);
        return cdp;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> cdp(Connection cdp, SessionID session, String method, Map<String, Object> params) {
        return (Map<String, Object>) cdp.sendAndWait(session, new Command<Map<String, Object>>(method, params, Map.class), PATIENCE);
    }

    /** Attaches to the first target of {@code type} whose URL starts with {@code url}; its session. */
    @SuppressWarnings("unchecked")
    private static SessionID attach(Connection cdp, String type, String url) {
        String target = await().atMost(PATIENCE).until(() -> {
            List<Map<String, Object>> targets = (List<Map<String, Object>>) cdp(cdp, null, "Target.getTargets", Map.of()).get("targetInfos");
            return targets.stream().filter(t -> type.equals(t.get("type")) && String.valueOf(t.get("url")).startsWith(url))
                    .map(t -> (String) t.get("targetId")).findFirst().orElse(null);
        }, t -> t != null);
        return new SessionID((String) cdp(cdp, null, "Target.attachToTarget", Map.of("targetId", target, "flatten", true)).get("sessionId"));
    }

    /** The site's service-worker registration id, from {@code ServiceWorker.workerRegistrationUpdated}. */
    @SuppressWarnings("unchecked")
    private static String registrationId(Connection cdp, SessionID page) {
        Map<String, String> byScope = new ConcurrentHashMap<>();
        cdp.addListener(new Event<Map<String, Object>>("ServiceWorker.workerRegistrationUpdated", in -> in.read(Map.class)),
                (seq, e) -> ((List<Map<String, Object>>) e.get("registrations")).forEach(r -> {
                    if (!Boolean.TRUE.equals(r.get("isDeleted"))) byScope.put((String) r.get("scopeURL"), (String) r.get("registrationId"));
                }));
        cdp(cdp, page, "ServiceWorker.enable", Map.of());
        return await().atMost(PATIENCE).until(() -> byScope.get(siteOrigin() + "/"), id -> id != null);
    }

    // ---- the API ----

    private List<JsonNode> enabledWebDevices(TestApp app) {
        TestApi.Response r = api.get("/v1/devices?platform=web&enabled=true&limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        List<JsonNode> list = new ArrayList<>();
        r.json().path("data").forEach(list::add);
        return list;
    }

    private List<JsonNode> events(TestApp app, String notificationId) {
        TestApi.Response r = api.get("/v1/notifications/" + notificationId + "/events?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        List<JsonNode> list = new ArrayList<>();
        r.json().path("data").forEach(list::add);
        return list;
    }

    private String appKey(TestApp app) {
        return api.get("/v1/app/webpush", app.publicKey()).json().path("vapid_public_key").asString();
    }

    private static List<Handed> handedFor(String key) {
        return handed.stream().filter(h -> h.applicationServerKey().equals(key)).toList();
    }

    // ---- tests ----

    @Test
    void theSdkSubscribesRegistersAndItsWorkerShowsThePushAndReportsTheClick() throws Exception {
        TestApp app = newApp();
        String vapid = appKey(app);
        Chromium c = chromium();

        assertThat(openSite(c, app)).as("init before any subscription").isNull();
        Object deviceId = subscribe(c);
        assertThat(deviceId).as("subscribe()").asString().matches("[0-9a-f-]{36}");
        assertThat(c.consoleProblems()).as("console errors on the site").isEmpty();

        // the stand-in got one subscription from the receiver, for the app's key; the device exists
        List<Handed> mine = handedFor(vapid);
        assertThat(mine).hasSize(1);
        LocalWebPushReceiver.Subscriber browser = mine.getFirst().subscriber();
        TestApi.Response device = api.get("/v1/devices/" + deviceId, app.serverKey());
        assertThat(device.status()).as(device.toString()).isEqualTo(200);
        assertThat(device.json().path("platform").asString()).isEqualTo("web");
        assertThat(device.json().path("enabled").asBoolean()).isTrue();
        assertThat(device.json().path("locale").asString()).as("the browser's language").isEqualTo(c.js("return navigator.language"));
        assertThat(device.json().path("timezone").asString()).isEqualTo(c.js("return Intl.DateTimeFormat().resolvedOptions().timeZone"));
        assertThat(enabledWebDevices(app)).extracting(d -> d.path("device_id").asString()).containsExactly((String) deviceId);

        // a notification through the API reaches the receiver, which decrypts it
        String id = send(app, """
                {"title":"Browser test","body":"Shown by the SDK's worker","target":{"type":"device","device_id":"%s"},
                 "collapse_id":"order-17","actions":[{"id":"reply","text":"Reply"},{"id":"later","text":"Later"}],
                 "data":{"order":"A-17"}}""".formatted(deviceId));
        await().atMost(WAIT).until(() -> !WEB.received(browser.id()).isEmpty());
        LocalWebPushReceiver.Received received = WEB.received(browser.id()).getFirst();
        assertThat(received.vapidPublicKey()).as("signed with the key the browser subscribed with").isEqualTo(vapid);
        String plaintext = received.plaintextString();
        JsonNode payload = JSON.readTree(plaintext);
        assertThat(payload.path("title").asString()).isEqualTo("Browser test");
        assertThat(payload.path("notification_id").asString()).isEqualTo(id);
        assertThat(payload.path("device_id").asString()).isEqualTo(deviceId);

        // ... and is delivered to the site's worker as the browser would, which shows it
        Connection cdp = devtools(c);
        SessionID page = attach(cdp, "page", siteOrigin());
        String registration = registrationId(cdp, page);
        cdp(cdp, page, "ServiceWorker.deliverPushMessage", Map.of("origin", siteOrigin() + "/", "registrationId", registration, "data", plaintext));
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> shown = await().atMost(PATIENCE).pollInterval(Duration.ofMillis(100)).until(() ->
                (List<Map<String, Object>>) c.driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                        + " navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => done(ns.map((n) =>"
                        + " ({title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => a.action), data: n.data}))),"
                        + " (e) => done([{error: String(e)}]));"), l -> !l.isEmpty());
        assertThat(shown).hasSize(1);
        Map<String, Object> n = shown.getFirst();
        assertThat(n).as(n.toString()).containsEntry("title", "Browser test").containsEntry("body", "Shown by the SDK's worker")
                .containsEntry("tag", "order-17").containsEntry("actions", List.of("reply", "later"));
        @SuppressWarnings("unchecked")
        Map<String, Object> data = (Map<String, Object>) n.get("data");
        assertThat(data).containsEntry("notification_id", id).containsEntry("device_id", deviceId)
                .containsEntry("data", Map.of("order", "A-17"));
        // the worker reported it shown
        await().atMost(PATIENCE).until(() -> events(app, id).stream().anyMatch(e ->
                e.path("event_type").asString().equals("confirmed_delivered") && e.path("source").asString().equals("client")));

        // a click on the "reply" button, dispatched in the worker's context, is reported as clicked
        SessionID worker = attach(cdp, "service_worker", siteOrigin() + "/sw.js");
        Map<String, Object> evaluated = cdp(cdp, worker, "Runtime.evaluate", Map.of("awaitPromise", true, "returnByValue", true,
                "expression", """
                        (async () => {
                          const [n] = await self.registration.getNotifications();
                          const event = new NotificationEvent('notificationclick', { notification: n, action: 'reply' });
                          let kept = null;
                          Object.defineProperty(event, 'waitUntil', { value: (p) => { kept = p; } });
                          self.dispatchEvent(event);
                          const [outcome] = await Promise.allSettled([kept]);
                          return { handled: kept !== null, outcome: outcome.status, reason: String(outcome.reason || '') };
                        })()"""));
        assertThat(evaluated).as(evaluated.toString()).doesNotContainKey("exceptionDetails");
        @SuppressWarnings("unchecked")
        Map<String, Object> value = (Map<String, Object>) ((Map<String, Object>) evaluated.get("result")).get("value");
        assertThat(value).as("the SDK's notificationclick handler ran").containsEntry("handled", true);
        // after the report the handler went on to focus the open tab (the payload has no click URL),
        // which Chromium refuses to a script-made click: no user gesture
        assertThat(value).as(value.toString()).containsEntry("outcome", "rejected");
        assertThat((String) value.get("reason")).contains("focus");
        JsonNode clicked = await().atMost(PATIENCE).until(() -> events(app, id).stream()
                .filter(e -> e.path("event_type").asString().equals("clicked")).findFirst().orElse(null), e -> e != null);
        assertThat(clicked.path("device_id").asString()).isEqualTo(deviceId);
        assertThat(clicked.path("properties").path("action").asString()).isEqualTo("reply");
        assertThat(clicked.path("source").asString()).isEqualTo("client");
        // the click closed the notification
        assertThat(c.driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                + " navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => done(ns.length));")).isEqualTo(0L);
    }

    @Test
    void aVapidKeyChangeEndsWithOneDeviceSubscribedWithTheNewKey() throws Exception {
        TestApp app = newApp();
        String oldKey = appKey(app);
        Chromium c = chromium();
        openSite(c, app);
        String first = (String) subscribe(c);
        LocalWebPushReceiver.Subscriber before = handedFor(oldKey).getFirst().subscriber();

        // The service has no way to change an app's VAPID key (no API, dashboard page or CLI: the
        // service never rotates it, VapidKeyService). The test replaces the stored pair through
        // AppCredentialStore, the store VapidKeyService reads: the service then answers the new
        // key on GET /v1/app/webpush and signs with it, as after a real change. (No send before
        // this point, so the service's 30 s credential cache holds no old pair.)
        VapidKeys replacement = VapidKeys.generate();
        credentials.put(app.appId(), "webpush", JSON.createObjectNode().put("vapid_public_key", replacement.publicKeyBase64Url()),
                replacement.privateKeyBase64Url().getBytes(StandardCharsets.US_ASCII));
        String newKey = appKey(app);
        assertThat(newKey).isEqualTo(replacement.publicKeyBase64Url()).isNotEqualTo(oldKey);

        // the next page load sees the new key: unsubscribes, subscribes with the new key, registers
        Object second = openSite(c, app);
        assertThat(second).asString().matches("[0-9a-f-]{36}").isNotEqualTo(first);
        assertThat(handedFor(newKey)).hasSize(1);
        LocalWebPushReceiver.Subscriber after = handedFor(newKey).getFirst().subscriber();
        assertThat(String.valueOf(c.js("return localStorage.getItem('fake-push-log')")))
                .as("unsubscribed, then subscribed with the new key").contains("{\"unsubscribe\":\"" + before.endpoint() + "\"}",
                        "{\"subscribe\":\"" + after.endpoint() + "\",\"key\":\"" + newKey + "\"}");
        assertThat(enabledWebDevices(app)).extracting(d -> d.path("device_id").asString()).containsExactly((String) second);
        assertThat(api.get("/v1/devices/" + first, app.serverKey()).json().path("enabled").asBoolean()).isFalse();

        // another load changes nothing
        assertThat(openSite(c, app)).isEqualTo(second);
        assertThat(enabledWebDevices(app)).hasSize(1);
        assertThat(handedFor(newKey)).hasSize(1);

        // a send reaches the new subscription only, signed with the new key
        String id = send(app, "{\"title\":\"After the change\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        finished(app, id);
        await().atMost(WAIT).until(() -> !WEB.received(after.id()).isEmpty());
        assertThat(WEB.received(after.id())).singleElement().satisfies(r -> assertThat(r.vapidPublicKey()).isEqualTo(newKey));
        assertThat(WEB.received(before.id())).isEmpty();
        assertThat(c.consoleProblems()).isEmpty();
    }

    @Test
    void aChangedSubscriptionEndsWithOneDevice() throws Exception {
        TestApp app = newApp();
        String key = appKey(app);
        Chromium c = chromium();
        openSite(c, app);
        String first = (String) subscribe(c);
        LocalWebPushReceiver.Subscriber before = handedFor(key).getFirst().subscriber();

        // the browser replaced its subscription (same key, new endpoint and keys) without an event
        LocalWebPushReceiver.Subscriber replaced = WEB.subscribe();
        c.js("window.replaceSubscription(arguments[0])", replaced.json());
        Object second = openSite(c, app);
        assertThat(second).asString().matches("[0-9a-f-]{36}").isNotEqualTo(first);
        assertThat(enabledWebDevices(app)).extracting(d -> d.path("device_id").asString()).containsExactly((String) second);
        assertThat(api.get("/v1/devices/" + first, app.serverKey()).json().path("enabled").asBoolean()).isFalse();
        assertThat(handedFor(key)).as("no new subscription asked for").hasSize(1);

        // reloading again changes nothing
        assertThat(openSite(c, app)).isEqualTo(second);
        assertThat(enabledWebDevices(app)).hasSize(1);

        String id = send(app, "{\"title\":\"After the change\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        finished(app, id);
        await().atMost(WAIT).until(() -> !WEB.received(replaced.id()).isEmpty());
        assertThat(WEB.received(replaced.id())).hasSize(1);
        assertThat(WEB.received(before.id())).isEmpty();
        assertThat(c.consoleProblems()).isEmpty();
    }
}
