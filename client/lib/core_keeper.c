/* core_keeper.c - libdepfs core: the keeper thread, which renews the MDS's
 * holds (mds/holds.h) of the files open in this client whether or not a
 * request touches them. Requests renew a file's capability or hold in its
 * second half on their own; a handle left idle for longer than a
 * capability's life (AUTH_CAP_TTL_S) would otherwise let its hold lapse,
 * and a file unlinked meanwhile (by this client or another) would have its
 * strip files purged under the open handle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "log.h"

/* Rounds per capability life: a hold is renewed in its second half, and
 * the keeper looks often enough to find it there with time to spare. */
#define DC_KEEPER_PERIOD_S (AUTH_CAP_TTL_S / 8u)
/* Files one batch of a round looks at; a round goes through all of them. */
#define DC_KEEPER_FILES_MAX 4096u
_Static_assert(DC_KEEPER_PERIOD_S > 0 && DC_KEEPER_PERIOD_S < AUTH_CAP_TTL_S / 4u,
               "the keeper looks several times in a hold's second half");

size_t dc_keeper_pass(depfs_t *fs)
{
    uint64_t *inos = malloc(DC_KEEPER_FILES_MAX * sizeof(*inos));
    if (inos == NULL)
        return 0; /* the next round tries again */
    size_t kept = 0;
    unsigned cursor = 0;
    while (cursor < DC_INODE_BUCKETS) {
        size_t n = dc_inodes_open_list(fs, &cursor, inos, DC_KEEPER_FILES_MAX);
        for (size_t i = 0; i < n; i++)
            dc_cap_keep(fs, inos[i]); /* a file closed meanwhile: released, no entry */
        kept += n;
    }
    free(inos);
    return kept;
}

static void *keeper_main(void *arg)
{
    depfs_t *fs = arg;
    pthread_mutex_lock(&fs->keeper_lock);
    while (!fs->keeper_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += DC_KEEPER_PERIOD_S;
        while (!fs->keeper_stop &&
               pthread_cond_timedwait(&fs->keeper_wake, &fs->keeper_lock, &until) != ETIMEDOUT)
            ;
        if (fs->keeper_stop)
            break;
        pthread_mutex_unlock(&fs->keeper_lock);
        dc_keeper_pass(fs);
        pthread_mutex_lock(&fs->keeper_lock);
    }
    pthread_mutex_unlock(&fs->keeper_lock);
    return NULL;
}

int dc_keeper_start(depfs_t *fs)
{
    fs->keeper_stop = false;
    int rc = pthread_create(&fs->keeper, NULL, keeper_main, fs);
    if (rc != 0) {
        dc_set_error("cannot start the hold keeper thread: %s", strerror(rc));
        return -rc;
    }
    fs->keeper_running = true;
    return 0;
}

void dc_keeper_stop(depfs_t *fs)
{
    if (!fs->keeper_running)
        return;
    pthread_mutex_lock(&fs->keeper_lock);
    fs->keeper_stop = true;
    pthread_cond_signal(&fs->keeper_wake);
    pthread_mutex_unlock(&fs->keeper_lock);
    pthread_join(fs->keeper, NULL);
    fs->keeper_running = false;
}
