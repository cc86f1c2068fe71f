/* recover_common.c - what the recovery operations share: a file as they
 * see it (layout, size, codec), which positions of a layout can be reached
 * and which hold units that cannot be trusted (recovery/README.md "Trusted
 * units"), the dirty records (S, file) kept by the servers, the state and
 * epoch calls (MDS_SET_SERVER_STATE, IO_SET_STATE), and control requests
 * whose replies the caller reads (dc_ctl). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "recover.h"
#include "log.h"

/* t for ino with layout lay and the MDS's size mds_size: the size raised to
 * this client's own uncommitted one, the codec. */
static int dc_target_fill(depfs_t *fs, uint64_t ino, const layout *lay, uint64_t mds_size,
                          dc_target *t)
{
    memset(t, 0, sizeof *t);
    t->ino = ino;
    t->lay = *lay;
    t->size = mds_size;
    char why[128];
    if (layout_validate(&t->lay, why, sizeof why) < 0) {
        dc_set_error("inode %llu has a bad layout: %s", (unsigned long long)ino, why);
        return -EINVAL;
    }
    uint64_t local = 0;
    int64_t mtime_ns = 0;
    if (dc_inode_local_size(fs, ino, &local, &mtime_ns) && local > t->size)
        t->size = local;
    t->cd = dc_codec(fs, t->lay.n, t->lay.k, t->lay.codec_version);
    return t->cd == NULL ? -EINVAL : 0;
}

int dc_target_load(depfs_t *fs, uint64_t ino, dc_target *t)
{
    memset(t, 0, sizeof *t);
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc < 0)
        goto out;
    if (rep->attr == NULL || !S_ISREG(rep->attr->mode) || rep->layout == NULL) {
        dc_set_error("inode %llu is not a regular file with a layout", (unsigned long long)ino);
        rc = -EINVAL;
        goto out;
    }
    layout lay;
    dc_layout_from_pb(rep->layout, &lay);
    rc = dc_target_fill(fs, ino, &lay, rep->attr->size, t);
out:
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int dc_target_of_handle(depfs_t *fs, const depfs_fh_t *fh, dc_target *t)
{
    /* the handle's inode has the size the open's MDS reply gave, or this
     * client's own larger one: dc_target_fill's local size */
    return dc_target_fill(fs, fh->inode->ino, &fh->inode->lay, 0, t);
}

/* Layout position of server id, or -1. */
int dc_pos_of(const layout *lay, uint32_t id)
{
    for (unsigned p = 0; p < lay->n; p++)
        if (lay->servers[p] == id)
            return (int)p;
    return -1;
}

/* Positions whose servers can be talked to: not failed locally and not
 * DOWN for the MDS (REBUILDING/RECONSTRUCTING servers take locks/writes). */
uint32_t dc_reachable_mask(depfs_t *fs, const layout *lay)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_server *s = dc_server_by_id(fs, lay->servers[p]);
        if (s == NULL || atomic_load(&s->down_until_ms) > dc_now_ms())
            continue;
        pthread_mutex_lock(&s->lock);
        bool dead = s->state == DEPFS__SERVER_STATE__SERVER_DOWN;
        pthread_mutex_unlock(&s->lock);
        if (!dead)
            m |= 1u << p;
    }
    return m;
}

int dc_server_state(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (s == NULL)
        return DEPFS__SERVER_STATE__SERVER_DOWN;
    pthread_mutex_lock(&s->lock);
    int st = s->state;
    pthread_mutex_unlock(&s->lock);
    return st;
}




/* Cluster servers other than `except` that are not failed locally or DOWN
 * for the MDS; returns how many ids were written (at most max). */
unsigned dc_live_servers(depfs_t *fs, uint32_t except, uint32_t *ids, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < fs->nservers && n < max; i++) {
        dc_server *s = &fs->servers[i];
        if (s->id == except || atomic_load(&s->down_until_ms) > dc_now_ms())
            continue;
        if (dc_server_state(fs, s->id) == DEPFS__SERVER_STATE__SERVER_DOWN)
            continue;
        ids[n++] = s->id;
    }
    return n;
}

/* IO_SET_STATE to one server: the epoch (always) and a state (>= 0). */
int dc_push_state(depfs_t *fs, uint32_t id, uint64_t epoch, int state)
{
    dc_ctl c;
    dc_ctl_init(&c, id, DEPFS__IO_OP__IO_SET_STATE, 0);
    c.req.has_cluster_epoch = true;
    c.req.cluster_epoch = epoch;
    if (state >= 0) {
        c.req.has_server_state = true;
        c.req.server_state = (uint32_t)state;
    }
    dc_ctl_run(fs, &c, 1);
    int rc = c.rc;
    dc_ctl_free(&c, 1);
    return rc;
}

/* Longest strip file (bytes) of ino among the positions in mask. */
int dc_strip_extent(depfs_t *fs, const dc_target *t, uint32_t mask, uint64_t *max_bytes)
{
    dc_ctl v[LAYOUT_MAX_N];
    unsigned n = 0;
    for (unsigned p = 0; p < t->lay.n; p++)
        if ((mask >> p) & 1u)
            dc_ctl_init(&v[n++], t->lay.servers[p], DEPFS__IO_OP__IO_STAT, t->ino);
    dc_ctl_run(fs, v, n);
    int rc = 0;
    *max_bytes = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rc == -ENOENT)
            continue;
        if (v[i].rc < 0) {
            dc_set_error("IO_STAT of inode %llu on server %u: %s", (unsigned long long)t->ino,
                         v[i].server_id, strerror(-v[i].rc));
            rc = v[i].rc;
            continue;
        }
        if (v[i].rep->has_local_size && v[i].rep->local_size > *max_bytes)
            *max_bytes = v[i].rep->local_size;
    }
    dc_ctl_free(v, n);
    return rc;
}

/* Positions of the layout whose units of ino cannot be trusted now:
 * unreachable, an empty replacement (RECONSTRUCTING), or named in a dirty
 * record for ino on any server of the layout (DIRTY_PROBE). A server that
 * is back but still REBUILDING holds current units of every file no write
 * went around it for: a write around a server stores the dirty records
 * before any data, so without a record nothing of ino was missed there. */
int dc_untrusted_mask(depfs_t *fs, const layout *lay, uint64_t ino, bool refresh,
                      uint32_t *untrusted)
{
    if (refresh)
        (void)dc_cluster_refresh(fs); /* the servers' states, fresh from the MDS */
    uint32_t bad = ~dc_reachable_mask(fs, lay) & ((lay->n < 32 ? (1u << lay->n) : 0u) - 1u);
    for (unsigned p = 0; p < lay->n; p++)
        if (dc_server_state(fs, lay->servers[p]) == DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING)
            bad |= 1u << p;
    uint32_t recorded = 0, silent = 0;
    int rc = dc_dirty_probe(fs, lay, ino, &recorded, &silent, NULL);
    *untrusted = bad | recorded | silent;
    return rc;
}

/* Claim or clear (DIRTY_CLAIM / DIRTY_CLEAR, recovery/README.md) the dirty
 * record (S, file) on every live server, or record it (an empty WRITE
 * naming S down: dc_dirty_record). A clear refused because a write recorded
 * the file again since the claim (-EAGAIN) is no error: the next pass
 * rebuilds it once more. */
int dc_dirty_act(depfs_t *fs, uint32_t server, uint64_t file, int action)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, server, ids, CONFIG_MAX_IOSERVERS);
    dc_ctl *v = calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    uint32_t down = server;
    for (unsigned i = 0; i < n; i++) {
        if (action >= 0) {
            dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_DIRTY, file);
            v[i].req.has_local_size = true;
            v[i].req.local_size = server;
            v[i].req.has_dirty_action = true;
            v[i].req.dirty_action = (Depfs__DirtyAction)action;
        } else {
            dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_WRITE, file);
            v[i].req.n_down_servers = 1;
            v[i].req.down_servers = &down;
        }
    }
    dc_ctl_run(fs, v, n);
    int rc = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rc >= 0 || v[i].rc == DC_ERR_DOWN || rc != 0)
            continue;
        if (v[i].rc == -EAGAIN && action == DEPFS__DIRTY_ACTION__DIRTY_CLEAR)
            continue;
        dc_set_error("%s dirty record (%u, %llu) on server %u: %s",
                     action == DEPFS__DIRTY_ACTION__DIRTY_CLAIM   ? "claiming"
                     : action == DEPFS__DIRTY_ACTION__DIRTY_CLEAR ? "clearing"
                                                                   : "recording",
                     server, (unsigned long long)file, ids[i], strerror(-v[i].rc));
        rc = v[i].rc;
    }
    dc_ctl_free(v, n);
    free(v);
    return rc;
}

int dc_dirty_record(depfs_t *fs, uint32_t server, uint64_t file)
{
    return dc_dirty_act(fs, server, file, DC_DIRTY_RECORD);
}

/* MDS_SET_SERVER_STATE(server, state); the new epoch in *epoch. */
int dc_mds_set_state(depfs_t *fs, uint32_t server, int state, uint64_t *epoch)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_server_id = true;
    req.server_id = server;
    req.has_server_state = true;
    req.server_state = (uint32_t)state;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req, &rep);
    uint64_t e = rc == 0 && rep->has_cluster_epoch ? rep->cluster_epoch : 0;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    if (rc < 0)
        return rc;
    rc = dc_cluster_refresh(fs); /* our own table and epoch, too */
    if (rc < 0)
        return rc;
    uint64_t mine = atomic_load(&fs->cluster_epoch);
    *epoch = e > mine ? e : mine;
    return 0;
}
