/* eng_remove.c - removing every strip file of a file whose last link went
 * away: inline, or in the background (a bounded queue drained by a worker
 * thread that lives while there is work; depfs_unmount drains it). */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"

#define DC_RM_QUEUE_MAX 256u /* queued removals (all mounts); more: inline */

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
