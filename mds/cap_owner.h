/* cap_owner.h - whom an I/O capability issued in one MDS request is made
 * out to: the client id it names (auth.h), from the connection's
 * authenticated identity and the request, never from the request's word
 * alone:
 *
 *   - AUTH_ROLE_CLUSTER (the cluster key: daemons, admins, a mount on a
 *     node with the key): trusted for the client id the request names
 *     (none: 0).
 *   - AUTH_ROLE_USER (MUNGE): the client id of the ticket the request
 *     carries (MdsRequest.ticket), once its tag is ours, it is unexpired
 *     and its uid is the uid MUNGE proved on this connection, so a user
 *     gets capabilities only for the clients the MDS registered to it. A
 *     request whose client_id names another client than its ticket's, or
 *     that names one with no ticket, is refused. No ticket and no client
 *     id: no capability (the peer holds no ticket to show one with).
 *   - any other role: refused.
 *
 * Pure: no I/O and no clock of its own (tests/unit/test_cap_owner.c).
 * Return convention: 0 or -EACCES with the reason in why. */
#ifndef DEPFS_MDS_CAP_OWNER_H
#define DEPFS_MDS_CAP_OWNER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "depfs.pb-c.h"

typedef struct mds_cap_owner {
    bool issue;         /* a capability may be issued in this request */
    uint64_t client_id; /* to this client (issue only) */
} mds_cap_owner;

/* ticket_key: auth_derive of the cluster key for tickets (rpc_auth.h);
 * now_s: the wall clock, seconds since the epoch. */
int mds_cap_owner_of(const uint8_t ticket_key[AUTH_KEY_BYTES], const auth_identity *who,
                     const Depfs__MdsRequest *q, uint64_t now_s, mds_cap_owner *out, char *why,
                     size_t why_len);

#endif
