package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The migration page (issue 27 part 3) over real HTTP: multipart uploads of template and legacy CSV
 * files as a browser sends them, what is staged (hashes only) and skipped (with reasons and lines),
 * refusals that change nothing, owners only, history and audit, and the claim at registration.
 */
class DashboardMigrationTests extends DashboardTest {

    private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

    @Autowired
    JdbcClient jdbc;

    private static String page(TestApp app) {
        return "/dashboard/apps/" + app.appId() + "/migration";
    }

    private HttpResponse<String> upload(DashboardClient browser, TestApp app, String fileName, byte[] csv) {
        return browser.upload(page(app), page(app), Map.of("provider", "onesignal"), "file", fileName, csv);
    }

    private static byte[] withBom(String csv) {
        byte[] text = csv.getBytes(StandardCharsets.UTF_8);
        byte[] all = new byte[BOM.length + text.length];
        System.arraycopy(BOM, 0, all, 0, BOM.length);
        System.arraycopy(text, 0, all, BOM.length, text.length);
        return all;
    }

    private long staged(TestApp app) {
        return jdbc.sql("select count(*) from migration_staged_devices where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    private long imports(TestApp app) {
        return jdbc.sql("select count(*) from migration_imports where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    private long audits(TestApp app) {
        return jdbc.sql("select count(*) from audit_log where app_id = :app and action = 'migration.import'")
                .param("app", app.appId()).query(Long.class).single();
    }

    private static byte[] sha256(String s) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    }

    /** No column of any row of these tables holds {@code token} (in any case). */
    private void assertNowhere(TestApp app, String token) {
        for (String table : List.of("migration_staged_devices", "migration_imports", "audit_log")) {
            assertThat(jdbc.sql("select count(*) from " + table + " t where t.app_id = :app and lower(t::text) like :token")
                    .param("app", app.appId()).param("token", "%" + token.toLowerCase() + "%").query(Long.class).single())
                    .as(table).isZero();
        }
    }

    @Test
    void aTemplateCsvWithBomCrlfAndQuotedFieldsIsStagedAsHashesAndARegistrationClaimsIt() throws Exception {
        TestApp app = newApp();
        String owner = member(app.orgId(), MemberRole.OWNER);
        DashboardClient browser = signedIn(owner);
        UUID sourceUuid = UUID.randomUUID();
        String ios = TestTokens.apns().toUpperCase();
        String android = TestTokens.fcm();
        String csv = "source_device_id,push_token,platform,external_user_id,subscribed,app_version,device_model,os_version,locale,timezone,tags_json\r\n"
                + sourceUuid + "," + ios + ",ios,\"user, with comma\",true,1.2,\"iPhone \"\"15\"\"\",17.1,en-GB,Europe/London,\"{\"\"plan\"\":\"\"gold\"\",\"\"n\"\":3}\"\r\n"
                + "legacy-7," + android + ",ANDROID,,,,Pixel 8,14,de,+02:00,\"{\"\"plan\"\":\r\n\"\"silver\"\"}\"\r\n" // lines 3-4: a quoted line break; numeric zone ignored
                + "s-4," + TestTokens.apns() + ",ios,,false,,,,,,\r\n"                               // 5 unsubscribed
                + "s-5,\"" + TestTokens.webSubscription("https://push.example.com/x").replace("\"", "\"\"") + "\",web,,,,,,,,\r\n" // 6
                + "s-6,zz,ios,,,,,,,,\r\n"                                                           // 7 not an APNs token
                + "s-7," + ios.toLowerCase() + ",ios,,,,,,,,\r\n"                                     // 8 the token of line 2 again
                + "s-8," + TestTokens.fcm() + ",android,,,,,,,,\"[1,2]\"\r\n"                         // 9 tags not an object
                + "," + TestTokens.fcm() + ",android,,,,,,,,\r\n";                                   // 10 no source id

        HttpResponse<String> r = upload(browser, app, "devices.csv", withBom(csv));

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String html = r.body();
        assertThat(html).contains("id=\"rows-staged\">2<", "id=\"rows-skipped\">6<", "devices.csv");
        for (String[] skip : List.of(new String[] {"5", "unsubscribed"}, new String[] {"6", "unsupported_platform"},
                new String[] {"7", "invalid_push_token"}, new String[] {"8", "duplicate_in_file"}, new String[] {"9", "invalid_tags"},
                new String[] {"10", "missing_source_id"})) {
            assertThat(html).containsPattern("data-line=\"" + skip[0] + "\">\\s*<td class=\"num\">" + skip[0] + "</td><td>" + skip[1] + "</td>");
            assertThat(html).contains("data-reason=\"" + skip[1] + "\"");
        }
        assertThat(html).contains("same push token as line 2");
        assertThat(html).doesNotContain(ios).doesNotContain(ios.toLowerCase()).doesNotContain(android);

        // only hashes: the token's identity hash (lower-case hex for APNs), the metadata as written
        var rows = jdbc.sql("""
                        select platform, token_hash, source_provider, source_device_id, external_user_id, app_version, device_model,
                               os_version, locale, timezone, tags::text as tags, import_id
                        from migration_staged_devices where app_id = :app order by source_device_id""")
                .param("app", app.appId()).query().listOfRows();
        assertThat(rows).hasSize(2);
        Map<String, Object> first = rows.get(0).get("source_device_id").equals("legacy-7") ? rows.get(1) : rows.get(0);
        Map<String, Object> second = first == rows.get(0) ? rows.get(1) : rows.get(0);
        assertThat(first.get("source_device_id")).isEqualTo(sourceUuid.toString());
        assertThat((byte[]) first.get("token_hash")).isEqualTo(sha256(ios.toLowerCase()));
        assertThat(first).containsEntry("platform", "ios").containsEntry("source_provider", "onesignal")
                .containsEntry("external_user_id", "user, with comma").containsEntry("app_version", "1.2")
                .containsEntry("device_model", "iPhone \"15\"").containsEntry("os_version", "17.1").containsEntry("locale", "en-GB")
                .containsEntry("timezone", "Europe/London");
        assertThat((String) first.get("tags")).isEqualTo("{\"n\": \"3\", \"plan\": \"gold\"}");
        assertThat((byte[]) second.get("token_hash")).isEqualTo(sha256(android));
        assertThat(second).containsEntry("platform", "android").containsEntry("device_model", "Pixel 8").containsEntry("tags", "{\"plan\": \"silver\"}")
                .containsEntry("timezone", null).containsEntry("external_user_id", null);
        assertNowhere(app, ios);
        assertNowhere(app, android);

        // history and audit, in the same transaction as the rows
        var history = jdbc.sql("select member_email, file_name, format, rows_read, rows_staged, skipped::text as skipped from migration_imports where app_id = :app")
                .param("app", app.appId()).query().singleRow();
        assertThat(history).containsEntry("member_email", owner).containsEntry("file_name", "devices.csv").containsEntry("format", "template")
                .containsEntry("rows_read", 8L).containsEntry("rows_staged", 2L);
        assertThat((String) history.get("skipped")).contains("\"unsubscribed\": 1", "\"duplicate_in_file\": 1", "\"invalid_push_token\": 1");
        var audit = jdbc.sql("select actor, member_id, target_type, target_id from audit_log where app_id = :app and action = 'migration.import'")
                .param("app", app.appId()).query().singleRow();
        assertThat(audit).containsEntry("actor", "member")
                .containsEntry("member_id", jdbc.sql("select id from members where email = :e").param("e", owner).query(UUID.class).single())
                .containsEntry("target_type", "migration_import");
        assertThat(audit.get("target_id")).isEqualTo(rows.get(0).get("import_id").toString());
        HttpResponse<String> again = browser.get(page(app));
        assertThat(again.body()).contains("<td>devices.csv</td>", owner, "unsubscribed 1").contains("id=\"upload\"");

        // a registration with the token claims the staged record: the source UUID becomes the device id
        TestApi.Response registered = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + ios.toLowerCase() + "\"}");
        assertThat(registered.status()).as(registered.toString()).isEqualTo(201);
        assertThat(registered.json().path("device_id").asString()).isEqualTo(sourceUuid.toString());
        assertThat(registered.json().path("external_user_id").asString()).isEqualTo("user, with comma");
        assertThat(registered.json().path("timezone").asString()).isEqualTo("Europe/London");
        assertThat(registered.json().path("migrated_from").path("provider").asString()).isEqualTo("onesignal");
        TestApi.Response claimedAndroid = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + android + "\"}");
        assertThat(claimedAndroid.status()).isEqualTo(201);
        assertThat(claimedAndroid.json().path("migrated_from").path("source_id").asString()).isEqualTo("legacy-7");
        // a source id that is not a UUID: the stable UUID v5 of "provider:source id" (docs/api-decisions.md "Migration claim")
        assertThat(claimedAndroid.json().path("device_id").asString()).isEqualTo(uuidV5("onesignal:legacy-7").toString());
        assertThat(jdbc.sql("select claimed_device_id from migration_staged_devices where app_id = :app and source_device_id = 'legacy-7'")
                .param("app", app.appId()).query(UUID.class).single().toString()).isEqualTo(claimedAndroid.json().path("device_id").asString());
        assertThat(browser.get(page(app)).body()).containsPattern("<strong>2</strong> staged ·\\s*<strong>2</strong> claimed");
    }

    /** RFC 4122 version 5 in the migration namespace, written out here so the test does not share the code it checks. */
    private static UUID uuidV5(String name) throws Exception {
        UUID ns = UUID.fromString("6f1c2a53-52c5-4f5e-9d8a-4b6c0e1f7a10");
        MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
        sha1.update(java.nio.ByteBuffer.allocate(16).putLong(ns.getMostSignificantBits()).putLong(ns.getLeastSignificantBits()).array());
        byte[] h = sha1.digest(name.getBytes(StandardCharsets.UTF_8));
        h[6] = (byte) ((h[6] & 0x0f) | 0x50);
        h[8] = (byte) ((h[8] & 0x3f) | 0x80);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(h, 0, 16);
        return new UUID(b.getLong(), b.getLong());
    }

    @Test
    void aLegacyExportIsRecognisedByItsHeadingsWithDeviceTypesZeroAndOne() throws Exception {
        TestApp app = newApp();
        DashboardClient browser = signedIn(app, MemberRole.OWNER);
        UUID id = UUID.randomUUID();
        String ios = TestTokens.apns();
        String android = TestTokens.fcm();
        String csv = "id,identifier,device_type,external_user_id,invalid_identifier,notification_types,game_version,device_os,tags\r\n"
                + id + "," + ios + ",0,u1,f,1,2.0,16.4,\"{\"\"a\"\":\"\"b\"\"}\"\r\n"
                + "id-2," + TestTokens.fcm() + ",1,,f,-2,,,\r\n"        // 3 unsubscribed
                + "id-3," + TestTokens.fcm() + ",1,,t,1,,,\r\n"         // 4 invalid identifier
                + "id-4,something,5,,f,1,,,\r\n"                        // 5 a device type that is neither
                + "\"id-5\",\"" + android + "\",\"1\",\"\",\"false\",\"1\",\"3.1\",\"13\",\"\"\r\n";

        HttpResponse<String> r = upload(browser, app, "export.csv", withBom(csv));

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body()).contains("id=\"rows-staged\">2<", "id=\"rows-skipped\">3<", "<span>legacy</span>");
        assertThat(r.body()).containsPattern("data-line=\"3\">\\s*<td class=\"num\">3</td><td>unsubscribed</td>")
                .containsPattern("data-line=\"4\">\\s*<td class=\"num\">4</td><td>invalid_identifier</td>")
                .containsPattern("data-line=\"5\">\\s*<td class=\"num\">5</td><td>unsupported_platform</td>");
        var rows = jdbc.sql("select platform, source_device_id, external_user_id, app_version, os_version, tags::text as tags "
                        + "from migration_staged_devices where app_id = :app order by platform")
                .param("app", app.appId()).query().listOfRows();
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).containsEntry("platform", "android").containsEntry("source_device_id", "id-5")
                .containsEntry("app_version", "3.1").containsEntry("os_version", "13");
        assertThat(rows.get(1)).containsEntry("platform", "ios").containsEntry("source_device_id", id.toString())
                .containsEntry("external_user_id", "u1").containsEntry("app_version", "2.0").containsEntry("os_version", "16.4")
                .containsEntry("tags", "{\"a\": \"b\"}");
        assertNowhere(app, ios);
        assertNowhere(app, android);
    }

    @Test
    void aFileThatIsNotValidChangesNothing() {
        TestApp app = newApp();
        DashboardClient browser = signedIn(app, MemberRole.OWNER);
        String header = "source_device_id,push_token,platform\r\n";
        Map<String, byte[]> files = Map.of(
                "an unclosed quote after valid rows", (header + "a," + TestTokens.apns() + ",ios\r\nb,\"" + TestTokens.fcm() + ",android\r\n")
                        .getBytes(StandardCharsets.UTF_8),
                "unknown headings", ("device,token\r\n1," + TestTokens.apns() + "\r\n").getBytes(StandardCharsets.UTF_8),
                "a header only", header.getBytes(StandardCharsets.UTF_8),
                "not UTF-8", (header + "caf\u00e9," + TestTokens.apns() + ",ios\r\n").getBytes(StandardCharsets.ISO_8859_1),
                "no file at all", new byte[0]);
        Map<String, String> messages = Map.of("an unclosed quote after valid rows", "not valid CSV near line",
                "unknown headings", "must name the template columns", "a header only", "no device rows",
                "not UTF-8", "not UTF-8", "no file at all", "Choose a CSV file");
        files.forEach((what, bytes) -> {
            HttpResponse<String> r = upload(browser, app, "bad.csv", bytes);
            assertThat(r.statusCode()).as(what).isEqualTo(422);
            assertThat(r.body()).as(what).contains("Nothing was imported.", messages.get(what));
        });
        assertThat(staged(app)).isZero();
        assertThat(imports(app)).isZero();
        assertThat(audits(app)).isZero();
    }

    @Test
    void anOwnershipConflictChangesNothingAndTheSameFileAgainStagesNothingTwice() {
        TestApp first = newApp();
        TestApp second = newApp();
        String token = TestTokens.apns();
        String csv = "source_device_id,push_token,platform\r\nx-1," + token + ",ios\r\nx-2," + TestTokens.fcm() + ",android\r\n";
        DashboardClient owner = signedIn(first, MemberRole.OWNER);
        assertThat(upload(owner, first, "a.csv", csv.getBytes(StandardCharsets.UTF_8)).statusCode()).isEqualTo(200);
        assertThat(staged(first)).isEqualTo(2);

        // the same file again: already staged, skipped, nothing new
        HttpResponse<String> again = upload(owner, first, "a.csv", csv.getBytes(StandardCharsets.UTF_8));
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).contains("id=\"rows-staged\">0<", "data-reason=\"already_staged\"");
        assertThat(staged(first)).isEqualTo(2);

        // the token under another source id in the same app, or in another organisation's app: refused whole
        String fresh = TestTokens.fcm();
        String otherSource = "source_device_id,push_token,platform\r\nfine," + fresh + ",android\r\nx-9," + token + ",ios\r\n";
        HttpResponse<String> sameApp = upload(owner, first, "b.csv", otherSource.getBytes(StandardCharsets.UTF_8));
        assertThat(sameApp.statusCode()).isEqualTo(422);
        assertThat(sameApp.body()).contains("Nothing was imported.", "1 row conflict", "the push token is staged for source id onesignal:x-1")
                .containsPattern("<td class=\"num\">3</td><td>");
        String reused = "source_device_id,push_token,platform\r\nx-1," + TestTokens.apns() + ",ios\r\n";
        assertThat(upload(owner, first, "c.csv", reused.getBytes(StandardCharsets.UTF_8)).body())
                .contains("the source id is staged for another push token");
        assertThat(staged(first)).isEqualTo(2);
        assertThat(imports(first)).isEqualTo(2);

        DashboardClient outsider = signedIn(second, MemberRole.OWNER);
        HttpResponse<String> otherOrg = upload(outsider, second, "d.csv", otherSource.getBytes(StandardCharsets.UTF_8));
        assertThat(otherOrg.statusCode()).isEqualTo(422);
        assertThat(otherOrg.body()).contains("the push token is staged for another app").doesNotContain(first.appId().toString());
        assertThat(staged(second)).isZero();
        assertThat(imports(second)).isZero();
        assertThat(audits(second)).isZero();
    }

    @Test
    void adminsAndMembersSeeTheHistoryButAreRefusedTheUploadAndOtherOrganisationsGetNotFound() {
        TestApp app = newApp();
        String csv = "source_device_id,push_token,platform\r\nr-1," + TestTokens.apns() + ",ios\r\n";
        for (MemberRole role : List.of(MemberRole.ADMIN, MemberRole.MEMBER)) {
            DashboardClient browser = signedIn(app, role);
            HttpResponse<String> page = browser.get(page(app));
            assertThat(page.statusCode()).isEqualTo(200);
            assertThat(page.body()).contains("id=\"history\"", "id=\"owners-only\"").doesNotContain("id=\"upload\"").doesNotContain("type=\"file\"");
            HttpResponse<String> refused = upload(browser, app, "r.csv", csv.getBytes(StandardCharsets.UTF_8));
            assertThat(refused.statusCode()).as(role.value()).isEqualTo(403);
            assertThat(refused.body()).contains("Your role does not allow this.");
        }
        // an owner whose role was lowered after signing in is refused too (the stored role counts)
        String demoted = member(app.orgId(), MemberRole.OWNER);
        DashboardClient stale = signedIn(demoted);
        String token = DashboardClient.csrf(stale.get(page(app)).body());
        jdbc.sql("update members set role = 'member' where email = :e").param("e", demoted).update();
        assertThat(stale.multipart(page(app), Map.of("_csrf", token), "file", "r.csv", csv.getBytes(StandardCharsets.UTF_8)).statusCode())
                .isEqualTo(403);
        assertThat(staged(app)).isZero();

        TestApp other = newApp();
        DashboardClient outsider = signedIn(other, MemberRole.OWNER);
        assertThat(outsider.get(page(app)).statusCode()).isEqualTo(404);
        assertThat(outsider.upload(page(other), page(app), Map.of(), "file", "r.csv", csv.getBytes(StandardCharsets.UTF_8)).statusCode())
                .isEqualTo(404);
        assertThat(staged(app)).isZero();
        assertThat(imports(app)).isZero();
    }

    @Test
    void aBodyLargerThanTheLimitIsRefusedBeforeItIsRead() {
        TestApp app = newApp();
        DashboardClient browser = signedIn(app, MemberRole.OWNER);
        // every dashboard form but the upload: 1 MB
        byte[] big = new byte[(int) DashboardUploadLimits.FORM_BYTES + 1];
        java.util.Arrays.fill(big, (byte) 'a');
        HttpResponse<String> r = browser.upload(page(app), "/dashboard/members/invites", Map.of("role", "member"), "file", "x.csv", big);
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(r.body()).contains("larger than 1 MB");
        // the upload itself is limited by the declared length too (the limit's figure is on the page)
        assertThat(browser.get(page(app)).body()).containsPattern("At most <span>200</span> MB and\\s*<span>1,000,000</span> rows");
    }
}
