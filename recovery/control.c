/* control.c - the calls depfs-recovery's main thread makes to the MDS
 * (cluster view, state changes, progress reports) and IO_SET_STATE to the
 * I/O servers (one server's state, or a new epoch pushed to all at once),
 * all through its libdepfs client (depfs_admin.h "cluster control"): one
 * retrying MDS call and one request fan-out for the whole code base. */
#include "rec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int rec_mds_cluster(rec_ctx *c, rec_mds_server *out, unsigned max, unsigned *n, uint64_t *epoch)
{
    int rv = rec_fs_ensure(c);
    if (rv)
        return rv;
    depfs_server_state *v = calloc(max ? max : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    rv = depfs_mds_cluster(c->fs, v, max, epoch);
    if (rv >= 0) {
        *n = (unsigned)rv < max ? (unsigned)rv : max;
        for (unsigned i = 0; i < *n; i++)
            out[i] = (rec_mds_server){ .id = v[i].id, .state = (uint32_t)v[i].state,
                                       .state_epoch = v[i].state_epoch };
        rv = 0;
    } else {
        log_warn("MDS_CLUSTER failed: %s (%s)", strerror(-rv), depfs_last_error());
    }
    free(v);
    return rv;
}

int rec_mds_set_state(rec_ctx *c, uint32_t id, uint32_t state, uint64_t *epoch)
{
    int rv = rec_fs_ensure(c);
    if (rv == 0)
        rv = depfs_mds_set_state(c->fs, id, (int)state, epoch);
    if (rv) {
        log_warn("MDS refused SET_SERVER_STATE: %s (%s)", strerror(-rv), depfs_last_error());
        return rv;
    }
    if (*epoch > c->mds_epoch)
        c->mds_epoch = *epoch;
    return 0;
}

int rec_mds_progress(rec_ctx *c, uint32_t id, const uint64_t *done_bytes,
                     uint64_t degraded_files)
{
    int rv = rec_fs_ensure(c);
    return rv ? rv : depfs_report_degraded(c->fs, id, done_bytes, degraded_files);
}

/* What a server just answered is newer than its prober's last heartbeat:
 * the next decision round must not act on the older picture. */
static void note_reply(rec_ctx *c, rec_server *s, const depfs_push_result *r)
{
    if (!r->answered)
        return;
    pthread_mutex_lock(&c->mu);
    if (r->state >= 0)
        s->obs.state = (uint32_t)r->state;
    s->obs.epoch = r->epoch;
    pthread_mutex_unlock(&c->mu);
}

int rec_io_set_state(rec_ctx *c, rec_server *s, int state, uint64_t epoch)
{
    int rv = rec_fs_ensure(c);
    if (rv)
        return rv;
    depfs_push_result r;
    rv = depfs_push_state(c->fs, &s->id, 1, state, epoch, &r);
    if (rv < 0)
        return rv;
    note_reply(c, s, &r);
    return r.rc;
}

unsigned rec_push_epoch(rec_ctx *c, uint64_t epoch)
{
    if (rec_fs_ensure(c) != 0)
        return 0;
    uint32_t *ids = calloc(c->nservers ? c->nservers : 1, sizeof(*ids));
    unsigned *index = calloc(c->nservers ? c->nservers : 1, sizeof(*index));
    depfs_push_result *r = calloc(c->nservers ? c->nservers : 1, sizeof(*r));
    unsigned n = 0, took = 0;
    if (!ids || !index || !r)
        goto out;
    for (unsigned i = 0; i < c->nservers; i++) {
        pthread_mutex_lock(&c->mu);
        bool answered = c->servers[i].obs.answered;
        pthread_mutex_unlock(&c->mu);
        if (answered) {
            ids[n] = c->servers[i].id;
            index[n++] = i;
        }
    }
    int rv = depfs_push_state(c->fs, ids, n, -1, epoch, r);
    for (unsigned j = 0; rv >= 0 && j < n; j++) {
        note_reply(c, &c->servers[index[j]], &r[j]);
        took += r[j].rc == 0;
        if (r[j].rc != 0)
            log_debug("ioserver %u did not take epoch %llu", ids[j], (unsigned long long)epoch);
    }
out:
    free(ids);
    free(index);
    free(r);
    log_debug("epoch %llu pushed to %u servers", (unsigned long long)epoch, took);
    return took;
}
