/* api_status.c - libdepfs entry points: asking every I/O server for its
 * state, usage and lock counters (IO_STAT, all servers in parallel,
 * rebuilding ones too), with the MDS's state and rebuild progress of each,
 * for depfs_cluster_status and the raw-bytes part of depfs_statfs;
 * publishing rebuild progress (depfs reconstruct); the MDS's purge queue
 * (depfs_purge_queue). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api.h"
#include "log.h"


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
    st->locks_waiting = rep->locks_waiting;
    st->damaged_blocks = rep->damaged_blocks;
    if (rep->scrub) {
        st->scrub_rate = rep->scrub->rate;
        st->scrub_bytes_verified = rep->scrub->bytes_verified;
        st->scrub_blocks_damaged = rep->scrub->blocks_damaged;
        st->scrub_blocks_repaired = rep->scrub->blocks_repaired;
        st->scrub_passes = rep->scrub->passes;
        st->scrub_last_pass_end_s = rep->scrub->has_last_pass_end_s ? rep->scrub->last_pass_end_s : 0;
        st->scrub_last_pass_bytes = rep->scrub->last_pass_bytes;
        st->scrub_last_pass_ms = rep->scrub->last_pass_ms;
    }
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


int depfs_purge_queue(depfs_t *fs, depfs_purge_status *out)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    if (!fs || !out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_STATFS, &req, &rep);
    if (rc == 0 && (!rep->has_purge_files || !rep->has_purge_bytes)) {
        dc_set_error("the MDS reports no purge queue (an older MDS)");
        rc = -EPROTO;
    }
    if (rc == 0) {
        out->files = rep->purge_files;
        out->bytes = rep->purge_bytes;
        out->floor_s = rep->has_purge_floor_s ? rep->purge_floor_s : 0;
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}
