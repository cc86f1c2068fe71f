/* core_servers.c - libdepfs core: the cluster's server table with the
 * client's status vector (lazy I/O server connections, failure marking with
 * expiry; server states and the cluster epoch from the MDS, refreshed on
 * demand; failure marks lifted when the MDS declares a marked server UP by
 * a state change newer than the failure, core.h). */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core.h"
#include "label.h"
#include "log.h"

/* A client with a server marked failed asks the MDS at most this often
 * whether the cluster has declared it up again. */
#define DC_MARK_RECHECK_MS 1000u

/* ------------------------------------------------ server table */

dc_server *dc_server_by_id(depfs_t *fs, uint32_t id)
{
    for (unsigned i = 0; i < fs->nservers; i++)
        if (fs->servers[i].id == id)
            return &fs->servers[i];
    return NULL;
}

/* Copy the MDS's view of server states into the table (servers the MDS
 * names but the table lacks are ignored: the table is fixed at mount), then
 * the epoch (never backwards). A server coming back UP loses its local
 * failure mark: the MDS has seen it rejoin (status.c: also when this
 * client never saw it leave, by the epoch of its last state change). */
static void servers_apply_states(depfs_t *fs, const Depfs__MdsReply *rep, uint64_t sent_ms)
{
    for (size_t i = 0; i < rep->n_servers; i++) {
        dc_server *s = dc_server_by_id(fs, rep->servers[i]->id);
        if (!s)
            continue;
        pthread_mutex_lock(&s->lock);
        bool back_up = s->state != DEPFS__SERVER_STATE__SERVER_UP &&
                       rep->servers[i]->state == DEPFS__SERVER_STATE__SERVER_UP;
        s->state = (int)rep->servers[i]->state;
        if (back_up)
            atomic_store(&s->down_until_ms, 0);
        dc_status_apply(fs, s, rep->servers[i],
                        rep->has_cluster_epoch ? rep->cluster_epoch : 0, sent_ms);
        pthread_mutex_unlock(&s->lock);
    }
    if (rep->has_cluster_epoch) {
        uint64_t cur = atomic_load(&fs->cluster_epoch);
        while (cur < rep->cluster_epoch &&
               !atomic_compare_exchange_weak(&fs->cluster_epoch, &cur, rep->cluster_epoch)) {
        }
    }
}

int dc_cluster_fetch(depfs_t *fs, Depfs__MdsReply **out)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    if (out)
        *out = NULL;
    uint64_t sent_ms = dc_now_ms();
    atomic_store(&fs->cluster_refresh_ms, sent_ms);
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rc == 0)
        servers_apply_states(fs, rep, sent_ms);
    if (rc == 0 && out) {
        *out = rep;
        return 0;
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int dc_cluster_refresh(depfs_t *fs) { return dc_cluster_fetch(fs, NULL); }

int dc_cluster_refresh_to(depfs_t *fs, uint64_t epoch)
{
    if (atomic_load(&fs->cluster_epoch) >= epoch)
        return 0; /* another thread already caught up */
    int rc = dc_cluster_refresh(fs);
    if (rc == 0 && atomic_load(&fs->cluster_epoch) < epoch)
        log_warn("libdepfs: an I/O server knows cluster epoch %llu, the MDS only %llu",
                 (unsigned long long)epoch, (unsigned long long)atomic_load(&fs->cluster_epoch));
    return rc;
}

void dc_server_note_state(depfs_t *fs, uint32_t id, int state)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return;
    if (state == DEPFS__SERVER_STATE__SERVER_UP) {
        atomic_store(&s->noted_until_ms, 0);
        return;
    }
    uint64_t now_ms = dc_now_ms();
    bool changed = atomic_exchange(&s->noted_until_ms, now_ms + fs->cfg.server_down_expiry_ms) <= now_ms;
    if (changed)
        log_info("libdepfs: I/O server %u says it is in state %d; reading around it", id, state);
}

/* A server the MDS called down/rebuilding: ask again now and then (at most
 * once per server_down_expiry_ms, by one thread) whether it is back. */
static void maybe_refresh_states(depfs_t *fs)
{
    uint64_t now_ms = dc_now_ms();
    uint64_t last_ms = atomic_load(&fs->cluster_refresh_ms);
    if (now_ms - last_ms < fs->cfg.server_down_expiry_ms)
        return;
    if (!atomic_compare_exchange_strong(&fs->cluster_refresh_ms, &last_ms, now_ms))
        return;
    char saved[DC_ERR_MAX];
    snprintf(saved, sizeof saved, "%s", depfs_last_error());
    dc_cluster_refresh(fs);
    dc_set_error("%s", saved);
}

bool dc_server_marked_only(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s || atomic_load(&s->down_until_ms) <= dc_now_ms() || !atomic_load(&s->mark_timed_out))
        return false;
    pthread_mutex_lock(&s->lock);
    bool up = s->state == DEPFS__SERVER_STATE__SERVER_UP;
    pthread_mutex_unlock(&s->lock);
    return up;
}

bool dc_server_is_down(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (s && atomic_load(&s->noted_until_ms) > dc_now_ms())
        return true;
    return dc_server_is_down_write(fs, id);
}

bool dc_server_is_down_write(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return true;
    uint64_t until_ms = atomic_load(&s->down_until_ms);
    if (until_ms > dc_now_ms()) {
        if (dc_status_still_failed(fs, s))
            return true;
        until_ms = 0; /* the MDS just declared it up again */
    }
    if (until_ms != 0 && atomic_compare_exchange_strong(&s->down_until_ms, &until_ms, 0)) {
        /* the local failure mark expired: ask the MDS before trying it again */
        char saved[DC_ERR_MAX];
        snprintf(saved, sizeof saved, "%s", depfs_last_error());
        dc_cluster_refresh(fs);
        dc_set_error("%s", saved);
    }
    pthread_mutex_lock(&s->lock);
    int state = s->state;
    pthread_mutex_unlock(&s->lock);
    if (state != DEPFS__SERVER_STATE__SERVER_UP) {
        maybe_refresh_states(fs);
        pthread_mutex_lock(&s->lock);
        state = s->state;
        pthread_mutex_unlock(&s->lock);
    }
    return state != DEPFS__SERVER_STATE__SERVER_UP;
}

static void server_mark_failed_locked(depfs_t *fs, dc_server *s, int why)
{
    atomic_store(&s->mark_timed_out, why == -ETIMEDOUT);
    /* close the stream at once: what is still queued at a frozen or cut-off
     * server must be dropped there, not acted on when it wakes up */
    rpc_conn_abort(s->conn);
    dc_retire_conn(fs, s->conn);
    s->conn = NULL;
    dc_status_note_failed(s);
    atomic_store(&s->down_until_ms, dc_now_ms() + fs->cfg.server_down_expiry_ms);
}

void dc_server_mark_failed(depfs_t *fs, uint32_t id, int why)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    bool was_up = atomic_load(&s->down_until_ms) <= dc_now_ms();
    server_mark_failed_locked(fs, s, why);
    pthread_mutex_unlock(&s->lock);
    if (was_up)
        log_warn("libdepfs: I/O server %u (%s) marked failed for %u ms", id, s->address,
                 fs->cfg.server_down_expiry_ms);
}

rpc_conn *dc_server_conn(depfs_t *fs, uint32_t id, bool reading)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s) {
        dc_set_error("I/O server %u is not in the cluster", id);
        return NULL;
    }
    if (reading ? dc_server_is_down(fs, id) : dc_server_is_down_write(fs, id)) {
        dc_set_error("I/O server %u (%s) is down", id, s->address);
        return NULL;
    }
    return dc_server_conn_any(fs, id);
}

rpc_conn *dc_server_conn_any(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s) {
        dc_set_error("I/O server %u is not in the cluster", id);
        return NULL;
    }
    dc_retired_reap(fs, false);
    pthread_mutex_lock(&s->lock);
    if (s->conn && rpc_conn_broken(s->conn)) {
        dc_retire_conn(fs, s->conn);
        s->conn = NULL;
    }
    if (!s->conn) {
        rpc_auth_creds cr;
        dc_io_creds(fs, &cr);
        int rc = rpc_conn_open(fs->cfg.transport, s->address, &fs->limits,
                               (int)fs->cfg.connect_timeout_ms, &cr, &s->conn);
        auth_wipe(&cr, sizeof(cr));
        if (rc < 0) {
            s->conn = NULL;
            server_mark_failed_locked(fs, s, rc);
            if (rpc_conn_open_error()[0])
                dc_set_error("cannot connect to I/O server %u: %s", id, rpc_conn_open_error());
            else
                dc_set_error("cannot connect to I/O server %u (%s): %s", id, s->address,
                             strerror(-rc));
            log_warn("libdepfs: %s", depfs_last_error());
        }
    }
    rpc_conn *c = s->conn;
    pthread_mutex_unlock(&s->lock);
    return c;
}

/* Whether w's server has no connection yet and would get one (not down
 * for what it is wanted for). Asked for every request of every batch, so
 * the common answer (connected long ago) is one load, no lock; it is a
 * hint: the connector checks again under the lock, and a connection found
 * broken is replaced by the request itself, as before. */
static bool server_unconnected(depfs_t *fs, const dc_conn_want *w)
{
    dc_server *s = dc_server_by_id(fs, w->id);
    if (!s || __atomic_load_n(&s->conn, __ATOMIC_ACQUIRE) != NULL)
        return false;
    return w->any_state || !(w->reading ? dc_server_is_down(fs, w->id)
                                        : dc_server_is_down_write(fs, w->id));
}

typedef struct dc_connect_job {
    depfs_t *fs;
    dc_conn_want want;
} dc_connect_job;

static void *connect_main(void *arg)
{
    dc_connect_job *j = arg;
    if (j->want.any_state)
        (void)dc_server_conn_any(j->fs, j->want.id);
    else
        (void)dc_server_conn(j->fs, j->want.id, j->want.reading);
    return NULL;
}

static bool job_listed(const dc_connect_job *jobs, unsigned m, uint32_t id)
{
    for (unsigned i = 0; i < m; i++)
        if (jobs[i].want.id == id)
            return true;
    return false;
}

void dc_servers_connect(depfs_t *fs, const dc_conn_want *want, unsigned n)
{
    dc_connect_job jobs[DC_CONNECT_PARALLEL_MAX];
    pthread_t th[DC_CONNECT_PARALLEL_MAX];
    bool started[DC_CONNECT_PARALLEL_MAX];
    unsigned m = 0;
    for (unsigned i = 0; i < n && m < DC_CONNECT_PARALLEL_MAX; i++)
        if (!job_listed(jobs, m, want[i].id) && server_unconnected(fs, &want[i]))
            jobs[m++] = (dc_connect_job){.fs = fs, .want = want[i]};
    if (m < 2)
        return; /* one handshake: the request makes it itself */
    for (unsigned j = 0; j < m; j++) /* one that cannot start: its request connects */
        started[j] = pthread_create(&th[j], NULL, connect_main, &jobs[j]) == 0;
    for (unsigned j = 0; j < m; j++)
        if (started[j])
            pthread_join(th[j], NULL);
}

/* ------------------------------------------- status vector vs cluster view */

void dc_status_note_failed(dc_server *s)
{
    if (atomic_load(&s->down_until_ms) > dc_now_ms())
        return; /* marked already: it has been failing since then */
    atomic_store(&s->fail_epoch, DC_FAIL_EPOCH_UNKNOWN);
    atomic_store(&s->failed_ms, dc_now_ms());
}

/* The first reply sent after the mark fixes the failure's epoch: a server
 * the cluster already calls non-UP failed at or after the epoch of that
 * change; one it still calls UP, at or before the reply's epoch. Any later
 * change of that server to UP has a newer state_epoch (caller holds s->lock). */
bool dc_status_apply(depfs_t *fs, dc_server *s, const Depfs__ServerInfo *si, uint64_t epoch,
                     uint64_t sent_ms)
{
    (void)fs;
    uint64_t failed_ms = atomic_load(&s->failed_ms);
    if (atomic_load(&s->down_until_ms) <= dc_now_ms() || failed_ms >= sent_ms)
        return false; /* not marked, or this reply may predate the failure */
    bool up = si->state == DEPFS__SERVER_STATE__SERVER_UP;
    uint64_t state_epoch = si->has_state_epoch ? si->state_epoch : 0;
    uint64_t fail_epoch = atomic_load(&s->fail_epoch);
    if (fail_epoch == DC_FAIL_EPOCH_UNKNOWN) {
        atomic_store(&s->fail_epoch, up ? epoch : state_epoch);
        return false;
    }
    if (!up || state_epoch <= fail_epoch)
        return false;
    atomic_store(&s->down_until_ms, 0);
    atomic_store(&s->failed_ms, 0);
    log_info("libdepfs: I/O server %u (%s) is up again at cluster epoch %llu (it failed here at "
             "epoch %llu or later): using it again",
             s->id, s->address, (unsigned long long)state_epoch, (unsigned long long)fail_epoch);
    return true;
}

/* MDS_CLUSTER for the marks only. The client's epoch is left alone on
 * purpose: right after depfs-recovery changes a state the MDS has the new
 * epoch before the servers do, and a client that adopted it then would
 * find every server "behind" and treat it as failed. A lifted server's
 * state becomes UP (its requests carry our older epoch: servers that know
 * the new one answer "client behind", and the client refreshes and redoes
 * them as always). */
static void dc_status_recheck(depfs_t *fs)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    char saved[DC_ERR_MAX];
    snprintf(saved, sizeof saved, "%s", depfs_last_error());
    uint64_t sent_ms = dc_now_ms();
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    for (size_t i = 0; rc == 0 && i < rep->n_servers; i++) {
        dc_server *s = dc_server_by_id(fs, rep->servers[i]->id);
        if (s == NULL)
            continue;
        pthread_mutex_lock(&s->lock);
        if (dc_status_apply(fs, s, rep->servers[i],
                            rep->has_cluster_epoch ? rep->cluster_epoch : 0, sent_ms))
            s->state = DEPFS__SERVER_STATE__SERVER_UP;
        pthread_mutex_unlock(&s->lock);
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    dc_set_error("%s", saved); /* best effort: the caller's error text stays */
}

void dc_status_recheck_now(depfs_t *fs)
{
    atomic_store(&fs->mark_recheck_ms, dc_now_ms());
    dc_status_recheck(fs);
}

bool dc_status_still_failed(depfs_t *fs, dc_server *s)
{
    uint64_t now_ms = dc_now_ms();
    uint64_t last_ms = atomic_load(&fs->mark_recheck_ms);
    if (now_ms - last_ms >= DC_MARK_RECHECK_MS &&
        atomic_compare_exchange_strong(&fs->mark_recheck_ms, &last_ms, now_ms))
        dc_status_recheck(fs);
    return atomic_load(&s->down_until_ms) > dc_now_ms();
}
