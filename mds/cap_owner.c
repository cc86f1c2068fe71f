/* cap_owner.c - the client an MDS request's capability is made out to
 * (cap_owner.h). */
#include "cap_owner.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A MUNGE user's: the ticket's client id, the ticket checked. */
static int user_owner(const uint8_t ticket_key[AUTH_KEY_BYTES], const auth_identity *who,
                      const Depfs__MdsRequest *q, uint64_t now_s, mds_cap_owner *out, char *why,
                      size_t why_len)
{
    auth_ticket t = { 0 };
    uint8_t secret[AUTH_KEY_BYTES];
    if (!q->has_ticket) {
        if (!q->has_client_id)
            return 0; /* no client to make one out to: none issued */
        snprintf(why, why_len, "a capability for client %llu needs that client's ticket",
                 (unsigned long long)q->client_id);
        return -EACCES;
    }
    int rc = auth_ticket_open(ticket_key, q->ticket.data, q->ticket.len, now_s, &t, secret);
    auth_wipe(secret, sizeof(secret));
    if (rc == -EKEYEXPIRED) {
        snprintf(why, why_len, "the ticket of client %llu expired: renew it",
                 (unsigned long long)t.client_id);
        return -EACCES;
    }
    if (rc < 0) {
        snprintf(why, why_len, "the request's ticket is forged or not this cluster's");
        return -EACCES;
    }
    if (t.uid != who->uid) {
        snprintf(why, why_len, "the ticket of client %llu is uid %u's, not uid %u's",
                 (unsigned long long)t.client_id, t.uid, who->uid);
        return -EACCES;
    }
    if (q->has_client_id && q->client_id != t.client_id) {
        snprintf(why, why_len, "a capability for client %llu asked with the ticket of client %llu",
                 (unsigned long long)q->client_id, (unsigned long long)t.client_id);
        return -EACCES;
    }
    out->issue = true;
    out->client_id = t.client_id;
    return 0;
}

int mds_cap_owner_of(const uint8_t ticket_key[AUTH_KEY_BYTES], const auth_identity *who,
                     const Depfs__MdsRequest *q, uint64_t now_s, mds_cap_owner *out, char *why,
                     size_t why_len)
{
    assert(ticket_key && who && q && out);
    memset(out, 0, sizeof(*out));
    if (who->role == AUTH_ROLE_CLUSTER) {
        out->issue = true;
        out->client_id = q->has_client_id ? q->client_id : 0;
        return 0;
    }
    if (who->role != AUTH_ROLE_USER) {
        snprintf(why, why_len, "a peer of role %d gets no capability from the MDS",
                 (int)who->role);
        return -EACCES;
    }
    return user_owner(ticket_key, who, q, now_s, out, why, why_len);
}
