/* lease.c - the ioserver's recovery lease (see lease.h). */
#include "lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "depfs.pb-c.h"
#include "log.h"
#include "rpc.h"
#include "wire.h"

struct ios_lease {
    ios_state *st;
    uint32_t server_id;
    const depfs_config *cfg;
    rpc_auth_creds creds;      /* the cluster key, to ask the MDS */
    uint64_t lease_ms;
    _Atomic uint64_t last_ms;  /* last word from depfs-recovery (or the MDS) */
    atomic_bool heard;         /* depfs-recovery has spoken to us */
    atomic_bool stop;
    pthread_t thr;
};

/* The MDS's word on this server: 0 when it is UP at the epoch we know,
 * -ESTALE when not, or a transport error; *why says what it said. */
static int mds_confirms(ios_lease *l, char *why, size_t why_len)
{
    const depfs_config *cfg = l->cfg;
    frame_limits lim = { .max_header_bytes = cfg->max_header_bytes,
                         .max_bulk_bytes = cfg->max_bulk_bytes };
    rpc_conn *c = NULL;
    int rc = rpc_conn_open(cfg->transport, cfg->mds_address, &lim, (int)cfg->connect_timeout_ms,
                           &l->creds, &c);
    if (rc < 0) {
        snprintf(why, why_len, "the MDS cannot be reached: %s%s%s", strerror(-rc),
                 rpc_conn_open_error()[0] ? ": " : "", rpc_conn_open_error());
        return rc;
    }
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    rc = rpc_call_msg(c, DEPFS__MDS_OP__MDS_CLUSTER, &req.base, NULL, 0, NULL, 0,
                      (int)cfg->request_timeout_ms, &depfs__mds_reply__descriptor,
                      (ProtobufCMessage **)&rep, NULL);
    rpc_conn_close(c);
    if (rc < 0) {
        snprintf(why, why_len, "the MDS did not answer: %s", strerror(-rc));
        return rc;
    }
    uint64_t mine = ios_state_epoch(l->st), theirs = rep->has_cluster_epoch ? rep->cluster_epoch : 0;
    int state = -1;
    for (size_t i = 0; i < rep->n_servers; i++)
        if (rep->servers[i]->id == l->server_id)
            state = (int)rep->servers[i]->state;
    rc = rep->err == 0 && state == DEPFS__SERVER_STATE__SERVER_UP && theirs == mine ? 0 : -ESTALE;
    if (rc)
        snprintf(why, why_len, "the MDS has it %s at cluster epoch %llu (it knows %llu)",
                 state < 0 ? "unknown" : depfs_state_name((uint32_t)state),
                 (unsigned long long)theirs, (unsigned long long)mine);
    depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

/* Not confirmed (how: why not): REBUILDING, so that the server serves no
 * read before depfs-recovery's rejoin. 0, or the error storing it. */
static int demote(ios_lease *l, const char *how)
{
    int rc = ios_state_demote_self(l->st);
    if (rc < 0) {
        log_err("server %u cannot store REBUILDING: %s", l->server_id, strerror(-rc));
        return rc;
    }
    if (rc == 1)
        log_warn("server %u %s: it may have been written around; no reads until "
                 "depfs-recovery rejoins it (REBUILDING)", l->server_id, how);
    return 0;
}

static void check(ios_lease *l)
{
    uint64_t now_ms = clock_now_ms(), last = atomic_load(&l->last_ms);
    if (!atomic_load(&l->heard) || now_ms < last || now_ms - last <= l->lease_ms ||
        ios_state_get(l->st) != DEPFS__SERVER_STATE__SERVER_UP)
        return;
    char why[256];
    int rc = mds_confirms(l, why, sizeof why);
    atomic_store(&l->last_ms, clock_now_ms());
    if (rc == 0) {
        log_debug("no word from depfs-recovery for %llu ms; the MDS confirms this server is up",
                  (unsigned long long)(now_ms - last));
        return;
    }
    char how[sizeof why + 64];
    snprintf(how, sizeof how, "had no word from depfs-recovery for %llu ms and %s",
             (unsigned long long)(now_ms - last), why);
    demote(l, how);
}

int ios_lease_confirm_start(ios_lease *l)
{
    if (ios_state_get(l->st) != DEPFS__SERVER_STATE__SERVER_UP)
        return 0; /* REBUILDING or RECONSTRUCTING: serves no reads anyway */
    char why[256];
    uint64_t start_ms = clock_now_ms();
    int rc;
    /* bounded: one lease while the MDS is unreachable (it may be starting) */
    while ((rc = mds_confirms(l, why, sizeof why)) < 0 && rc != -ESTALE &&
           clock_now_ms() - start_ms < l->lease_ms)
        clock_sleep_ms(IOS_LEASE_TICK_MS);
    if (rc == 0) {
        log_info("server %u: the MDS confirms it up at cluster epoch %llu", l->server_id,
                 (unsigned long long)ios_state_epoch(l->st));
        return 0;
    }
    char how[sizeof why + 64];
    snprintf(how, sizeof how, "started with its state up, but %s", why);
    return demote(l, how);
}

static void *ticker(void *arg)
{
    ios_lease *l = arg;
    while (!atomic_load(&l->stop)) {
        clock_sleep_ms(IOS_LEASE_TICK_MS);
        check(l);
    }
    return NULL;
}

int ios_lease_start(ios_state *st, uint32_t server_id, const depfs_config *cfg, ios_lease **out)
{
    ios_lease *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->st = st;
    l->server_id = server_id;
    l->cfg = cfg;
    int rc = daemon_peer_creds(cfg, &l->creds);
    if (rc < 0) {
        free(l);
        return rc;
    }
    l->lease_ms = cfg->request_timeout_ms;
    atomic_init(&l->last_ms, clock_now_ms());
    atomic_init(&l->heard, false);
    atomic_init(&l->stop, false);
    rc = pthread_create(&l->thr, NULL, ticker, l);
    if (rc) {
        free(l);
        return -rc;
    }
    *out = l;
    return 0;
}

void ios_lease_renew(ios_lease *l)
{
    if (!l)
        return;
    atomic_store(&l->last_ms, clock_now_ms());
    atomic_store(&l->heard, true);
}

void ios_lease_stop(ios_lease *l)
{
    if (!l)
        return;
    atomic_store(&l->stop, true);
    pthread_join(l->thr, NULL);
    free(l);
}
