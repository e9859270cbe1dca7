package dev.pushservice.apps.cli;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The picocli command tree of {@code push-service admin}. Each leaf checks everything it can
 * before it touches the database ({@link CliSession#tenants()} starts the application context
 * lazily), so a usage error costs no database start.
 */
final class AdminCommands {

    private AdminCommands() {
    }

    static final String NAME = "push-service admin";

    @Command(name = NAME, subcommands = {OrgCommand.class, AppCommand.class, KeyCommand.class, MemberCommand.class, HelpCommand.class},
            description = "Administers organisations, apps, API keys and dashboard members in the configured database "
                    + "(DATABASE_URL, or the embedded PostgreSQL in PUSH_DATA_DIR), then exits.",
            footerHeading = "%nExamples:%n",
            footer = {
                    "  admin org create --name \"Acme\"",
                    "  admin app create --org <org-id> --name \"Acme iOS\" --timezone Europe/Berlin",
                    "  admin key create --app <app-id> --kind server --scopes notifications:write --expires-in 90d",
                    "  admin key rotate --key <key-id> --grace 1h",
                    "  admin member add --org <org-id> --email owner@example.com --role owner",
                    "",
                    "Add --json to any command for machine-readable output.",
                    "Exit status: 0 done, 1 not found or refused, 2 usage error."},
            synopsisSubcommandLabel = "(org | app | key | member | help)")
    static final class Admin extends Group {
    }

    static final class HelpOption {
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
        boolean help;
    }

    /** A command that only groups subcommands: running it alone is a usage error. */
    abstract static class Group implements Runnable {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Override
        public void run() {
            throw new ParameterException(spec.commandLine(), "Missing command: choose one of "
                    + String.join(", ", spec.subcommands().keySet()));
        }
    }

    static final class JsonOption {
        @Option(names = "--json", description = "Print machine-readable JSON instead of text.")
        boolean json;
    }

    /** Base of leaf commands: access to the session (output, lazily started service). */
    abstract static class Leaf implements Callable<Integer> {
        final CliSession session;

        @Spec
        CommandSpec spec;

        @Mixin
        JsonOption output;

        @Mixin
        HelpOption help;

        Leaf(CliSession session) {
            this.session = session;
        }

        PrintWriter out() {
            return session.out();
        }

        TenantService tenants() {
            return session.tenants();
        }

        boolean json() {
            return output.json;
        }
    }

    // ---------------------------------------------------------------- organisations

    @Command(name = "org", description = "Organisations.", subcommands = {OrgCreate.class, OrgList.class})
    static final class OrgCommand extends Group {
    }

    @Command(name = "create", description = "Creates an organisation.")
    static final class OrgCreate extends Leaf {
        @Option(names = "--name", required = true, converter = CliConverters.Name.class, description = "Its name.")
        String name;

        OrgCreate(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            Tenants.Organisation org = tenants().createOrganisation(name);
            if (json()) {
                CliOutput.json(out(), CliOutput.organisation(org));
            } else {
                out().printf("Created organisation \"%s\" (id %s).%n", org.name(), org.id());
            }
            return 0;
        }
    }

    @Command(name = "list", description = "Lists organisations, oldest first.")
    static final class OrgList extends Leaf {
        OrgList(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            List<Tenants.Organisation> orgs = tenants().organisations();
            if (json()) {
                CliOutput.json(out(), orgs.stream().map(CliOutput::organisation).toList());
            } else if (orgs.isEmpty()) {
                out().println("No organisations.");
            } else {
                CliOutput.table(out(), List.of("ID", "NAME", "CREATED"), orgs.stream()
                        .map(o -> List.of(o.id().toString(), o.name(), CliOutput.time(o.createdAt()))).toList());
            }
            return 0;
        }
    }

    // ---------------------------------------------------------------- apps

    @Command(name = "app", description = "Apps.", subcommands = {AppCreate.class, AppList.class, AppCredentials.class})
    static final class AppCommand extends Group {
    }

    @Command(name = "create", description = "Creates an app in an organisation.")
    static final class AppCreate extends Leaf {
        @Option(names = "--org", required = true, paramLabel = "ORG_ID", converter = CliConverters.Id.class,
                description = "The organisation's id.")
        UUID org;

        @Option(names = "--name", required = true, converter = CliConverters.Name.class, description = "Its name.")
        String name;

        @Option(names = "--timezone", paramLabel = "ZONE", defaultValue = "UTC", converter = CliConverters.TimeZone.class,
                description = "IANA time zone its analytics days are counted in (default: ${DEFAULT-VALUE}).")
        String timezone;

        AppCreate(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            Tenants.Organisation organisation = tenants().organisation(org);
            Tenants.App app = tenants().createApp(org, name, timezone);
            if (json()) {
                CliOutput.json(out(), CliOutput.app(app));
            } else {
                out().printf("Created app \"%s\" (id %s) in organisation \"%s\" (id %s), time zone %s.%n",
                        app.name(), app.id(), organisation.name(), organisation.id(), app.timezone());
            }
            return 0;
        }
    }

    @Command(name = "list", description = "Lists apps, oldest first.")
    static final class AppList extends Leaf {
        @Option(names = "--org", paramLabel = "ORG_ID", converter = CliConverters.Id.class,
                description = "Only this organisation's apps.")
        UUID org;

        AppList(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            if (org != null) tenants().organisation(org);
            List<Tenants.App> apps = tenants().apps(org);
            if (json()) {
                CliOutput.json(out(), apps.stream().map(CliOutput::app).toList());
            } else if (apps.isEmpty()) {
                out().println("No apps.");
            } else {
                CliOutput.table(out(), List.of("ID", "ORG", "NAME", "TIMEZONE", "CREATED"), apps.stream()
                        .map(a -> List.of(a.id().toString(), a.orgId().toString(), a.name(), a.timezone(),
                                CliOutput.time(a.createdAt()))).toList());
            }
            return 0;
        }
    }

    @Command(name = "credentials", description = {
            "Sets, replaces or removes an app's provider credentials from a JSON file shaped like the",
            "body of PATCH /v1/app/settings: {\"apns\": {…}, \"fcm\": {\"service_account\": {…}}}; null removes one.",
            "Checked exactly as the API checks them, stored encrypted; only what is configured is printed."})
    static final class AppCredentials extends Leaf {
        private static final java.util.Set<String> PROVIDERS = java.util.Set.of("apns", "fcm");

        @Option(names = "--app", required = true, paramLabel = "APP_ID", converter = CliConverters.Id.class,
                description = "The app's id.")
        UUID app;

        @Option(names = "--file", required = true, paramLabel = "FILE", description = "The JSON file.")
        java.nio.file.Path file;

        AppCredentials(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() throws Exception {
            tools.jackson.databind.JsonNode body;
            try {
                body = tools.jackson.databind.json.JsonMapper.builder().build().readTree(java.nio.file.Files.readString(file));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("Cannot read " + file
                        + (e instanceof java.nio.file.NoSuchFileException ? ": no such file" : ": not readable"));
            } catch (tools.jackson.core.JacksonException e) {
                throw new IllegalArgumentException(file + " is not valid JSON");
            }
            if (body == null || !body.isObject() || body.isEmpty() || !PROVIDERS.containsAll(body.propertyNames())) {
                throw new IllegalArgumentException(file + " must be a JSON object with \"apns\" and/or \"fcm\" only");
            }
            tenants().app(app);
            dev.pushservice.apps.AppSettings result = session.bean(dev.pushservice.apps.AppSettingsService.class).update(app, body);
            java.util.Map<String, Object> shown = new java.util.LinkedHashMap<>();
            shown.put("app_id", app.toString());
            shown.put("apns", result.apns());
            shown.put("fcm", result.fcm());
            if (json()) {
                CliOutput.json(out(), shown);
            } else {
                for (String provider : body.propertyNames()) {
                    Object now = provider.equals("apns") ? result.apns() : result.fcm();
                    out().printf(now == null ? "Removed %s credentials of app %s.%n" : "Set %s credentials of app %s: %s%n",
                            provider.toUpperCase(java.util.Locale.ROOT), app, now);
                }
            }
            return 0;
        }
    }

    // ---------------------------------------------------------------- keys

    @Command(name = "key", description = "API keys: create, list, rotate, revoke.",
            subcommands = {KeyCreate.class, KeyList.class, KeyRotate.class, KeyRevoke.class})
    static final class KeyCommand extends Group {
    }

    static final class Expiry {
        @Option(names = "--expires-in", paramLabel = "DURATION", converter = CliConverters.Span.class,
                description = "Lifetime from now: 90m, 12h, 30d.")
        Duration expiresIn;

        @Option(names = "--expires-at", paramLabel = "INSTANT", converter = CliConverters.Timestamp.class,
                description = "Expiry instant, e.g. 2027-01-01T00:00:00Z.")
        Instant expiresAt;
    }

    @Command(name = "create", description = {
            "Issues an API key and prints it once.",
            "A server key gets the scopes asked for (all of them when --scopes is left out);",
            "a public key always gets exactly devices:write and events:write."})
    static final class KeyCreate extends Leaf {
        @Option(names = "--app", required = true, paramLabel = "APP_ID", converter = CliConverters.Id.class,
                description = "The app the key belongs to.")
        UUID app;

        @Option(names = "--kind", required = true, paramLabel = "server|public", converter = CliConverters.Kind.class,
                description = "server (secret, for your backend) or public (ships inside client apps).")
        KeyKind kind;

        @Option(names = "--name", converter = CliConverters.Name.class, description = "A label (default: \"<kind> key\").")
        String name;

        @Option(names = "--scopes", split = ",", paramLabel = "SCOPE", converter = CliConverters.ScopeValue.class,
                description = "Comma-separated: devices:write, notifications:write, notifications:read, events:write.")
        List<Scope> scopes;

        @ArgGroup(exclusive = true)
        Expiry expiry;

        KeyCreate(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            Instant now = session.now();
            Instant expiresAt = null;
            if (expiry != null && expiry.expiresIn != null) {
                if (expiry.expiresIn.isZero()) throw new ParameterException(spec.commandLine(), "--expires-in must be longer than 0");
                expiresAt = now.plus(expiry.expiresIn);
            } else if (expiry != null && expiry.expiresAt != null) {
                if (!expiry.expiresAt.isAfter(now)) {
                    throw new ParameterException(spec.commandLine(),
                            "--expires-at must be in the future (it is " + CliOutput.time(expiry.expiresAt) + ")");
                }
                expiresAt = expiry.expiresAt;
            }
            boolean scopesIgnored = kind == KeyKind.PUBLIC && scopes != null;
            Set<Scope> asked = scopes == null ? EnumSet.noneOf(Scope.class) : EnumSet.copyOf(scopes);

            Tenants.App target = tenants().app(app);
            Tenants.IssuedKey issued = tenants().issueKey(app, kind, name, asked, expiresAt);
            if (scopesIgnored) {
                session.err().println("Note: a public key always gets exactly devices:write and events:write; --scopes was ignored.");
            }
            printIssued(this, issued, target, null);
            return 0;
        }
    }

    @Command(name = "list", description = "Lists an app's keys (hints only, never the keys themselves).")
    static final class KeyList extends Leaf {
        @Option(names = "--app", required = true, paramLabel = "APP_ID", converter = CliConverters.Id.class,
                description = "The app.")
        UUID app;

        KeyList(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            List<Tenants.Key> keys = tenants().keys(app);
            Instant now = session.now();
            if (json()) {
                CliOutput.json(out(), keys.stream().map(k -> CliOutput.key(k, now)).toList());
            } else if (keys.isEmpty()) {
                out().println("No keys.");
            } else {
                CliOutput.table(out(), List.of("ID", "KIND", "NAME", "HINT", "SCOPES", "STATE", "CREATED", "EXPIRES", "LAST USED"),
                        keys.stream().map(k -> List.of(k.id().toString(), k.kind(), k.name(), k.hint(),
                                String.join(",", k.scopes()), k.state(now), CliOutput.time(k.createdAt()),
                                CliOutput.time(k.expiresAt()), CliOutput.time(k.lastUsedAt()))).toList());
            }
            return 0;
        }
    }

    @Command(name = "rotate", description = {
            "Issues a replacement key (same app, kind, name, scopes and expiry) and prints it once.",
            "The old key is revoked at once, or with --grace keeps working for that long."})
    static final class KeyRotate extends Leaf {
        @Option(names = "--key", required = true, paramLabel = "KEY_ID", converter = CliConverters.Id.class,
                description = "The key to replace.")
        UUID key;

        @Option(names = "--grace", paramLabel = "DURATION", converter = CliConverters.Span.class,
                description = "How long the old key keeps working: 90m, 12h, 1d (default: revoke now).")
        Duration grace;

        KeyRotate(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            Tenants.IssuedKey fresh = tenants().rotateKey(key, grace);
            Tenants.Key old = tenants().key(key);
            Tenants.App target = tenants().app(fresh.key().appId());
            printIssued(this, fresh, target, old);
            return 0;
        }
    }

    @Command(name = "revoke", description = "Revokes a key at once; requests with it get 401 from now on.")
    static final class KeyRevoke extends Leaf {
        @Option(names = "--key", required = true, paramLabel = "KEY_ID", converter = CliConverters.Id.class,
                description = "The key to revoke.")
        UUID key;

        KeyRevoke(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            boolean changed = tenants().revokeKey(key);
            Tenants.Key revoked = tenants().key(key);
            if (json()) {
                Map<String, Object> m = CliOutput.key(revoked, session.now());
                m.put("already_revoked", !changed);
                CliOutput.json(out(), m);
            } else if (changed) {
                out().printf("Revoked %s key \"%s\" (id %s, %s) of app %s.%n",
                        revoked.kind(), revoked.name(), revoked.id(), revoked.hint(), revoked.appId());
            } else {
                out().printf("Key %s was already revoked at %s; nothing changed.%n",
                        revoked.id(), CliOutput.time(revoked.revokedAt()));
            }
            return 0;
        }
    }

    private static void printIssued(Leaf command, Tenants.IssuedKey issued, Tenants.App app, Tenants.Key replaced) {
        Tenants.Key key = issued.key();
        Instant now = command.session.now();
        if (command.json()) {
            Map<String, Object> m = new LinkedHashMap<>(CliOutput.key(key, now));
            m.put("raw_key", issued.rawKey());
            if (replaced != null) m.put("replaced", CliOutput.key(replaced, now));
            CliOutput.json(command.out(), m);
            command.session.err().println(CliOutput.RAW_KEY_WARNING);
            return;
        }
        PrintWriter out = command.out();
        if (replaced == null) {
            out.printf("Created %s key \"%s\" (id %s) for app \"%s\" (id %s).%n", key.kind(), key.name(), key.id(), app.name(), app.id());
        } else {
            out.printf("Rotated %s key \"%s\" of app \"%s\" (id %s): new key id %s replaces %s.%n",
                    key.kind(), key.name(), app.name(), app.id(), key.id(), replaced.id());
            if ("revoked".equals(replaced.state(now))) {
                out.println("The old key is revoked as of now.");
            } else {
                out.printf("The old key keeps working until %s, then expires.%n", CliOutput.time(replaced.expiresAt()));
            }
        }
        out.printf("  scopes   %s%n", String.join(" ", key.scopes()));
        out.printf("  expires  %s%n", key.expiresAt() == null ? "never" : CliOutput.time(key.expiresAt()));
        out.println();
        out.println("  " + issued.rawKey());
        out.println();
        out.println(CliOutput.RAW_KEY_WARNING);
    }

    // ---------------------------------------------------------------- dashboard members

    @Command(name = "member", description = "Dashboard members.", subcommands = {MemberAdd.class, MemberList.class})
    static final class MemberCommand extends Group {
    }

    @Command(name = "add", description = {
            "Adds a dashboard member to an organisation (the first owner, typically) and prints a",
            "one-time link, valid 24 hours, where they choose their password. The link is shown once;",
            "its base is PUSH_PUBLIC_URL (default http://localhost:PORT)."})
    static final class MemberAdd extends Leaf {
        @Option(names = "--org", required = true, paramLabel = "ORG_ID", converter = CliConverters.Id.class,
                description = "The organisation's id.")
        UUID org;

        @Option(names = "--email", required = true, paramLabel = "ADDRESS", converter = CliConverters.Email.class,
                description = "Their e-mail address (they sign in with it).")
        String email;

        @Option(names = "--role", required = true, paramLabel = "owner|admin|member", converter = CliConverters.Role.class,
                description = "What they may do (docs/dashboard.md).")
        dev.pushservice.members.MemberRole role;

        MemberAdd(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            Tenants.Organisation organisation = tenants().organisation(org);
            dev.pushservice.members.MemberLink link = session.bean(dev.pushservice.members.MemberService.class)
                    .addMember(org, email, role);
            String url = publicUrl() + link.path();
            if (json()) {
                Map<String, Object> shown = new LinkedHashMap<>();
                shown.put("id", link.member().id().toString());
                shown.put("org_id", org.toString());
                shown.put("email", link.member().email());
                shown.put("role", role.value());
                shown.put("sign_in_link", url);
                shown.put("link_expires_at", CliOutput.time(link.expiresAt()));
                CliOutput.json(out(), shown);
            } else {
                out().printf("Added %s as %s of organisation \"%s\" (id %s).%n", link.member().email(), role.value(),
                        organisation.name(), organisation.id());
                out().printf("Their one-time link to choose a password (valid until %s; shown only now):%n",
                        CliOutput.time(link.expiresAt()));
                out().println("  " + url);
            }
            return 0;
        }

        private String publicUrl() {
            org.springframework.core.env.Environment env = session.bean(org.springframework.core.env.Environment.class);
            String configured = env.getProperty("push.public-url", "").strip();
            if (!configured.isEmpty()) return configured.replaceAll("/+$", "");
            return "http://localhost:" + env.getProperty("server.port", "8080");
        }
    }

    @Command(name = "list", description = "Lists an organisation's dashboard members (never a password or link).")
    static final class MemberList extends Leaf {
        @Option(names = "--org", required = true, paramLabel = "ORG_ID", converter = CliConverters.Id.class,
                description = "The organisation's id.")
        UUID org;

        MemberList(CliSession session) {
            super(session);
        }

        @Override
        public Integer call() {
            tenants().organisation(org);
            List<dev.pushservice.members.Member> members = session.bean(dev.pushservice.members.MemberService.class).members(org);
            if (json()) {
                CliOutput.json(out(), members.stream().map(m -> {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("id", m.id().toString());
                    row.put("email", m.email());
                    row.put("role", m.role().value());
                    row.put("password_set", m.passwordSet());
                    row.put("created_at", CliOutput.time(m.createdAt()));
                    return row;
                }).toList());
            } else if (members.isEmpty()) {
                out().println("No members.");
            } else {
                CliOutput.table(out(), List.of("ID", "EMAIL", "ROLE", "PASSWORD", "CREATED"), members.stream()
                        .map(m -> List.of(m.id().toString(), m.email(), m.role().value(),
                                m.passwordSet() ? "set" : "link not used", CliOutput.time(m.createdAt()))).toList());
            }
            return 0;
        }
    }
}
