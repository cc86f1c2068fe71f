/* authz.c - the I/O server's access rules (authz.h). */
#include "authz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

static const char *admin_only(uint16_t type, const Depfs__IoRequest *q)
{
    switch (type) {
    case DEPFS__IO_OP__IO_SET_STATE:
        return "IO_SET_STATE";
    case DEPFS__IO_OP__IO_DIRTY: /* a writer may ask whether records exist, no more */
        if (q->has_dirty_action && q->dirty_action == DEPFS__DIRTY_ACTION__DIRTY_PROBE)
            return NULL;
        return "IO_DIRTY (other than DIRTY_PROBE)";
    case DEPFS__IO_OP__IO_HEARTBEAT:
        return "IO_HEARTBEAT";
    default:
        break;
    }
    if (q->has_ignore_locks && q->ignore_locks)
        return "ignore_locks";
    if (q->has_take_over_stale && q->take_over_stale)
        return "take_over_stale";
    if (q->has_unverified && q->unverified)
        return "unverified";
    return NULL;
}

int ios_authorize(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q, char *why,
                  size_t why_len)
{
    if (!who || who->role == AUTH_ROLE_CLUSTER)
        return 0;
    if (who->role != AUTH_ROLE_CLIENT) {
        snprintf(why, why_len, "only the cluster's daemons and clients with an MDS ticket are "
                               "served here");
        return -EPERM;
    }
    const char *what = admin_only(type, q);
    if (what) {
        snprintf(why, why_len, "%s is an admin operation (the cluster key's holders only); "
                               "client %" PRIu64 " refused", what, who->client_id);
        return -EPERM;
    }
    if (q->lock && q->lock->owner_client != who->client_id) {
        snprintf(why, why_len, "a lock in the name of client %" PRIu64 " from client %" PRIu64
                               ": clients lock in their own name only",
                 q->lock->owner_client, who->client_id);
        return -EPERM;
    }
    return 0;
}
