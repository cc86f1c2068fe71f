/* core_ticket.c - libdepfs core: the ticket, what the client shows the
 * I/O servers and, with the MDS requests that grant a capability, the MDS.
 * A client that holds the cluster key (root on a server or admin node)
 * shows the key; any other proved itself to the MDS by MUNGE, and shows
 * the ticket MDS_REGISTER gave it (auth.h), renewed through the MDS once
 * half its life is gone. The MDS makes a capability out to the client of
 * the ticket a request carries (mds/cap_owner.h), so every request that
 * may grant one or gives a hold back (io_caps_mds_op_binds_client) goes
 * through dc_mds_call_ticketed. */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "io_caps.h"
#include "log.h"

bool dc_holds_cluster_key(const depfs_t *fs)
{
    return fs->mds_creds.method != AUTH_METHOD_MUNGE;
}

int dc_ticket_take(depfs_t *fs, const Depfs__MdsReply *rep)
{
    if (fs->mds_creds.method != AUTH_METHOD_MUNGE)
        return 0; /* the key opens the I/O servers too */
    if (!rep->has_ticket || rep->ticket.len != AUTH_TICKET_BYTES || !rep->has_ticket_secret ||
        rep->ticket_secret.len != AUTH_KEY_BYTES) {
        dc_set_error("MDS_REGISTER: the MDS gave no ticket for the I/O servers");
        return -EPROTO;
    }
    rpc_auth_creds cr = { .method = AUTH_METHOD_TICKET };
    memcpy(cr.ticket, rep->ticket.data, AUTH_TICKET_BYTES);
    pthread_mutex_lock(&fs->mds_lock);
    const auth_session *sess = fs->mds ? rpc_conn_session(fs->mds) : NULL;
    if (sess)
        auth_ticket_wrap(sess, cr.ticket, rep->ticket_secret.data, cr.secret);
    pthread_mutex_unlock(&fs->mds_lock);
    if (!sess) {
        dc_set_error("MDS_REGISTER: the MDS connection went away with the ticket's secret");
        return -ECONNRESET;
    }
    pthread_mutex_lock(&fs->io_creds_lock);
    fs->io_creds = cr;
    fs->ticket_expires_s = rep->has_ticket_expires_s ? rep->ticket_expires_s : 0;
    pthread_mutex_unlock(&fs->io_creds_lock);
    auth_wipe(&cr, sizeof(cr));
    return 0;
}

/* Asks the MDS for a fresh ticket, the old one as proof. */
static void renew(depfs_t *fs, const uint8_t old[AUTH_TICKET_BYTES])
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_renew_ticket = true;
    req.renew_ticket = (ProtobufCBinaryData){ AUTH_TICKET_BYTES, (uint8_t *)old };
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_REGISTER, &req, &rep);
    if (rc == 0)
        rc = dc_ticket_take(fs, rep);
    if (rc < 0)
        log_warn("libdepfs: cannot renew the I/O servers' ticket: %s (%s)", strerror(-rc),
                 depfs_last_error());
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
}

/* A ticket past half its life (or past its end: the MDS renews an expired
 * one of the same user) is renewed before it is shown. */
static void renew_if_due(depfs_t *fs)
{
    uint8_t old[AUTH_TICKET_BYTES];
    pthread_mutex_lock(&fs->io_creds_lock);
    bool due = fs->io_creds.method == AUTH_METHOD_TICKET && fs->ticket_expires_s &&
               (uint64_t)time(NULL) + AUTH_TICKET_TTL_S / 2 >= fs->ticket_expires_s;
    if (due)
        memcpy(old, fs->io_creds.ticket, sizeof(old));
    pthread_mutex_unlock(&fs->io_creds_lock);
    if (due)
        renew(fs, old);
}

void dc_io_creds(depfs_t *fs, rpc_auth_creds *out)
{
    renew_if_due(fs);
    pthread_mutex_lock(&fs->io_creds_lock);
    *out = fs->io_creds;
    pthread_mutex_unlock(&fs->io_creds_lock);
}

int dc_mds_call_ticketed(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                         Depfs__MdsReply **reply)
{
    assert(io_caps_mds_op_binds_client((uint16_t)op));
    uint8_t ticket[AUTH_TICKET_BYTES];
    Depfs__MdsRequest r = *req; /* shallow: the ticket is added */
    renew_if_due(fs);
    pthread_mutex_lock(&fs->io_creds_lock);
    if (fs->io_creds.method == AUTH_METHOD_TICKET) {
        memcpy(ticket, fs->io_creds.ticket, sizeof(ticket));
        r.has_ticket = true;
        r.ticket = (ProtobufCBinaryData){ sizeof(ticket), ticket };
    }
    pthread_mutex_unlock(&fs->io_creds_lock);
    return dc_mds_call(fs, op, &r, reply);
}
