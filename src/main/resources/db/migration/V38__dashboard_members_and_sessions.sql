-- Dashboard members, their one-time links, sign-in failures, and the HTTP sessions of the dashboard
-- (issue 27). Flyway owns the schema, so Spring Session's own PostgreSQL schema (spring-session-jdbc
-- 4.1, org/springframework/session/jdbc/schema-postgresql.sql) is created here, unchanged, instead of
-- by Spring Session at start (spring.session.jdbc.initialize-schema: never).

-- A person who signs in to the dashboard. One organisation per e-mail address (sign-in is by address
-- alone); the role says what they may do (docs/dashboard.md). password_hash is a Spring Security
-- encoded hash ({bcrypt}…); null until the member has used their setup link.
create table members (
    id            uuid primary key,
    org_id        uuid        not null references organisations (id),
    email         text        not null check (email = lower(email) and length(email) between 3 and 254),
    role          text        not null check (role in ('owner', 'admin', 'member')),
    password_hash text,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now()
);
create unique index members_email on members (email);
create index members_org on members (org_id);

-- A link shown once: 'setup' lets an existing member (made by the admin CLI) choose a password;
-- 'invite' makes a new member of org_id with role. Only the SHA-256 of the link's token is stored.
-- used_at set: spent (a link works once).
create table member_links (
    id          uuid primary key,
    kind        text        not null check (kind in ('setup', 'invite')),
    org_id      uuid        not null references organisations (id),
    role        text        not null check (role in ('owner', 'admin', 'member')),
    member_id   uuid        references members (id),
    token_hash  bytea       not null,
    created_by  uuid        references members (id),
    created_at  timestamptz not null,
    expires_at  timestamptz not null,
    used_at     timestamptz,
    check ((kind = 'setup') = (member_id is not null))
);
create unique index member_links_token on member_links (token_hash);
create index member_links_org on member_links (org_id, created_at desc);

-- Failed sign-ins by address, whether or not a member has it (an unknown address is throttled like a
-- known one, so the answers do not tell them apart). In the database so a lock-out holds on every
-- instance. A success deletes the row.
create table sign_in_failures (
    email           text primary key,
    failures        integer     not null,
    last_failure_at timestamptz not null,
    locked_until    timestamptz
);

CREATE TABLE SPRING_SESSION (
	PRIMARY_ID CHAR(36) NOT NULL,
	SESSION_ID CHAR(36) NOT NULL,
	CREATION_TIME BIGINT NOT NULL,
	LAST_ACCESS_TIME BIGINT NOT NULL,
	MAX_INACTIVE_INTERVAL INT NOT NULL,
	EXPIRY_TIME BIGINT NOT NULL,
	PRINCIPAL_NAME VARCHAR(100),
	CONSTRAINT SPRING_SESSION_PK PRIMARY KEY (PRIMARY_ID)
);

CREATE UNIQUE INDEX SPRING_SESSION_IX1 ON SPRING_SESSION (SESSION_ID);
CREATE INDEX SPRING_SESSION_IX2 ON SPRING_SESSION (EXPIRY_TIME);
CREATE INDEX SPRING_SESSION_IX3 ON SPRING_SESSION (PRINCIPAL_NAME);

CREATE TABLE SPRING_SESSION_ATTRIBUTES (
	SESSION_PRIMARY_ID CHAR(36) NOT NULL,
	ATTRIBUTE_NAME VARCHAR(200) NOT NULL,
	ATTRIBUTE_BYTES BYTEA NOT NULL,
	CONSTRAINT SPRING_SESSION_ATTRIBUTES_PK PRIMARY KEY (SESSION_PRIMARY_ID, ATTRIBUTE_NAME),
	CONSTRAINT SPRING_SESSION_ATTRIBUTES_FK FOREIGN KEY (SESSION_PRIMARY_ID) REFERENCES SPRING_SESSION(PRIMARY_ID) ON DELETE CASCADE
);
