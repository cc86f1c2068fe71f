/* data_truncate.c - the data side of truncate and of removing a file:
 * zero the cut part of the last kept stripe through the normal write path
 * (stripe locks, parity fixed), shorten every strip file, and remove every
 * strip file when the file's last link goes - inline, or in the background
 * (a bounded queue drained by a worker thread that lives while there is
 * work; depfs_unmount drains it). */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "data_io.h"
#include "log.h"

#define DC_RM_QUEUE_MAX 256u /* queued removals (all mounts); more: inline */

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

static int dc_truncate_strips(depfs_t *fs, dc_inode *in, uint64_t new_size)
{
    const layout *lay = &in->lay;
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_TRUNCATE);
        reqs[p].has_local_size = true;
        reqs[p].local_size = layout_local_size(lay, new_size, p);
        reqs[p].ignore_locks = fs->ignore_locks;
    }
    dc_io_run(fs, in->ino, reqs, lay->n);
    int rc = 0;
    uint32_t down = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        if (reqs[p].result == DC_ERR_DOWN)
            down |= 1u << p;
        else if (reqs[p].result < 0 && reqs[p].result != -ENOENT && rc == 0)
            rc = reqs[p].result;
    }
    /* a server that missed the cut keeps bytes past the new end, which a
     * later extension would read back: its rejoin must rebuild the file */
    if (rc == 0 && down != 0)
        rc = dc_record_down(fs, in->ino, lay, &down);
    if (rc == 0 && dc_popcount32(down) > lay->n - lay->k)
        rc = -EIO;
    free(reqs);
    return rc;
}

int dc_data_truncate(depfs_t *fs, dc_inode *in, uint64_t old_size, uint64_t new_size)
{
    int rc = dc_wb_flush(fs, in);
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

int dc_data_remove(depfs_t *fs, uint64_t ino, const layout *lay)
{
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++)
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_REMOVE);
    dc_io_run(fs, ino, reqs, lay->n);
    int rc = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (reqs[p].result < 0 && reqs[p].result != -ENOENT && reqs[p].result != DC_ERR_DOWN &&
            rc == 0)
            rc = reqs[p].result;
    if (rc < 0)
        dc_set_error("removing the strip files of inode %llu: %s", (unsigned long long)ino,
                     strerror(-rc));
    free(reqs);
    return rc;
}

/* ------------------------------------------------- background removal
 *
 * unlink returns once the MDS has committed; the n IO_REMOVE round trips
 * run here afterwards. A client that dies with removals queued leaves
 * orphan strip files on the servers (the MDS no longer knows the inode);
 * a scrub of strip files without an inode would reclaim them. */

typedef struct dc_rm_job {
    struct dc_rm_job *next;
    depfs_t *fs;
    uint64_t ino;
    layout lay;
} dc_rm_job;

static struct {
    pthread_mutex_t m;
    pthread_cond_t done_cv;   /* a job finished */
    dc_rm_job *head, **tail;
    unsigned queued;
    dc_rm_job *running;       /* the job the worker is on, or NULL */
    bool worker;              /* a worker thread exists */
} dc_rmq = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &dc_rmq.head, 0, NULL, false };

static void dc_rm_run(const dc_rm_job *j)
{
    int rc = dc_data_remove(j->fs, j->ino, &j->lay);
    if (rc < 0)
        log_warn("libdepfs: removing data of file %llu: %s", (unsigned long long)j->ino,
                 strerror(-rc));
}

static void *dc_rm_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&dc_rmq.m);
    while (dc_rmq.head) {
        dc_rm_job *j = dc_rmq.head;
        dc_rmq.head = j->next;
        if (!dc_rmq.head)
            dc_rmq.tail = &dc_rmq.head;
        dc_rmq.queued--;
        dc_rmq.running = j;
        pthread_mutex_unlock(&dc_rmq.m);
        dc_rm_run(j);
        pthread_mutex_lock(&dc_rmq.m);
        dc_rmq.running = NULL;
        free(j);
        pthread_cond_broadcast(&dc_rmq.done_cv);
    }
    dc_rmq.worker = false; /* idle: exit; the next enqueue starts another */
    pthread_cond_broadcast(&dc_rmq.done_cv);
    pthread_mutex_unlock(&dc_rmq.m);
    return NULL;
}

/* Under dc_rmq.m. */
static bool dc_rm_start_worker_locked(void)
{
    pthread_attr_t at;
    pthread_t thr;
    if (dc_rmq.worker)
        return true;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&thr, &at, dc_rm_worker, NULL);
    pthread_attr_destroy(&at);
    dc_rmq.worker = rc == 0;
    return dc_rmq.worker;
}

void dc_data_remove_async(depfs_t *fs, uint64_t ino, const layout *lay)
{
    dc_rm_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->fs = fs;
        j->ino = ino;
        j->lay = *lay;
        pthread_mutex_lock(&dc_rmq.m);
        if (dc_rmq.queued < DC_RM_QUEUE_MAX && dc_rm_start_worker_locked()) {
            *dc_rmq.tail = j;
            dc_rmq.tail = &j->next;
            dc_rmq.queued++;
            pthread_mutex_unlock(&dc_rmq.m);
            return;
        }
        pthread_mutex_unlock(&dc_rmq.m);
        free(j);
    }
    dc_rm_job inline_job = { .fs = fs, .ino = ino, .lay = *lay }; /* full: back pressure */
    dc_rm_run(&inline_job);
}

/* Under dc_rmq.m: a job of fs queued or running. */
static bool dc_rm_pending_locked(const depfs_t *fs)
{
    if (dc_rmq.running && dc_rmq.running->fs == fs)
        return true;
    for (const dc_rm_job *j = dc_rmq.head; j; j = j->next)
        if (j->fs == fs)
            return true;
    return false;
}

void dc_data_remove_drain(depfs_t *fs)
{
    pthread_mutex_lock(&dc_rmq.m);
    while (dc_rm_pending_locked(fs))
        pthread_cond_wait(&dc_rmq.done_cv, &dc_rmq.m);
    pthread_mutex_unlock(&dc_rmq.m);
}
