package dev.pushservice.apps.cli;

import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.TimeZones;
import dev.pushservice.platform.rules.Timestamps;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Locale;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Option values checked while parsing, before any database work: a bad value is a usage error
 * (exit 2) whose message names the option and says what is expected. Picocli prefixes each
 * message with {@code Invalid value for option '--x': }.
 */
final class CliConverters {

    private static final Pattern DURATION = Pattern.compile("(\\d{1,9})([dhms])");

    private CliConverters() {
    }

    static final class Id implements ITypeConverter<UUID> {
        @Override
        public UUID convert(String value) {
            UUID id = dev.pushservice.platform.json.Uuids.parse(value);
            if (id == null) {
                throw new TypeConversionException("'" + value + "' is not an id (a UUID such as 0b5c2a4e-8a3f-4c8e-9d0f-6c1e2f3a4b5c)");
            }
            return id;
        }
    }

    static final class Name implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            String name = value.strip();
            String problem = TextRules.textProblem(name, Limits.NAME);
            if (problem != null) throw new TypeConversionException(problem);
            return name;
        }
    }

    static final class Kind implements ITypeConverter<KeyKind> {
        @Override
        public KeyKind convert(String value) {
            return switch (value.toLowerCase(Locale.ROOT)) {
                case "server" -> KeyKind.SERVER;
                case "public" -> KeyKind.PUBLIC;
                default -> throw new TypeConversionException("'" + value + "' is not a key kind; use server or public");
            };
        }
    }

    static final class ScopeValue implements ITypeConverter<Scope> {
        @Override
        public Scope convert(String value) {
            return Scope.fromValue(value.strip()).orElseThrow(() -> new TypeConversionException(
                    "'" + value + "' is not a scope; use " + Arrays.stream(Scope.values()).map(Scope::value)
                            .collect(Collectors.joining(", "))));
        }
    }

    /** A duration as people write it: {@code 90m}, {@code 12h}, {@code 30d}, {@code 45s}; zero allowed. */
    static final class Span implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            Matcher m = DURATION.matcher(value.strip().toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                throw new TypeConversionException("'" + value + "' is not a duration; write a number and a unit, e.g. 90m, 12h or 30d");
            }
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "d" -> Duration.ofDays(n);
                case "h" -> Duration.ofHours(n);
                case "m" -> Duration.ofMinutes(n);
                default -> Duration.ofSeconds(n);
            };
        }
    }

    /**
     * An ISO-8601 instant with a zone offset ({@code 2027-01-01T00:00:00Z}, {@code …+02:00}), years 0001
     * to 9999 ({@link Timestamps}, the rule of the API).
     */
    static final class Timestamp implements ITypeConverter<Instant> {
        @Override
        public Instant convert(String value) {
            Instant at = Timestamps.parseOffset(value.strip());
            if (at == null) {
                throw new TypeConversionException("'" + value + "' is not a date-time " + Timestamps.RANGE
                        + "; write it like 2027-01-01T00:00:00Z");
            }
            return at;
        }
    }

    /** IANA region names only (and UTC), the rule {@code /v1/app/settings} applies too. */
    static final class TimeZone implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            String zone = value.strip();
            if (TimeZones.isValid(zone)) return zone;
            throw new TypeConversionException("'" + value + "' is not a time zone; use an IANA name such as Europe/Berlin or UTC");
        }
    }

    static final class Email implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            try {
                return dev.pushservice.members.MemberService.normalise(value);
            } catch (dev.pushservice.platform.domain.InvalidInput e) {
                throw new TypeConversionException(e.violations().getFirst().message());
            }
        }
    }

    static final class Role implements ITypeConverter<dev.pushservice.members.MemberRole> {
        @Override
        public dev.pushservice.members.MemberRole convert(String value) {
            try {
                return dev.pushservice.members.MemberRole.of(value.toLowerCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
