package dev.pushservice.members;

import dev.pushservice.audit.AuditLog;
import dev.pushservice.platform.auth.ApiKeys;
import dev.pushservice.platform.domain.Conflict;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Members, their one-time links and the sign-in check. Thread-safe (stateless apart from the
 * injected collaborators).
 *
 * <p>Rules: an address is normalised (trimmed, lower-case) everywhere; a password is 12 to 128
 * characters; a setup link lives {@link #SETUP_LINK_LIFETIME}, an invite {@link #INVITE_LIFETIME};
 * each works once, in a transaction that locks its row, so two tabs redeeming it at once make one
 * member. Only owners invite.
 *
 * <p>Every membership change is recorded in the organisation's audit log in its own transaction
 * (docs/dashboard.md "Organisation audit log"): {@code member.add}, {@code member.invite},
 * {@code member.join}, {@code member.activate}, {@code member.role_change}, {@code member.remove}.
 */
@Service
public class MemberService {

    static final Duration SETUP_LINK_LIFETIME = Duration.ofHours(24);
    static final Duration INVITE_LIFETIME = Duration.ofDays(7);
    static final int MIN_PASSWORD = 12;
    static final int MAX_PASSWORD = 128;

    private static final SecureRandom RANDOM = new SecureRandom();

    private final MemberRepository members;
    private final AuditLog audit;
    private final PasswordEncoder passwords;
    private final SignInPolicy policy;
    private final Clock clock;
    /** Compared against when the address is unknown, so an unknown address costs what a known one does. */
    private final String decoyHash;

    MemberService(MemberRepository members, AuditLog audit, PasswordEncoder passwords, SignInPolicy policy, Clock clock) {
        this.members = members;
        this.audit = audit;
        this.passwords = passwords;
        this.policy = policy;
        this.clock = clock;
        this.decoyHash = passwords.encode(token());
    }

    /**
     * Makes a member of {@code orgId} without a password and a setup link for them (the admin CLI's
     * {@code admin member add}). The caller checks that the organisation exists.
     *
     * @throws InvalidInput the address is not one
     * @throws Conflict the address already belongs to a member
     */
    @Transactional
    public MemberLink addMember(UUID orgId, String email, MemberRole role) {
        String address = normalise(email);
        Instant now = clock.instant();
        UUID id = UUID.randomUUID();
        if (!members.insertMember(id, orgId, address, role, null, now)) {
            throw new Conflict("A member with the address " + address + " exists already");
        }
        Member member = members.byId(id).orElseThrow();
        // the actor is whoever runs this: the admin CLI, or "system" for an in-process caller
        audit.recordForOrganisation(null, orgId, "member.add", "member", id, List.of("email", "role"),
                Map.of("email", address, "role", role.value()));
        return link(MemberLink.Kind.SETUP, orgId, role, member, null, now, SETUP_LINK_LIFETIME);
    }

    /**
     * An invite link to the inviter's organisation with {@code role}. The inviter's role is read as
     * stored now, not as their session remembers it.
     *
     * @throws AccessDeniedException the inviter is not (or no longer) an owner
     */
    @Transactional
    public MemberLink invite(UUID inviterId, MemberRole role) {
        Member inviter = members.byId(inviterId).orElseThrow(() -> new AccessDeniedException("Only owners invite members"));
        if (inviter.role() != MemberRole.OWNER) throw new AccessDeniedException("Only owners invite members");
        MemberLink link = link(MemberLink.Kind.INVITE, inviter.orgId(), role, null, inviter.id(), clock.instant(), INVITE_LIFETIME);
        audit.recordForOrganisation(AuditLog.Actor.member(inviter.id()), inviter.orgId(), "member.invite", "invite", link.id(),
                List.of("role"), Map.of("role", role.value(), "expires_at", link.expiresAt().toString()));
        return link;
    }

    /** The unspent, unexpired link with this token, for the page that redeems it; empty otherwise. */
    public Optional<MemberLink> pendingLink(String token) {
        if (token == null || token.isBlank() || token.length() > 100) return Optional.empty();
        Instant now = clock.instant();
        return members.link(ApiKeys.hash(token), false)
                .filter(l -> l.usedAt() == null && l.expiresAt().isAfter(now))
                .map(l -> new MemberLink(l.id(), l.kind(), l.orgId(), l.role(),
                        l.memberId() == null ? null : members.byId(l.memberId()).orElse(null), token, l.expiresAt()));
    }

    /**
     * Redeems a link once: a setup link sets its member's password; an invite makes a member with
     * {@code email} (ignored for setup links) and {@code password}.
     *
     * @throws NotFound the link does not exist, is spent or has expired
     * @throws InvalidInput a bad address or password (the link stays unspent)
     * @throws Conflict the invite's address already belongs to a member (the link stays unspent)
     */
    @Transactional
    public Member redeem(String token, String email, String password) {
        Instant now = clock.instant();
        MemberRepository.LinkRow link = (token == null || token.isBlank() || token.length() > 100 ? Optional.<MemberRepository.LinkRow>empty()
                : members.link(ApiKeys.hash(token), true))
                .filter(l -> l.usedAt() == null && l.expiresAt().isAfter(now))
                .orElseThrow(() -> NotFound.saying("This link is not valid: it was used already, has expired or never existed"));
        String problem = passwordProblem(password);
        if (problem != null) throw InvalidInput.of("password", problem);
        String hash = passwords.encode(password);
        UUID memberId;
        if (link.kind() == MemberLink.Kind.SETUP) {
            memberId = link.memberId();
            members.setPassword(memberId, hash, now);
            audit.recordForOrganisation(AuditLog.Actor.member(memberId), link.orgId(), "member.activate", "member", memberId,
                    List.of("password"), Map.of("link", link.id().toString()));
        } else {
            String address = normalise(email);
            memberId = UUID.randomUUID();
            if (!members.insertMember(memberId, link.orgId(), address, link.role(), hash, now)) {
                throw new Conflict("A member with the address " + address + " exists already");
            }
            audit.recordForOrganisation(AuditLog.Actor.member(memberId), link.orgId(), "member.join", "member", memberId,
                    List.of("email", "role"), Map.of("email", address, "role", link.role().value(), "invite", link.id().toString()));
        }
        members.spendLink(link.id(), now);
        return members.byId(memberId).orElseThrow();
    }

    /**
     * Checks an address and password. A locked address is refused without looking at the password;
     * every failure is counted (per address, in the database) and answered only after
     * {@link SignInPolicy#failureDelay()}; a success clears the count.
     */
    public SignIn signIn(String email, String password) {
        String address = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
        Instant now = clock.instant();
        Optional<Instant> locked = members.lockedUntil(address, now);
        if (locked.isPresent()) return new SignIn.Locked(locked.get());
        Optional<MemberRepository.Stored> stored = address.isEmpty() || address.length() > 254
                ? Optional.empty() : members.byEmail(address);
        String candidate = password == null || password.length() > MAX_PASSWORD ? "" : password;
        boolean matches;
        if (stored.isPresent() && stored.get().passwordHash() != null) {
            matches = passwords.matches(candidate, stored.get().passwordHash());
        } else {
            passwords.matches(candidate, decoyHash); // the same work, whatever the answer
            matches = false;
        }
        if (matches) {
            members.clearFailures(address);
            return new SignIn.Success(stored.get().member());
        }
        Optional<Instant> lockedNow = members.recordFailure(address, now, now.minus(policy.lockout()),
                policy.maxFailures(), now.plus(policy.lockout()));
        pause(policy.failureDelay());
        return lockedNow.<SignIn>map(SignIn.Locked::new).orElseGet(SignIn.Refused::new);
    }

    public List<Member> members(UUID orgId) {
        return members.ofOrganisation(orgId);
    }

    /** The member with this id, as stored now (a session holds a snapshot). */
    public Optional<Member> member(UUID id) {
        return members.byId(id);
    }

    /**
     * Gives {@code memberId} the role {@code role}. Only an owner may (their role as stored now), only
     * within their organisation, and the organisation always keeps an owner: the last one cannot be
     * demoted. The organisation's member rows are locked first, so two owners demoting each other at
     * once cannot leave none.
     *
     * @return the member as changed
     * @throws AccessDeniedException the actor is not (or no longer) an owner of the organisation
     * @throws NotFound no such member in the actor's organisation
     * @throws Conflict the change would leave the organisation without an owner
     */
    @Transactional
    public Member changeRole(UUID actorId, UUID memberId, MemberRole role) {
        List<Member> all = lockedAsOwner(actorId);
        Member target = in(all, memberId);
        if (target.role() == role) return target;
        if (target.role() == MemberRole.OWNER && owners(all) == 1) {
            throw new Conflict("The organisation's last owner cannot be demoted: make another member an owner first");
        }
        members.setRole(target.id(), role, clock.instant());
        audit.recordForOrganisation(AuditLog.Actor.member(actorId), target.orgId(), "member.role_change", "member", target.id(),
                List.of("role"), Map.of("email", target.email(), "role_from", target.role().value(), "role_to", role.value()));
        return members.byId(target.id()).orElseThrow();
    }

    /**
     * Removes {@code memberId} from the actor's organisation and ends every session they have, at
     * once (their session rows are deleted in the same transaction). The same rules as
     * {@link #changeRole}: an owner acts, the last owner stays. An owner may remove themselves while
     * another owner remains.
     *
     * @return the removed member
     */
    @Transactional
    public Member remove(UUID actorId, UUID memberId) {
        List<Member> all = lockedAsOwner(actorId);
        Member target = in(all, memberId);
        if (target.role() == MemberRole.OWNER && owners(all) == 1) {
            throw new Conflict("The organisation's last owner cannot be removed: make another member an owner first");
        }
        members.delete(target.id(), target.email());
        audit.recordForOrganisation(AuditLog.Actor.member(actorId), target.orgId(), "member.remove", "member", target.id(),
                List.of(), Map.of("email", target.email(), "role", target.role().value()));
        return target;
    }

    /** The actor's organisation, its member rows locked, when the actor is one of its owners (checked under the lock). */
    private List<Member> lockedAsOwner(UUID actorId) {
        Member actor = members.byId(actorId).orElseThrow(() -> new AccessDeniedException("Only owners manage members"));
        List<Member> all = members.lockOrganisation(actor.orgId());
        boolean owner = all.stream().anyMatch(m -> m.id().equals(actorId) && m.role() == MemberRole.OWNER);
        if (!owner) throw new AccessDeniedException("Only owners manage members");
        return all;
    }

    private static Member in(List<Member> organisation, UUID memberId) {
        return organisation.stream().filter(m -> m.id().equals(memberId)).findFirst()
                .orElseThrow(() -> new NotFound("Member"));
    }

    private static long owners(List<Member> organisation) {
        return organisation.stream().filter(m -> m.role() == MemberRole.OWNER).count();
    }

    /** Why {@code password} is refused, or null. */
    public static String passwordProblem(String password) {
        if (password == null || password.length() < MIN_PASSWORD) return "must be at least " + MIN_PASSWORD + " characters";
        if (password.length() > MAX_PASSWORD) return "must be at most " + MAX_PASSWORD + " characters";
        if (password.isBlank()) return "must not be blank";
        return null;
    }

    /** The address as stored: trimmed and lower-case; InvalidInput when it is not an address. */
    public static String normalise(String email) {
        String address = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
        int at = address.indexOf('@');
        if (address.length() < 3 || address.length() > 254 || at <= 0 || at != address.lastIndexOf('@')
                || at == address.length() - 1 || address.chars().anyMatch(c -> c <= ' ' || c == 0x7f)) {
            throw InvalidInput.of("email", "'" + (email == null ? "" : email.strip()) + "' is not an e-mail address");
        }
        return address;
    }

    private MemberLink link(MemberLink.Kind kind, UUID orgId, MemberRole role, Member member, UUID createdBy,
                            Instant now, Duration lifetime) {
        String token = token();
        Instant expires = now.plus(lifetime);
        UUID id = UUID.randomUUID();
        members.insertLink(id, kind, orgId, role, member == null ? null : member.id(),
                ApiKeys.hash(token), createdBy, now, expires);
        return new MemberLink(id, kind, orgId, role, member, token, expires);
    }

    private static String token() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static void pause(Duration delay) {
        if (delay.isZero()) return;
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
