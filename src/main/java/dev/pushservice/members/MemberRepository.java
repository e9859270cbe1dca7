package dev.pushservice.members;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** SQL for members, their links and sign-in failures. Every member query filters by organisation or id. */
@Repository
class MemberRepository {

    private static final String MEMBER = "select id, org_id, email, role, password_hash, created_at from members";

    private final JdbcClient jdbc;

    MemberRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** A member with their stored password hash (null before setup): for the sign-in check only. */
    record Stored(Member member, String passwordHash) {
    }

    /** A link row, locked for the redeeming transaction. */
    record LinkRow(UUID id, MemberLink.Kind kind, UUID orgId, MemberRole role, UUID memberId, Instant expiresAt, Instant usedAt) {
    }

    /** False when the address is taken (by any organisation). */
    boolean insertMember(UUID id, UUID orgId, String email, MemberRole role, String passwordHash, Instant now) {
        return jdbc.sql("""
                        insert into members (id, org_id, email, role, password_hash, created_at, updated_at)
                        values (:id, :org, :email, :role, :hash, :now, :now)
                        on conflict (email) do nothing""")
                .param("id", id).param("org", orgId).param("email", email).param("role", role.value())
                .param("hash", passwordHash).param("now", java.sql.Timestamp.from(now))
                .update() == 1;
    }

    void setPassword(UUID memberId, String passwordHash, Instant now) {
        jdbc.sql("update members set password_hash = :hash, updated_at = :now where id = :id")
                .param("hash", passwordHash).param("now", java.sql.Timestamp.from(now)).param("id", memberId).update();
    }

    Optional<Stored> byEmail(String email) {
        return jdbc.sql(MEMBER + " where email = :email").param("email", email)
                .query((rs, n) -> new Stored(member(rs), rs.getString("password_hash"))).optional();
    }

    Optional<Member> byId(UUID id) {
        return jdbc.sql(MEMBER + " where id = :id").param("id", id).query((rs, n) -> member(rs)).optional();
    }

    List<Member> ofOrganisation(UUID orgId) {
        return jdbc.sql(MEMBER + " where org_id = :org order by created_at, email").param("org", orgId)
                .query((rs, n) -> member(rs)).list();
    }

    /** The organisation's members, their rows locked (role changes and removals take these locks in one order: by id). */
    List<Member> lockOrganisation(UUID orgId) {
        return jdbc.sql(MEMBER + " where org_id = :org order by id for update").param("org", orgId)
                .query((rs, n) -> member(rs)).list();
    }

    void setRole(UUID memberId, MemberRole role, Instant now) {
        jdbc.sql("update members set role = :role, updated_at = :now where id = :id")
                .param("role", role.value()).param("now", java.sql.Timestamp.from(now)).param("id", memberId).update();
    }

    /**
     * Deletes the member, their setup links, and every dashboard session signed in with their
     * address (Spring Session's rows: its index of principal names is the address, which is unique,
     * and the attributes go with their session by the foreign key's cascade). Links they made stay
     * valid (they were made for the organisation) and no longer name them.
     */
    void delete(UUID memberId, String email) {
        jdbc.sql("update member_links set created_by = null where created_by = :id").param("id", memberId).update();
        jdbc.sql("delete from member_links where member_id = :id").param("id", memberId).update();
        jdbc.sql("delete from members where id = :id").param("id", memberId).update();
        deleteSessions(email);
    }

    /** Ends every dashboard session signed in with this address. */
    int deleteSessions(String email) {
        return jdbc.sql("delete from spring_session where principal_name = :email").param("email", email).update();
    }

    void insertLink(UUID id, MemberLink.Kind kind, UUID orgId, MemberRole role, UUID memberId, byte[] tokenHash,
                    UUID createdBy, Instant now, Instant expiresAt) {
        jdbc.sql("""
                        insert into member_links (id, kind, org_id, role, member_id, token_hash, created_by, created_at, expires_at)
                        values (:id, :kind, :org, :role, :member, :hash, :by, :now, :expires)""")
                .param("id", id).param("kind", kind.name().toLowerCase(java.util.Locale.ROOT)).param("org", orgId)
                .param("role", role.value()).param("member", memberId).param("hash", tokenHash).param("by", createdBy)
                .param("now", java.sql.Timestamp.from(now)).param("expires", java.sql.Timestamp.from(expiresAt))
                .update();
    }

    /** The link with this token hash; {@code lock} takes its row lock (the redeeming transaction). */
    Optional<LinkRow> link(byte[] tokenHash, boolean lock) {
        return jdbc.sql("select id, kind, org_id, role, member_id, expires_at, used_at from member_links where token_hash = :hash"
                        + (lock ? " for update" : ""))
                .param("hash", tokenHash)
                .query((rs, n) -> new LinkRow(rs.getObject("id", UUID.class),
                        MemberLink.Kind.valueOf(rs.getString("kind").toUpperCase(java.util.Locale.ROOT)),
                        rs.getObject("org_id", UUID.class), MemberRole.of(rs.getString("role")),
                        rs.getObject("member_id", UUID.class), instant(rs, "expires_at"), instant(rs, "used_at")))
                .optional();
    }

    void spendLink(UUID linkId, Instant now) {
        jdbc.sql("update member_links set used_at = :now where id = :id")
                .param("now", java.sql.Timestamp.from(now)).param("id", linkId).update();
    }

    /** When the address is locked at {@code now}, until when. */
    Optional<Instant> lockedUntil(String email, Instant now) {
        return jdbc.sql("select locked_until from sign_in_failures where email = :email and locked_until > :now")
                .param("email", email).param("now", java.sql.Timestamp.from(now))
                .query((rs, n) -> instant(rs, "locked_until")).optional();
    }

    /**
     * Counts one failure in one statement (concurrent failures on several instances all count): the
     * count restarts when the last failure is older than {@code windowStart} or an earlier lock has
     * run out; reaching {@code maxFailures} locks the address until {@code lockUntil}. Returns the
     * lock's end, if this failure locked it.
     */
    Optional<Instant> recordFailure(String email, Instant now, Instant windowStart, int maxFailures, Instant lockUntil) {
        return jdbc.sql("""
                        insert into sign_in_failures as f (email, failures, last_failure_at, locked_until)
                        values (:email, 1, :now, case when 1 >= :max then cast(:until as timestamptz) end)
                        on conflict (email) do update set
                            failures = case when f.last_failure_at < :window_start or f.locked_until <= :now then 1
                                            else f.failures + 1 end,
                            last_failure_at = :now,
                            locked_until = case when (case when f.last_failure_at < :window_start or f.locked_until <= :now then 1
                                                           else f.failures + 1 end) >= :max
                                                then cast(:until as timestamptz) end
                        returning locked_until""")
                .param("email", email).param("now", java.sql.Timestamp.from(now))
                .param("window_start", java.sql.Timestamp.from(windowStart)).param("max", maxFailures)
                .param("until", java.sql.Timestamp.from(lockUntil))
                .query((rs, n) -> Optional.ofNullable(instant(rs, "locked_until"))).single();
    }

    void clearFailures(String email) {
        jdbc.sql("delete from sign_in_failures where email = :email").param("email", email).update();
    }

    private static Member member(ResultSet rs) throws SQLException {
        return new Member(rs.getObject("id", UUID.class), rs.getObject("org_id", UUID.class), rs.getString("email"),
                MemberRole.of(rs.getString("role")), rs.getString("password_hash") != null, instant(rs, "created_at"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        java.sql.Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
