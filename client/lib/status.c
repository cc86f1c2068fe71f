/* status.c - libdepfs core: asking every I/O server for its state, usage
 * and lock counters (IO_STAT, all servers in parallel, rebuilding ones
 * too), with the MDS's state and rebuild progress of each, for
 * depfs_cluster_status and the raw-bytes part of depfs_statfs; publishing
 * rebuild progress (depfs reconstruct);
 * the status vector's failure marks against the cluster view (lifted when
 * the MDS declares a marked server UP by a state change newer than the
 * failure, internal.h). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data_io.h"
#include "log.h"

/* A client with a server marked failed asks the MDS at most this often
 * whether the cluster has declared it up again. */
#define DC_MARK_RECHECK_MS 1000u
#define DC_STATUS_ERR_MAX 512u /* depfs_last_error() text kept across the recheck */

void dc_stat_servers(depfs_t *fs, Depfs__IoReply **out)
{
    if (fs->nservers == 0)
        return;
    dc_ctl *v = calloc(fs->nservers, sizeof *v);
    unsigned *index = calloc(fs->nservers, sizeof *index);
    unsigned n = 0;
    for (unsigned i = 0; i < fs->nservers; i++) {
        out[i] = NULL;
        /* servers the MDS calls rebuilding still answer IO_STAT; only a
         * local failure mark skips one */
        if (v == NULL || index == NULL || atomic_load(&fs->servers[i].down_until_ms) > dc_now_ms())
            continue;
        dc_ctl_init(&v[n], fs->servers[i].id, DEPFS__IO_OP__IO_STAT, 0);
        index[n++] = i;
    }
    dc_ctl_run(fs, v, n);
    for (unsigned j = 0; j < n; j++) {
        const dc_server *s = &fs->servers[index[j]];
        if (v[j].rc == 0) {
            out[index[j]] = v[j].rep;
            v[j].rep = NULL;
        } else if (v[j].rep != NULL) {
            log_warn("libdepfs: IO_STAT to server %u refused: %s", s->id,
                     v[j].rep->message ? v[j].rep->message : strerror(-v[j].rc));
        } else {
            log_warn("libdepfs: IO_STAT to server %u (%s): %s", s->id, s->address,
                     strerror(-v[j].rc));
        }
    }
    dc_ctl_free(v, n);
    free(v);
    free(index);
}

void dc_stat_free(depfs_t *fs, Depfs__IoReply **out)
{
    for (unsigned i = 0; i < fs->nservers; i++) {
        if (out[i])
            depfs__io_reply__free_unpacked(out[i], NULL);
        out[i] = NULL;
    }
}

static const Depfs__ServerInfo *mds_info(const Depfs__MdsReply *cl, uint32_t id)
{
    for (size_t i = 0; cl && i < cl->n_servers; i++)
        if (cl->servers[i]->id == id)
            return cl->servers[i];
    return NULL;
}

/* The server's own reply when it answered; the MDS's state (never "up"
 * for a server we cannot reach) and its rebuild progress always. */
static void status_fill(const dc_server *s, const Depfs__IoReply *rep, const Depfs__ServerInfo *si,
                        depfs_server_status *st)
{
    memset(st, 0, sizeof *st);
    st->id = s->id;
    snprintf(st->address, sizeof st->address, "%s", s->address);
    st->reachable = rep != NULL;
    st->mds_state = si ? (int)si->state : s->state;
    st->degraded_files = si ? si->degraded_files : 0;
    st->rebuild_done_bytes = si ? si->rebuild_done_bytes : 0;
    st->rebuild_total_bytes = si ? si->rebuild_total_bytes : 0;
    st->rebuild_rate_bps = si ? si->rebuild_rate_bps : 0;
    if (!rep) {
        st->state = st->mds_state == DEPFS__SERVER_STATE__SERVER_UP ? DEPFS__SERVER_STATE__SERVER_DOWN
                                                                    : st->mds_state;
        return;
    }
    st->state = rep->has_state ? (int)rep->state : st->mds_state;
    st->bytes_used = rep->bytes_used;
    st->bytes_free = rep->bytes_free;
    st->locks_granted = rep->locks_granted;
    st->locks_nacked = rep->locks_nacked;
    st->locks_held = rep->locks_held;
    st->lock_hold_ms_total = rep->lock_hold_ms_total;
    st->locks_retried = rep->locks_retried;
}

int depfs_cluster_status(depfs_t *fs, depfs_server_status *out, unsigned max)
{
    Depfs__MdsReply *cl = NULL;
    (void)dc_cluster_fetch(fs, &cl); /* states and progress as the MDS knows them; best effort */
    if (fs->nservers == 0) {
        if (cl)
            depfs__mds_reply__free_unpacked(cl, NULL);
        return 0;
    }
    Depfs__IoReply **reps = calloc(fs->nservers, sizeof *reps);
    if (!reps) {
        if (cl)
            depfs__mds_reply__free_unpacked(cl, NULL);
        dc_set_error("out of memory");
        return -ENOMEM;
    }
    dc_stat_servers(fs, reps);
    for (unsigned i = 0; i < fs->nservers && i < max; i++)
        status_fill(&fs->servers[i], reps[i], mds_info(cl, fs->servers[i].id), &out[i]);
    dc_stat_free(fs, reps);
    free(reps);
    if (cl)
        depfs__mds_reply__free_unpacked(cl, NULL);
    return (int)fs->nservers;
}

int depfs_report_progress(depfs_t *fs, uint32_t server_id, uint64_t done_bytes,
                          uint64_t total_bytes, uint64_t rate_bps)
{
    if (fs == NULL)
        return -EINVAL;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_server_id = true;
    req.server_id = server_id;
    req.has_rebuild_done_bytes = req.has_rebuild_total_bytes = req.has_rebuild_rate_bps = true;
    req.rebuild_done_bytes = done_bytes;
    req.rebuild_total_bytes = total_bytes;
    req.rebuild_rate_bps = rate_bps;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req, &rep);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
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
    char saved[DC_STATUS_ERR_MAX];
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

bool dc_status_still_failed(depfs_t *fs, dc_server *s)
{
    uint64_t now_ms = dc_now_ms();
    uint64_t last_ms = atomic_load(&fs->mark_recheck_ms);
    if (now_ms - last_ms >= DC_MARK_RECHECK_MS &&
        atomic_compare_exchange_strong(&fs->mark_recheck_ms, &last_ms, now_ms))
        dc_status_recheck(fs);
    return atomic_load(&s->down_until_ms) > dc_now_ms();
}
