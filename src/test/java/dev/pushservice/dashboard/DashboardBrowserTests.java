package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.members.MemberRole;
import dev.pushservice.support.Chromium;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The dashboard in a real headless Chromium (Debian's, through Selenium and chromedriver): the pages
 * load htmx and dashboard.js under the strict Content-Security-Policy, so a page that breaks it shows
 * up here as a console error, not in the HTML tests. Every page visited is checked for console
 * errors and CSP violations, and for a document no wider than a phone's and a laptop's viewport.
 *
 * <p>The app's pages are found by following the app's section navigation: a section whose page is
 * built (it answers 200) is visited and checked; one not built yet answers the dashboard's 404. A
 * new page under an app is covered without a change here; a page elsewhere is one line in
 * {@link #pagesOf}.
 *
 * <p>Tagged "browser": left out of a plain {@code ./mvnw verify}, run with {@code -Dbrowser} (CI's
 * first pass). Without Chromium installed they fail.
 */
@Tag("browser")
class DashboardBrowserTests extends DashboardTest {

    private static Path profiles;
    private static final List<Chromium> open = new ArrayList<>();

    @Autowired
    JdbcClient jdbc;

    @BeforeAll
    static void freshProfiles() throws Exception {
        Chromium.requireInstalled();
        profiles = Files.createTempDirectory("dashboard-browser-tests");
    }

    @AfterAll
    static void closeBrowsers() throws Exception {
        for (Chromium c : open) c.close();
        if (profiles != null) {
            try (var walk = Files.walk(profiles)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private Chromium chromium(Dimension size) {
        Chromium c = new Chromium(profiles, size);
        open.add(c);
        return c;
    }

    private String url(String path) {
        return "http://127.0.0.1:" + port + path;
    }

    /** Signs in through the form, as a person does; ends on the apps page. */
    private void signIn(Chromium c, String email) {
        c.get(url("/dashboard"));
        c.waiting().until(ExpectedConditions.urlContains("/dashboard/sign-in"));
        c.driver.findElement(By.name("email")).sendKeys(email);
        c.driver.findElement(By.name("password")).sendKeys(PASSWORD);
        c.driver.findElement(By.cssSelector("form button[type=submit]")).click();
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard")));
        assertClean(c, "/dashboard (after sign-in)");
    }

    private static void assertClean(Chromium c, String page) {
        assertThat(c.consoleProblems()).as("console errors or CSP violations on " + page).isEmpty();
        // a page where htmx did not load (a refused script) would pass the console check only if the
        // refusal went unreported: check it ran, on every page that loads it
        if (!c.driver.findElements(By.cssSelector("script[src*='htmx']")).isEmpty()) {
            assertThat(c.js("return typeof htmx === 'object' && htmx.version")).as("htmx loaded on " + page).asString().startsWith("2.");
        }
    }

    private void assertFits(Chromium c, String page) {
        Map<String, Long> w = c.widths();
        assertThat(w.get("scrollWidth")).as("document wider than the viewport on " + page + " " + w).isLessThanOrEqualTo(w.get("innerWidth"));
        // wide tables scroll inside their .scroll wrapper, which itself fits
        for (WebElement table : c.driver.findElements(By.tagName("table"))) {
            Object fits = c.js("const s = arguments[0].closest('.scroll');"
                    + " return s !== null && s.getBoundingClientRect().right <= window.innerWidth + 0.5"
                    + " && getComputedStyle(s).overflowX === 'auto'", table);
            assertThat(fits).as("table " + table.getAttribute("id") + " of " + page + " inside a fitting .scroll").isEqualTo(true);
        }
    }

    /**
     * The pages to check for {@code app}: the apps list, the members page, and each built section
     * of the app's navigation (checked to answer 200 or, not built yet, the dashboard's 404 page).
     * Add pages outside an app here.
     */
    private List<String> pagesOf(TestApp app, DashboardClient http, Chromium c) {
        List<String> pages = new ArrayList<>(List.of("/dashboard", "/dashboard/members"));
        String overview = "/dashboard/apps/" + app.appId();
        c.get(url(overview));
        List<String> sections = c.driver.findElements(By.cssSelector("nav.appnav a")).stream()
                .map(a -> a.getAttribute("href").replaceFirst("^https?://[^/]+", "")).toList();
        assertThat(sections).as("the app's sections").contains(overview).hasSizeGreaterThan(1);
        for (String section : sections) {
            HttpResponse<String> r = http.get(section);
            if (r.statusCode() == 200) {
                pages.add(section);
            } else {
                assertThat(r.statusCode()).as(section + ": built (200) or not yet (404)").isEqualTo(404);
            }
        }
        return pages;
    }

    /** An app with devices on three platforms (one invalid) and a dozen notifications. */
    private TestApp appWithData() {
        TestApp app = newApp();
        List<String> ios = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ios.add(api.post("/v1/devices/register", app.publicKey(),
                    "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}").json().path("device_id").asString());
        }
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"}");
        api.post("/v1/devices/register", app.publicKey(), "{\"platform\":\"web\",\"push_token\":"
                + tools.jackson.databind.json.JsonMapper.builder().build().writeValueAsString(TestTokens.webSubscription("https://push.example.net/x")) + "}");
        jdbc.sql("update devices set invalidated_at = now() where app_id = :app and id = cast(:id as uuid)")
                .param("app", app.appId()).param("id", ios.get(0)).update();
        for (int i = 0; i < 12; i++) {
            TestApi.Response created = api.send(api.request("/v1/notifications", app.serverKey())
                    .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                    .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Spring sale, reminder " + i
                            + "\",\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"all\"}}")));
            assertThat(created.status()).as(created.toString()).isEqualTo(202);
        }
        return app;
    }

    @Test
    void aMemberSignsInOpensAnAppFollowsItsSectionsAndSignsOutWithoutAConsoleError() {
        TestApp app = appWithData();
        // an owner, whom no page refuses (a page that refuses a role answers 403, and would fail the walk below)
        String email = member(app.orgId(), MemberRole.OWNER);
        Chromium c = chromium(Chromium.LAPTOP);

        signIn(c, email);
        assertThat(c.driver.findElement(By.tagName("h1")).getText()).isEqualTo(tenants.organisation(app.orgId()).name());
        assertThat(c.driver.findElement(By.cssSelector(".top .who")).getText()).contains(email);

        c.driver.findElement(By.linkText("test app")).click();
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/apps/" + app.appId())));
        assertClean(c, "the overview");
        assertThat(c.driver.findElement(By.id("subscribed")).getText()).isEqualTo("4");
        assertThat(c.driver.findElement(By.id("invalid")).getText()).isEqualTo("1");
        assertThat(c.driver.findElements(By.cssSelector("#notifications tbody tr[data-id]"))).hasSize(DashboardController.RECENT_NOTIFICATIONS);
        assertThat(c.driver.findElement(By.cssSelector("nav.appnav a[aria-current=page]")).getText()).isEqualTo("Overview");

        // every section of the app's navigation: built ones open with their own entry marked current
        DashboardClient http = signedIn(email);
        List<String> followed = new ArrayList<>();
        List<WebElement> links = c.driver.findElements(By.cssSelector("nav.appnav a"));
        Map<String, String> sections = new LinkedHashMap<>();
        for (WebElement a : links) sections.put(a.getAttribute("href"), a.getText());
        for (Map.Entry<String, String> s : sections.entrySet()) {
            String path = s.getKey().replaceFirst("^https?://[^/]+", "");
            int status = http.get(path).statusCode();
            if (status == 404) continue; // not built yet
            assertThat(status).as(path).isEqualTo(200);
            c.get(s.getKey());
            assertClean(c, path);
            assertThat(c.driver.findElement(By.cssSelector("nav.appnav a[aria-current=page]")).getText())
                    .as("current section on " + path).isEqualTo(s.getValue());
            followed.add(path);
        }
        assertThat(followed).contains("/dashboard/apps/" + app.appId());

        c.driver.findElement(By.linkText("Members")).click();
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/members")));
        assertClean(c, "/dashboard/members");
        assertThat(c.driver.findElement(By.id("members")).getText()).contains(email);

        c.driver.findElement(By.cssSelector(".top button.link")).click(); // Sign out
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/sign-in?signed-out")));
        assertThat(c.driver.findElement(By.cssSelector("p.note")).getText()).contains("You are signed out");
        assertClean(c, "sign-in after sign-out");
        c.get(url("/dashboard/apps/" + app.appId()));
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/sign-in")));
    }

    @Test
    void anOwnersInviteLinkOpensInASecondBrowserWhereTheNewMemberJoinsAndSignsIn() {
        TestApp app = newApp();
        String owner = member(app.orgId(), MemberRole.OWNER);
        Chromium c = chromium(Chromium.LAPTOP);
        signIn(c, owner);
        c.driver.findElement(By.linkText("Members")).click();
        c.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/members")));
        new Select(c.driver.findElement(By.id("invite-role"))).selectByValue("admin");
        c.driver.findElement(By.xpath("//button[normalize-space()='Make an invite link']")).click();
        String link = c.waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("invite-link"))).getText();
        assertClean(c, "the members page with an invite link");
        assertThat(link).startsWith(url("/dashboard/join?token="));

        Chromium other = chromium(Chromium.PHONE);
        other.get(link);
        assertThat(other.driver.findElement(By.tagName("h1")).getText()).isEqualTo("Join the organisation");
        assertClean(other, "join");
        String email = TestTokens.unique("invited").toLowerCase() + "@example.com";
        other.driver.findElement(By.name("email")).sendKeys(email);
        other.driver.findElement(By.name("password")).sendKeys(PASSWORD);
        other.driver.findElement(By.name("password_confirmation")).sendKeys(PASSWORD);
        other.driver.findElement(By.cssSelector("form button[type=submit]")).click();
        other.waiting().until(ExpectedConditions.urlToBe(url("/dashboard/sign-in?joined")));
        assertThat(other.driver.findElement(By.cssSelector("p.note")).getText()).contains("Your password is set");
        signIn(other, email);
        assertThat(other.driver.findElement(By.cssSelector(".top .who")).getText()).isEqualTo(email + " (admin)");
        other.get(url("/dashboard/members"));
        assertClean(other, "members, as the new admin");
        assertThat(other.driver.findElements(By.xpath("//button[normalize-space()='Make an invite link']"))).as("admins do not invite").isEmpty();

        // the link worked once
        Chromium third = chromium(Chromium.LAPTOP);
        third.get(link);
        assertThat(third.driver.findElement(By.tagName("h1")).getText()).isEqualTo("Not found");
        third.consoleProblems(); // the 404 of the document itself is logged as a failed load
    }

    @Test
    void htmxRequestsCarryTheCsrfTokenThatDashboardJsAdds() {
        // No page uses htmx yet: the check drives htmx.ajax itself on a signed-in page, as an hx-post would.
        TestApp app = newApp();
        String owner = member(app.orgId(), MemberRole.OWNER);
        Chromium c = chromium(Chromium.LAPTOP);
        signIn(c, owner);
        c.get(url("/dashboard/members"));
        String ajax = "const done = arguments[arguments.length - 1];"
                + " const probe = document.createElement('div'); probe.id = 'probe'; document.querySelector('main').append(probe);"
                + " let status = 0; document.body.addEventListener('htmx:afterRequest', e => status = e.detail.xhr.status, {once: true});"
                + " htmx.ajax('POST', '/dashboard/members/invites', {target: '#probe', select: '#invite-link', values: {role: 'member'}})"
                + "   .then(() => done(status), err => done('error ' + err));";
        Object status = c.driver.executeAsyncScript(ajax);
        assertThat(status).as("htmx POST with the token dashboard.js adds").isEqualTo(200L);
        assertThat(c.driver.findElement(By.id("probe")).getText()).startsWith(url("/dashboard/join?token="));
        assertThat(invites(app)).isEqualTo(1);
        assertClean(c, "members after an htmx POST");

        // the same request without the page's token (the meta element gone) is refused, and changes nothing
        c.get(url("/dashboard/members"));
        c.js("document.querySelector('meta[name=\"csrf-token\"]').remove()");
        Object refused = c.driver.executeAsyncScript(ajax);
        assertThat(refused).isEqualTo(403L);
        assertThat(invites(app)).isEqualTo(1);
        c.consoleProblems(); // the refused request is logged as a failed load
    }

    private int invites(TestApp app) {
        return jdbc.sql("select count(*) from member_links where org_id = :org and kind = 'invite'")
                .param("org", app.orgId()).query(Integer.class).single();
    }

    @Test
    void everyPageFitsAPhoneAndALaptopWithTablesScrollingInside() {
        TestApp app = appWithData();
        String owner = member(app.orgId(), MemberRole.OWNER);
        DashboardClient http = signedIn(owner);
        Chromium c = chromium(Chromium.LAPTOP);
        signIn(c, owner);
        List<String> pages = pagesOf(app, http, c);
        // pages before sign-in, and the join page of an invite link
        HttpResponse<String> invite = http.submit("/dashboard/members", "/dashboard/members/invites", Map.of("role", "member"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("id=\"invite-link\">([^<]+)<").matcher(invite.body());
        assertThat(m.find()).isTrue();
        String join = m.group(1).replaceFirst("^https?://[^/]+", "").replace("&amp;", "&");

        for (Dimension size : List.of(Chromium.PHONE, Chromium.LAPTOP)) {
            c.resize(size);
            assertThat(c.js("return window.innerWidth")).isEqualTo((long) size.width);
            for (String page : pages) {
                c.get(url(page));
                assertThat(c.driver.getCurrentUrl()).as("still signed in").isEqualTo(url(page));
                assertClean(c, page + " at " + size);
                assertFits(c, page + " at " + size);
            }
        }
        Chromium anonymous = chromium(Chromium.PHONE);
        for (Dimension size : List.of(Chromium.PHONE, Chromium.LAPTOP)) {
            anonymous.resize(size);
            for (String page : List.of("/dashboard/sign-in", "/dashboard/sign-in?error", join)) {
                anonymous.get(url(page));
                assertClean(anonymous, page + " at " + size);
                assertFits(anonymous, page + " at " + size);
            }
        }
        // the check can fail: a page made wider than a phone (through the CSSOM, which the policy allows) is caught
        c.resize(Chromium.PHONE);
        c.get(url("/dashboard"));
        c.js("const wide = document.createElement('div'); wide.textContent = 'x'; wide.style.width = '2000px';"
                + " document.querySelector('main').append(wide);");
        assertThat(c.widths().get("scrollWidth")).isGreaterThan(c.widths().get("innerWidth"));
    }
}
