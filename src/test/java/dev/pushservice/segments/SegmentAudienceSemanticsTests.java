package dev.pushservice.segments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.segments.Filter.Condition;
import dev.pushservice.segments.Filter.Group;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.json.JsonMapper;

/**
 * Estimates agree with the filter semantics as documented (docs/api-decisions.md, "Segments"),
 * evaluated here device by device in plain Java over a random population: whatever SQL the compiler
 * writes (hashed user sets or joined ones, event windows inside joins, {@code any} groups), a
 * device counts exactly when the filter is true for it. Users, devices and latest events are written
 * directly, as registration and event ingest would, so the population can hold every combination
 * (devices without a locale, users without tags, disabled and invalidated devices, no user).
 */
class SegmentAudienceSemanticsTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final List<String> EVENT_KEYS = List.of("opened", "clicked", "custom:x", "custom:purchase");

    @Autowired
    JdbcClient jdbc;
    @Autowired
    FilterCompiler compiler;
    @Autowired
    SegmentRepository segments;
    @Autowired
    AppSettingsService settings;

    record User(UUID id, String locale, String timezone, Map<String, String> tags) {
    }

    record Device(UUID id, User user, String platform, String locale, String timezone, String appVersion, boolean enabled,
                  boolean invalidated, Instant createdAt, Instant lastSeenAt, Map<String, Instant> events) {
    }

    record Population(TestApp app, List<Device> devices, Instant now) {
    }

    @Test
    void randomFiltersCountTheDevicesTheDocumentedSemanticsSelect() {
        Random random = new Random(20261121);
        Population p = population(random);
        List<String> leaves = leaves(p.now());
        List<Long> counts = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            String filter = "{\"" + (random.nextBoolean() ? "any" : "all") + "\":["
                    + IntStream.range(0, 2 + random.nextInt(3)).mapToObj(n -> tree(random, leaves, 2)).collect(Collectors.joining(",")) + "]}";
            counts.add(assertCountsAsDocumented(p, filter));
        }
        // the filters select all sorts of audiences, not just nothing or everything
        assertThat(counts.stream().filter(n -> n > 0).count()).isGreaterThan(counts.size() / 2);
        assertThat(counts.stream().distinct().count()).isGreaterThan(counts.size() / 4);
    }

    @Test
    void anyWithOverlappingBranchesCountsEachDeviceOnce() {
        Population p = population(new Random(7));
        String gold = cond("tag.plan", "eq", "\"gold\"");
        String ios = cond("platform", "eq", "\"ios\"");
        String opened = cond("event.opened", "within_days", "30");
        String filter = "{\"any\":[" + gold + "," + ios + ",{\"all\":[" + ios + "," + opened + "]}," + opened + "]}";
        long count = assertCountsAsDocumented(p, filter);
        long sum = assertCountsAsDocumented(p, gold) + assertCountsAsDocumented(p, ios) + assertCountsAsDocumented(p, opened);
        // the branches share devices (else this proves nothing), and each is counted once
        assertThat(count).isPositive().isLessThan(sum);
        assertThat(count).isEqualTo(p.devices().stream()
                .filter(d -> counted(d) && (plan(d, "gold") || d.platform().equals("ios") || within(d, "opened", 30, p.now())))
                .count());
    }

    @Test
    void anyThatNoDeviceMatchesCountsZero() {
        Population p = population(new Random(11));
        String filter = "{\"any\":[" + cond("tag.plan", "eq", "\"nobody\"") + "," + cond("event.dismissed", "within_days", "3650") + ","
                + "{\"all\":[" + cond("platform", "eq", "\"web\"") + "," + cond("platform", "neq", "\"web\"") + "]},"
                + cond("custom_event.never", "exists", null) + "," + cond("locale", "in", "[\"xx\",\"yy\"]") + "]}";
        assertThat(assertCountsAsDocumented(p, filter)).isZero();
    }

    @Test
    void negatedOperatorsInsideAnyMatchDevicesWithoutTheValue() {
        Population p = population(new Random(13));
        List<String> negated = List.of(cond("custom_event.x", "not_exists", null), cond("event.opened", "not_within_days", "7"),
                cond("tag.plan", "neq", "\"gold\""), cond("tag.plan", "not_in", "[\"gold\",\"silver\"]"), cond("tag.vip", "not_exists", null),
                cond("locale", "not_in", "[\"de\",\"fr\"]"), cond("locale", "not_exists", null), cond("timezone", "neq", "\"UTC\""),
                cond("app_version", "not_exists", null), cond("app_version", "not_in", "[\"3.2\"]"), cond("platform", "not_in", "[\"ios\"]"));
        for (int i = 0; i < negated.size(); i++) {
            String a = negated.get(i);
            String b = negated.get((i + 1) % negated.size());
            String c = negated.get((i + 4) % negated.size());
            assertCountsAsDocumented(p, "{\"any\":[" + a + "," + b + "]}");
            assertCountsAsDocumented(p, "{\"any\":[{\"all\":[" + a + "," + cond("platform", "eq", "\"android\"") + "]},"
                    + "{\"all\":[" + c + "," + cond("event.clicked", "exists", null) + "]}]}");
        }
        // lapsed users of an event, or devices that never had the other: negations of missing rows match
        long n = assertCountsAsDocumented(p, "{\"any\":[{\"all\":[" + cond("event.opened", "exists", null) + ","
                + cond("event.opened", "not_within_days", "7") + "]}," + cond("custom_event.purchase", "not_exists", null) + "]}");
        assertThat(n).isPositive();
    }

    /**
     * Asserts that the API's estimate and the compiled SQL in every user-set form count what the
     * documented semantics select in this population, and returns that count.
     */
    private long assertCountsAsDocumented(Population p, String json) {
        Filter filter = FilterParser.parse(JSON.readTree(json), "filter");
        ZoneId zone = ZoneId.of(settings.read(p.app().appId()).timezone());
        TestApi.Response r = api.post("/v1/segments/estimate", p.app().serverKey(), "{\"filter\":" + json + "}");
        assertThat(r.status()).as(json + " -> " + r).isEqualTo(200);
        long hashed = segments.countAudience(p.app().appId(), compiler.compile(p.app().appId(), filter, "sf", FilterCompiler.UserSets.HASHED));
        long joined = segments.countAudience(p.app().appId(), compiler.compile(p.app().appId(), filter, "sf", FilterCompiler.UserSets.JOINED));
        long probed = segments.countAudience(p.app().appId(), compiler.compile(p.app().appId(), filter, "sf", FilterCompiler.UserSets.PROBED));
        Instant now = Instant.now();
        long expected = p.devices().stream().filter(d -> counted(d) && matches(filter, d, zone, now)).count();
        assertThat(List.of(r.json().path("estimated_recipients").asLong(), hashed, joined, probed)).as(json).containsOnly(expected);
        return expected;
    }

    // ---- the documented semantics, device by device ----

    private static boolean counted(Device d) {
        return d.enabled() && !d.invalidated() && d.user() != null;
    }

    private static boolean matches(Filter f, Device d, ZoneId zone, Instant now) {
        return switch (f) {
            case Group g -> g.all() ? g.children().stream().allMatch(c -> matches(c, d, zone, now))
                    : g.children().stream().anyMatch(c -> matches(c, d, zone, now));
            case Condition c -> condition(c, d, zone, now);
        };
    }

    private static boolean condition(Condition c, Device d, ZoneId zone, Instant now) {
        Object v = c.value();
        return switch (c.field().kind()) {
            case PLATFORM -> text(c, d.platform());
            case LOCALE -> text(c, d.locale() != null ? d.locale() : d.user().locale());
            case TIMEZONE -> text(c, d.timezone() != null ? d.timezone() : d.user().timezone());
            case ENABLED -> switch (c.operator()) {
                case EQ -> d.enabled() == (Boolean) v;
                case NEQ -> d.enabled() != (Boolean) v;
                case IN -> ((List<?>) v).contains(d.enabled());
                case NOT_IN -> !((List<?>) v).contains(d.enabled());
                case CONTAINS -> Boolean.toString(d.enabled()).contains((String) v);
                case GT, GTE, LT, LTE -> order(c, Boolean.compare(d.enabled(), (Boolean) v));
                case EXISTS -> true;
                case NOT_EXISTS -> false;
                default -> throw new IllegalStateException(c.toString());
            };
            case CREATED_AT -> instant(c, d.createdAt());
            case LAST_SEEN_AT -> instant(c, d.lastSeenAt());
            case APP_VERSION -> {
                if (!c.operator().isRange() || !FilterParser.isVersion((String) v)) yield text(c, d.appVersion());
                List<BigInteger> key = versionKey(d.appVersion());
                yield key != null && order(c, compareVersions(key, versionKey((String) v)));
            }
            case TAG -> {
                String tag = d.user().tags().get(c.field().key());
                if (!c.operator().isRange()) yield text(c, tag);
                if (tag == null) yield false;
                boolean numbers = NUMBER.matcher(tag).matches() && NUMBER.matcher((String) v).matches();
                yield order(c, numbers ? new BigDecimal(tag).compareTo(new BigDecimal((String) v)) : tag.compareTo((String) v));
            }
            case EVENT -> event(c, d.events().get(c.field().key()), zone, now);
            case CUSTOM_EVENT -> event(c, d.events().get("custom:" + c.field().key()), zone, now);
        };
    }

    /** Text operators; {@code neq}, {@code not_in} and {@code not_exists} match a missing value. */
    private static boolean text(Condition c, String s) {
        Object v = c.value();
        return switch (c.operator()) {
            case EQ -> s != null && s.equals(v);
            case NEQ -> !Objects.equals(s, v);
            case IN -> s != null && ((List<?>) v).contains(s);
            case NOT_IN -> s == null || !((List<?>) v).contains(s);
            case CONTAINS -> s != null && s.contains((String) v);
            case EXISTS -> s != null;
            case NOT_EXISTS -> s == null;
            case GT, GTE, LT, LTE -> s != null && order(c, s.compareTo((String) v));
            default -> throw new IllegalStateException(c.toString());
        };
    }

    /** Timestamps: instants compare, {@code contains} tests the UTC text with microseconds. */
    private static boolean instant(Condition c, Instant at) {
        Object v = c.value();
        return switch (c.operator()) {
            case EQ -> at.equals(v);
            case NEQ -> !at.equals(v);
            case IN -> ((List<?>) v).contains(at);
            case NOT_IN -> !((List<?>) v).contains(at);
            case CONTAINS -> java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
                    .format(at.atOffset(ZoneOffset.UTC)).contains((String) v);
            case GT, GTE, LT, LTE -> order(c, at.compareTo((Instant) v));
            case EXISTS -> true;
            case NOT_EXISTS -> false;
            default -> throw new IllegalStateException(c.toString());
        };
    }

    private static boolean order(Condition c, int cmp) {
        return switch (c.operator()) {
            case GT -> cmp > 0;
            case GTE -> cmp >= 0;
            case LT -> cmp < 0;
            case LTE -> cmp <= 0;
            default -> throw new IllegalStateException(c.toString());
        };
    }

    /** {@code within_days N}: since the start of the day N days ago in the app's time zone. */
    private static boolean event(Condition c, Instant last, ZoneId zone, Instant now) {
        Instant since = c.value() == null ? null
                : now.atZone(zone).toLocalDate().minusDays((Integer) c.value()).atStartOfDay(zone).toInstant();
        return switch (c.operator()) {
            case EXISTS -> last != null;
            case NOT_EXISTS -> last == null;
            case WITHIN_DAYS -> last != null && !last.isBefore(since);
            case NOT_WITHIN_DAYS -> last == null || last.isBefore(since);
            default -> throw new IllegalStateException(c.toString());
        };
    }

    private static final Pattern NUMBER = Pattern.compile("-?[0-9]{1,30}(\\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?");
    private static final Pattern VERSION_NUMBERS = Pattern.compile("^[0-9]+(?:\\.[0-9]+)*");

    /** The leading numbers of a version without trailing zero parts (2.10.0-beta: 2, 10); null when it starts otherwise. */
    private static List<BigInteger> versionKey(String version) {
        if (version == null) return null;
        Matcher m = VERSION_NUMBERS.matcher(version);
        if (!m.find()) return null;
        List<BigInteger> parts = new ArrayList<>(Pattern.compile("\\.").splitAsStream(m.group()).map(BigInteger::new).toList());
        while (parts.size() > 1 && parts.getLast().signum() == 0) parts.removeLast();
        return parts;
    }

    private static int compareVersions(List<BigInteger> a, List<BigInteger> b) {
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            int c = a.get(i).compareTo(b.get(i));
            if (c != 0) return c;
        }
        return Integer.compare(a.size(), b.size());
    }

    private static boolean plan(Device d, String plan) {
        return plan.equals(d.user().tags().get("plan"));
    }

    private static boolean within(Device d, String key, int days, Instant now) {
        Instant last = d.events().get(key);
        return last != null && !last.isBefore(now.atZone(ZoneOffset.UTC).toLocalDate().minusDays(days).atStartOfDay(ZoneOffset.UTC).toInstant());
    }

    // ---- filters ----

    private static String cond(String field, String operator, String value) {
        return SegmentFilterGrammarTests.cond(field, operator, value);
    }

    private static String tree(Random random, List<String> leaves, int depth) {
        if (depth == 0 || random.nextInt(100) < 40) return leaves.get(random.nextInt(leaves.size()));
        return "{\"" + (random.nextBoolean() ? "any" : "all") + "\":["
                + IntStream.range(0, 2 + random.nextInt(2)).mapToObj(n -> tree(random, leaves, depth - 1)).collect(Collectors.joining(",")) + "]}";
    }

    /** Every field, every operator, negations included. */
    private static List<String> leaves(Instant now) {
        String old = "\"" + now.minus(Duration.ofDays(200)) + "\"";
        String recent = "\"" + now.minus(Duration.ofDays(30)) + "\"";
        return List.of(
                cond("platform", "eq", "\"ios\""), cond("platform", "neq", "\"android\""), cond("platform", "in", "[\"ios\",\"web\"]"),
                cond("platform", "not_in", "[\"android\"]"),
                cond("locale", "eq", "\"de\""), cond("locale", "neq", "\"de\""), cond("locale", "in", "[\"fr\",\"en-GB\"]"),
                cond("locale", "not_in", "[\"de\",\"fr\"]"), cond("locale", "contains", "\"e\""), cond("locale", "exists", null),
                cond("locale", "not_exists", null),
                cond("timezone", "eq", "\"UTC\""), cond("timezone", "neq", "\"UTC\""), cond("timezone", "not_in", "[\"UTC\",\"Asia/Tokyo\"]"),
                cond("timezone", "contains", "\"Europe\""), cond("timezone", "exists", null), cond("timezone", "not_exists", null),
                cond("app_version", "gte", "\"3\""), cond("app_version", "lt", "\"2.10\""), cond("app_version", "gt", "\"3.0\""),
                cond("app_version", "lte", "\"3.2\""), cond("app_version", "eq", "\"2.9\""), cond("app_version", "neq", "\"3.2\""),
                cond("app_version", "contains", "\"beta\""), cond("app_version", "exists", null), cond("app_version", "not_exists", null),
                cond("app_version", "in", "[\"2.9\",\"3.2\"]"), cond("app_version", "not_in", "[\"2.9\"]"),
                cond("enabled", "eq", "true"), cond("enabled", "neq", "true"),
                cond("created_at", "lt", old), cond("created_at", "gte", old),
                cond("last_seen_at", "gt", recent), cond("last_seen_at", "lte", recent),
                cond("tag.plan", "eq", "\"gold\""), cond("tag.plan", "neq", "\"gold\""), cond("tag.plan", "in", "[\"gold\",\"silver\"]"),
                cond("tag.plan", "not_in", "[\"free\"]"), cond("tag.plan", "exists", null), cond("tag.plan", "not_exists", null),
                cond("tag.plan", "contains", "\"il\""),
                cond("tag.level", "gt", "5"), cond("tag.level", "lte", "7.5"), cond("tag.level", "eq", "12"), cond("tag.level", "gte", "3"),
                cond("tag.vip", "eq", "true"), cond("tag.vip", "not_exists", null),
                cond("event.opened", "exists", null), cond("event.opened", "not_exists", null), cond("event.opened", "within_days", "7"),
                cond("event.opened", "not_within_days", "7"), cond("event.opened", "within_days", "0"), cond("event.opened", "within_days", "30"),
                cond("event.clicked", "within_days", "14"), cond("event.clicked", "not_within_days", "14"), cond("event.clicked", "exists", null),
                cond("custom_event.x", "not_exists", null), cond("custom_event.x", "exists", null), cond("custom_event.x", "within_days", "3"),
                cond("custom_event.purchase", "not_within_days", "20"), cond("custom_event.purchase", "within_days", "20"),
                cond("event.dismissed", "exists", null), cond("event.dismissed", "not_exists", null),
                // the rest of the general operators on the general fields
                cond("platform", "contains", "\"o\""), cond("platform", "gt", "\"ios\""), cond("platform", "lte", "\"android\""),
                cond("platform", "exists", null), cond("platform", "not_exists", null),
                cond("locale", "gt", "\"en\""), cond("locale", "lte", "\"en-US\""), cond("timezone", "lt", "\"Europe\""),
                cond("app_version", "gt", "\"alpha\""), cond("app_version", "lte", "\"3.0.0-beta\""),
                cond("enabled", "in", "[true]"), cond("enabled", "contains", "\"ru\""), cond("enabled", "gt", "false"),
                cond("enabled", "not_exists", null),
                cond("created_at", "contains", "\"" + now.atOffset(ZoneOffset.UTC).getYear() + "-\""), cond("created_at", "exists", null),
                cond("last_seen_at", "exists", null), cond("last_seen_at", "not_exists", null), cond("last_seen_at", "neq", recent),
                cond("tag.level", "gt", "\"5\""), cond("tag.level", "lt", "\"a\""), cond("tag.plan", "gt", "\"gold\""),
                cond("tag.plan", "lte", "10"));
    }

    // ---- population ----

    private static <T> T pick(Random random, List<T> values) {
        return values.get(random.nextInt(values.size()));
    }

    private Population population(Random random) {
        TestApp app = newApp();
        Instant now = Instant.now();
        List<User> users = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Map<String, String> tags = new LinkedHashMap<>();
            String plan = pick(random, java.util.Arrays.asList(null, "gold", "silver", "free"));
            if (plan != null) tags.put("plan", plan);
            String level = pick(random, java.util.Arrays.asList(null, "3", "12", "7.5", "x"));
            if (level != null) tags.put("level", level);
            if (random.nextInt(4) == 0) tags.put("vip", "true");
            User u = new User(UUID.randomUUID(), pick(random, java.util.Arrays.asList(null, "de", "fr", "en-US")),
                    pick(random, java.util.Arrays.asList(null, "UTC", "Europe/Berlin", "Asia/Tokyo")), tags);
            users.add(u);
            jdbc.sql("insert into users (id, app_id, external_user_id, locale, timezone, tags) values (:id, :app, :ext, :locale, :tz, cast(:tags as jsonb))")
                    .param("id", u.id()).param("app", app.appId()).param("ext", "user-" + i).param("locale", u.locale())
                    .param("tz", u.timezone()).param("tags", JSON.writeValueAsString(tags)).update();
        }
        List<Device> devices = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            Map<String, Instant> events = new HashMap<>();
            for (String key : EVENT_KEYS) {
                if (random.nextBoolean()) events.put(key, now.minus(Duration.ofMinutes(random.nextInt(40 * 24 * 60))));
            }
            Device d = new Device(UUID.randomUUID(), random.nextInt(20) == 0 ? null : pick(random, users),
                    pick(random, List.of("ios", "android", "web")),
                    pick(random, java.util.Arrays.asList(null, null, "de", "fr", "en-GB")),
                    pick(random, java.util.Arrays.asList(null, null, "UTC", "America/New_York")),
                    pick(random, java.util.Arrays.asList(null, "2.9", "2.10.1", "3.0.0-beta", "3.2", "3.10", "beta")),
                    random.nextInt(10) != 0, random.nextInt(12) == 0,
                    now.minus(Duration.ofHours(random.nextInt(400 * 24))), now.minus(Duration.ofHours(random.nextInt(100 * 24))), events);
            devices.add(d);
            String token = "semantics-" + d.id();
            jdbc.sql("""
                            insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, locale, timezone,
                                                 enabled, invalidated_at, last_seen_at, created_at)
                            values (:id, :app, :platform, :token, :hash, :user, :version, :locale, :tz, :enabled, :invalidated, :seen, :created)""")
                    .param("id", d.id()).param("app", app.appId()).param("platform", d.platform()).param("token", token)
                    .param("hash", sha256(token)).param("user", d.user() == null ? null : d.user().id()).param("version", d.appVersion())
                    .param("locale", d.locale()).param("tz", d.timezone()).param("enabled", d.enabled())
                    .param("invalidated", d.invalidated() ? OffsetDateTime.ofInstant(now, ZoneOffset.UTC) : null)
                    .param("seen", OffsetDateTime.ofInstant(d.lastSeenAt(), ZoneOffset.UTC))
                    .param("created", OffsetDateTime.ofInstant(d.createdAt(), ZoneOffset.UTC)).update();
            events.forEach((key, at) -> jdbc.sql("insert into device_event_last (app_id, device_id, event_key, last_at) values (:app, :device, :key, :at)")
                    .param("app", app.appId()).param("device", d.id()).param("key", key)
                    .param("at", OffsetDateTime.ofInstant(at, ZoneOffset.UTC)).update());
        }
        return new Population(app, devices, now);
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
