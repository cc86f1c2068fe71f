/* core_releases.c - libdepfs core: the releaser, which gives the MDS's
 * holds (mds/holds.h) of files closed here back in batches. A last close
 * queues its file's hold (dc_release_queue) and returns; the releaser
 * thread sends what gathered within DC_RELEASE_DELAY_MS as one MDS_RELEASE
 * of up to WIRE_MDS_RELEASES_MAX holds, so a process that opens and closes
 * many files pays the MDS a round trip per batch instead of one per close,
 * and an unlinked file is purged at most that much later. Each hold goes
 * back with the newest generation the client was given for it, so a
 * release that arrives after a new open of the same file here leaves that
 * open's hold alone, however late it is sent. A release that fails (the
 * MDS unreachable) is not retried: the hold then ends with its life.
 * The inode's handle tag stays pinned until its release is sent. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "core.h"
#include "depfs_admin.h"
#include "log.h"

/* Sends batch[0..n) as one MDS_RELEASE, then lets go of their tags. */
static void send_batch(depfs_t *fs, const dc_release *batch, unsigned n)
{
    Depfs__HoldRelease items[WIRE_MDS_RELEASES_MAX], *ptrs[WIRE_MDS_RELEASES_MAX];
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    assert(n > 0 && n <= WIRE_MDS_RELEASES_MAX);
    for (unsigned i = 0; i < n; i++) {
        depfs__hold_release__init(&items[i]);
        items[i].ino = batch[i].ino;
        items[i].has_hold_gen = batch[i].hold_gen != 0; /* else: an MDS from before them */
        items[i].hold_gen = batch[i].hold_gen;
        ptrs[i] = &items[i];
    }
    req.n_releases = n;
    req.releases = ptrs;
    dc_test_pause(DC_PAUSE_BEFORE_RELEASE);
    atomic_fetch_add(&fs->releases_batches, 1);
    int rc = dc_mds_call_ticketed(fs, DEPFS__MDS_OP__MDS_RELEASE, &req, &rep);
    if (rc < 0) /* the holds then end with their life (mds/holds.h) */
        log_debug("libdepfs: giving %u holds back to the MDS: %s", n, strerror(-rc));
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    for (unsigned i = 0; i < n; i++)
        dc_handle_unpin(fs, batch[i].ino); /* after its last request */
}

/* Takes the queued holds into out (under releases_lock): their count. */
static unsigned take_locked(depfs_t *fs, dc_release out[WIRE_MDS_RELEASES_MAX])
{
    unsigned n = fs->n_releases;
    memcpy(out, fs->releases, n * sizeof(*out));
    fs->n_releases = 0;
    return n;
}

/* Sends what was taken from the queue (releases_lock held, and held again
 * on return); a flush waits while a batch is on its way. */
static void send_taken_locked(depfs_t *fs, const dc_release *batch, unsigned n)
{
    fs->releases_in_flight++;
    pthread_mutex_unlock(&fs->releases_lock);
    send_batch(fs, batch, n);
    pthread_mutex_lock(&fs->releases_lock);
    fs->releases_in_flight--;
    pthread_cond_broadcast(&fs->releases_sent);
}

static void *releaser_main(void *arg)
{
    depfs_t *fs = arg;
    dc_release batch[WIRE_MDS_RELEASES_MAX];
    pthread_mutex_lock(&fs->releases_lock);
    for (;;) {
        while (fs->n_releases == 0 && !fs->releases_stop)
            pthread_cond_wait(&fs->releases_wake, &fs->releases_lock);
        if (fs->n_releases == 0)
            break; /* stopping, nothing left */
        struct timespec until = clock_deadline_after_ms(DC_RELEASE_DELAY_MS);
        while (!fs->releases_stop && fs->n_releases < WIRE_MDS_RELEASES_MAX &&
               pthread_cond_timedwait(&fs->releases_wake, &fs->releases_lock, &until) != ETIMEDOUT)
            ; /* more closes may join the batch */
        unsigned n = take_locked(fs, batch);
        if (n > 0)
            send_taken_locked(fs, batch, n);
    }
    pthread_mutex_unlock(&fs->releases_lock);
    return NULL;
}

void dc_release_queue(depfs_t *fs, uint64_t ino, uint64_t hold_gen)
{
    dc_release full[WIRE_MDS_RELEASES_MAX];
    unsigned n_full;
    pthread_mutex_lock(&fs->releases_lock);
    if (!fs->releases_running || fs->releases_stop) { /* not started, or stopping: at once */
        pthread_mutex_unlock(&fs->releases_lock);
        send_batch(fs, &(dc_release){ .ino = ino, .hold_gen = hold_gen }, 1);
        return;
    }
    while (fs->n_releases == WIRE_MDS_RELEASES_MAX) { /* the releaser is behind: help it */
        n_full = take_locked(fs, full);
        send_taken_locked(fs, full, n_full); /* others may fill it again meanwhile */
    }
    fs->releases[fs->n_releases++] = (dc_release){ .ino = ino, .hold_gen = hold_gen };
    if (fs->n_releases == 1 || fs->n_releases == WIRE_MDS_RELEASES_MAX)
        pthread_cond_signal(&fs->releases_wake);
    pthread_mutex_unlock(&fs->releases_lock);
}

void depfs_release_holds(depfs_t *fs)
{
    dc_release batch[WIRE_MDS_RELEASES_MAX];
    pthread_mutex_lock(&fs->releases_lock);
    unsigned n = take_locked(fs, batch);
    if (n > 0)
        send_taken_locked(fs, batch, n);
    while (fs->releases_in_flight > 0) /* the releaser's batch: it may hold earlier ones */
        pthread_cond_wait(&fs->releases_sent, &fs->releases_lock);
    pthread_mutex_unlock(&fs->releases_lock);
}

int dc_releases_start(depfs_t *fs)
{
    pthread_mutex_lock(&fs->releases_lock);
    fs->releases_stop = false;
    int rc = pthread_create(&fs->releaser, NULL, releaser_main, fs);
    fs->releases_running = rc == 0;
    pthread_mutex_unlock(&fs->releases_lock);
    if (rc != 0) {
        dc_set_error("cannot start the hold releaser thread: %s", strerror(rc));
        return -rc;
    }
    return 0;
}

void dc_releases_stop(depfs_t *fs)
{
    pthread_mutex_lock(&fs->releases_lock);
    bool running = fs->releases_running;
    fs->releases_stop = true;
    pthread_cond_signal(&fs->releases_wake);
    pthread_mutex_unlock(&fs->releases_lock);
    if (!running)
        return;
    pthread_join(fs->releaser, NULL); /* it sends what is queued first */
    pthread_mutex_lock(&fs->releases_lock);
    fs->releases_running = false;
    pthread_mutex_unlock(&fs->releases_lock);
}
