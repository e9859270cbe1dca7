package dev.pushservice.users;

import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * Users own tags. Every active device points at a user: a named one ({@code external_user_id}) or
 * an anonymous one created for a device registered without an id, so that "the device's user's tags"
 * is always one join away (see docs/api-decisions.md, "Tag model").
 */
@Service
public class UserService {

    private final UserRepository users;

    UserService(UserRepository users) {
        this.users = users;
    }

    /**
     * The user a registering device belongs to after this registration, with the registration's
     * tags merged in (key by key). Must run inside the registration's transaction.
     *
     * @param externalUserId the registration's user id, or null
     * @param tags the registration's tags, or null
     * @param currentUserId the device's user before this registration, or null for a new device
     * @param currentIsAnonymous whether that user is an anonymous one
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public UUID ownerForRegistration(UUID appId, String externalUserId, Map<String, String> tags, UUID currentUserId,
                                     boolean currentIsAnonymous) {
        Map<String, String> merge = tags == null ? Map.of() : tags;
        if (externalUserId != null) {
            // this registration's tags go in with the upsert; an absorbed anonymous user's tags go under them
            UUID named = users.upsertNamed(appId, externalUserId, merge);
            if (currentUserId != null && !currentUserId.equals(named) && currentIsAnonymous) {
                users.absorbAnonymous(appId, currentUserId, named);
            }
            return named;
        }
        if (currentUserId != null) {
            users.mergeTags(appId, currentUserId, merge);
            return currentUserId;
        }
        return users.insertAnonymous(appId, merge);
    }

    /** After a device moved away from {@code previousUserId}: drop that user if it was anonymous and is now unused. */
    @Transactional(propagation = Propagation.MANDATORY)
    public void releaseIfAnonymous(UUID appId, UUID previousUserId) {
        if (previousUserId != null) users.deleteAnonymousIfUnused(appId, previousUserId);
    }
}
