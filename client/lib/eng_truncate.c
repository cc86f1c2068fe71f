/* eng_truncate.c - the truncate engine: zero the cut part of the last kept
 * stripe through the normal write path (stripe locks, parity fixed),
 * shorten every strip file (servers that miss it are recorded dirty), and
 * the whole sequence setattr and ftruncate share (flush, data side, MDS
 * size, local size). */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"


/* Zero [from, to) through the stripe-lock write path, in bounded chunks. */
static int dc_zero_range(depfs_t *fs, dc_inode *in, uint64_t from, uint64_t to)
{
    assert(from <= to);
    uint64_t chunk_max = layout_stripe_bytes(&in->lay);
    uint8_t *zeros = calloc(1, chunk_max);
    if (zeros == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t at = from; at < to && rc == 0;) {
        uint64_t n = to - at < chunk_max ? to - at : chunk_max;
        rc = dc_write_range(fs, in, zeros, at, n, false);
        at += n;
    }
    free(zeros);
    return rc;
}

/* Positions of lay whose server does not answer an IO_STAT now (marked
 * down here, refused, or silent past the timeout): the truth a truncate
 * needs before it cuts, where this client's view of the cluster may be
 * older than the last server to fail. */
static uint32_t dc_unanswered(depfs_t *fs, const layout *lay)
{
    dc_ctl v[LAYOUT_MAX_N];
    for (unsigned p = 0; p < lay->n; p++)
        dc_ctl_init(&v[p], lay->servers[p], DEPFS__IO_OP__IO_STAT, 0);
    dc_ctl_run(fs, v, lay->n);
    uint32_t out = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (v[p].rc != 0)
            out |= 1u << p;
    dc_ctl_free(v, lay->n);
    return out;
}

/* Shorten every strip file. Once one server has cut its strip the old
 * bytes are gone there, so the truncate must not fail half done: a server
 * that refuses it for a moment (its epoch moving: -EAGAIN) is asked again,
 * and one that still refuses or cannot be reached missed the cut like a
 * down server: it is recorded dirty, so its rejoin rebuilds the file. Only
 * an error before any server cut anything fails the truncate, and so do
 * more than n-k servers that do not answer before it begins: recorded
 * dirty, they would leave no k servers to rebuild any of them from. One
 * that missed the cut while the cluster calls it UP serves the old bytes
 * past the new end (a later extension's hole) until it is out of service
 * or rebuilt: the truncate is acknowledged only then, as a write around
 * such a server is (dc_wait_missed_settled). */
static int dc_truncate_strips(depfs_t *fs, dc_inode *in, uint64_t new_size)
{
    const layout *lay = &in->lay;
    uint32_t silent = dc_unanswered(fs, lay);
    if (dc_popcount32(silent) > lay->n - lay->k) {
        dc_set_error("truncate of inode %llu: %u of %u servers do not answer, more than "
                     "n-k=%u: nothing cut", (unsigned long long)in->ino, dc_popcount32(silent),
                     lay->n, lay->n - lay->k);
        return -EIO;
    }
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_TRUNCATE);
        reqs[p].has_local_size = true;
        reqs[p].local_size = layout_local_size(lay, new_size, p);
        reqs[p].ignore_locks = fs->ignore_locks;
    }
    uint32_t done = 0, down = 0, again = 0;
    int rc = 0;
    for (unsigned attempt = 0; attempt <= DC_FAILOVER_RESTARTS_MAX; attempt++) {
        if (attempt > 0)
            dc_lock_backoff(attempt);
        dc_io_run(fs, in->ino, reqs, lay->n);
        again = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!reqs[p].active)
                continue;
            int r = reqs[p].result;
            if (r == 0 || r == -ENOENT)
                done |= 1u << p;
            else if (r == DC_ERR_DOWN)
                down |= 1u << p;
            else if (r == -EAGAIN || r == -ESTALE)
                again |= 1u << p;
            else if (rc == 0)
                rc = r;
            reqs[p].active = (again >> p) & 1u;
        }
        if (again == 0 || rc != 0)
            break;
    }
    if (done == 0) { /* nothing was cut anywhere: the truncate simply failed */
        if (rc == 0) {
            rc = -EIO;
            dc_set_error("truncate of inode %llu: no server could cut its strip: nothing cut",
                         (unsigned long long)in->ino);
        }
        free(reqs);
        return rc;
    }
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    uint32_t missed = all & ~(done | down);
    if (missed != 0)
        log_warn("libdepfs: truncate of inode %llu: servers at positions %#x refused to cut "
                 "their strips (%s): recorded as missing the cut", (unsigned long long)in->ino,
                 missed, rc != 0 ? strerror(-rc) : "epoch changing");
    /* a server that missed the cut keeps bytes past the new end, which a
     * later extension would read back: its rejoin must rebuild the file */
    down |= missed;
    rc = 0;
    if (down != 0)
        rc = dc_record_down(fs, in->ino, lay, &down);
    if (rc == 0 && dc_popcount32(down) > lay->n - lay->k)
        rc = -EIO;
    if (rc == 0 && down != 0)
        rc = dc_wait_missed_settled(fs, lay, in->ino, down);
    free(reqs);
    return rc;
}

int dc_data_truncate(depfs_t *fs, dc_inode *in, uint64_t old_size, uint64_t new_size)
{
    int rc = dc_data_flush(fs, in, NULL, false);
    if (rc < 0)
        return rc;
    if (new_size >= old_size)
        return 0; /* growing: holes read as zeros, nothing to store */
    uint64_t sb = layout_stripe_bytes(&in->lay);
    if (new_size % sb != 0) {
        uint64_t stripe_end = (new_size / sb + 1) * sb;
        uint64_t to = old_size < stripe_end ? old_size : stripe_end;
        rc = dc_zero_range(fs, in, new_size, to);
        if (rc < 0) {
            dc_set_error("truncate of inode %llu to %llu: zeroing the cut stripe failed: %s",
                         (unsigned long long)in->ino, (unsigned long long)new_size,
                         strerror(-rc));
            return rc;
        }
    }
    rc = dc_truncate_strips(fs, in, new_size);
    if (rc < 0)
        dc_set_error("truncate of inode %llu to %llu: shortening strip files failed: %s",
                     (unsigned long long)in->ino, (unsigned long long)new_size, strerror(-rc));
    return rc;
}

/* The truncate sequence shared by setattr and ftruncate: flush -> data
 * side -> MDS size -> local size. */
int dc_truncate(depfs_t *fs, dc_inode *in, uint64_t mds_size, uint64_t new_size)
{
    int rc = dc_data_flush(fs, in, NULL, false);
    if (rc == 0)
        rc = dc_inode_commit_size(fs, in, NULL);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&in->lock);
    uint64_t old_size = in->size > mds_size ? in->size : mds_size;
    pthread_mutex_unlock(&in->lock);

    rc = dc_data_truncate(fs, in, old_size, new_size);
    if (rc < 0)
        return rc;
    /* a cut frees units: what the strips occupy now goes with the size
     * (not measured, a server down: the MDS only bounds its figure) */
    uint64_t alloc_bytes;
    bool measured = new_size < old_size && dc_data_alloc(fs, in, &alloc_bytes) == 0;
    Depfs__Attr a = DEPFS__ATTR__INIT;
    a.ino = in->ino;
    a.size = new_size;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_ino = 1;
    req.ino = in->ino;
    req.has_set_mask = 1;
    req.set_mask = DEPFS_SET_SIZE;
    req.attr = &a;
    req.has_alloc_bytes = measured;
    req.alloc_bytes = measured ? alloc_bytes : 0;
    Depfs__MdsReply *rep = NULL;
    rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_SETATTR, &req, &rep);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&in->lock);
    in->size = new_size;
    in->size_dirty = false;
    in->written_end = 0;
    in->size_gen++;
    pthread_mutex_unlock(&in->lock);
    return 0;
}
