/* authz.c - the I/O server's access rules (authz.h). */
#include "authz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "dirty_op.h"
#include "io_caps.h"

/* Flags only recovery and admins set, whatever the op: checked before the
 * per-op rules, so no op's exception (a writer's dirty probe) lets them by. */
static const char *admin_only_flag(const Depfs__IoRequest *q)
{
    if (q->has_ignore_locks && q->ignore_locks)
        return "ignore_locks";
    if (q->has_take_over_stale && q->take_over_stale)
        return "take_over_stale";
    if (q->has_unverified && q->unverified)
        return "unverified";
    if (q->has_background && q->background)
        return "background";
    return NULL;
}

static const char *admin_only(uint16_t type, const Depfs__IoRequest *q)
{
    const char *flag = admin_only_flag(q);
    if (flag)
        return flag;
    switch (type) {
    case DEPFS__IO_OP__IO_SET_STATE:
        return "IO_SET_STATE";
    case DEPFS__IO_OP__IO_DIRTY: /* a writer may ask whether records exist, no more */
        return ios_dirty_op_of(q) == IOS_DIRTY_PROBE ? NULL : "IO_DIRTY (other than DIRTY_PROBE)";
    case DEPFS__IO_OP__IO_HEARTBEAT:
        return "IO_HEARTBEAT";
    default:
        return NULL;
    }
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

static const char *rights_name(uint32_t rights)
{
    return (rights & AUTH_CAP_WRITE) ? "write" : (rights & AUTH_CAP_READ) ? "read" : "nothing";
}

static int no_cap(char *why, size_t why_len, const char *fmt, uint64_t a, uint64_t b)
{
    snprintf(why, why_len, fmt, a, b);
    return -EACCES;
}

int ios_check_capability(const auth_identity *who, uint16_t type, const Depfs__IoRequest *q,
                         const uint8_t *cap_key, uint64_t now_s, char *why, size_t why_len)
{
    if (!who || who->role != AUTH_ROLE_CLIENT)
        return 0;
    uint32_t need = io_caps_needed(type, q);
    if (need == 0)
        return 0;
    if (!cap_key)
        return no_cap(why, why_len, "file %016" PRIx64 ": no capability key here to check "
                      "client %" PRIu64 "'s capability", q->file_id, who->client_id);
    if (!q->has_capability)
        return no_cap(why, why_len, "file %016" PRIx64 ": client %" PRIu64 " shows no "
                      "capability (the MDS gives one with each open it allows)",
                      q->file_id, who->client_id);
    auth_cap c;
    int rc = auth_cap_open(cap_key, q->capability.data, q->capability.len, now_s,
                           AUTH_CAP_SKEW_S, &c);
    if (rc == -EKEYEXPIRED)
        return no_cap(why, why_len, "file %016" PRIx64 ": capability expired at %" PRIu64
                      " (renew it through the MDS)", q->file_id, c.expires_s);
    if (rc < 0)
        return no_cap(why, why_len, "file %016" PRIx64 ": capability of client %" PRIu64
                      " forged, damaged or not this cluster's", q->file_id, who->client_id);
    if (c.file_id != q->file_id)
        return no_cap(why, why_len, "capability for file %016" PRIx64 " shown for file %016"
                      PRIx64, c.file_id, q->file_id);
    if (c.client_id != who->client_id)
        return no_cap(why, why_len, "capability of client %" PRIu64 " shown by client %" PRIu64,
                      c.client_id, who->client_id);
    if (!auth_cap_covers(c.rights, need)) {
        snprintf(why, why_len, "file %016" PRIx64 ": capability grants %s, the op needs %s",
                 q->file_id, rights_name(c.rights), rights_name(need));
        return -EACCES;
    }
    return 0;
}
