/* purge.c - depfs-recovery's purger: a thread with its own libdepfs client
 * that drains the MDS's purge queue (depfs_purge_pass): the strip files of
 * unlinked files no handle may use any more go from every server, then
 * their entries go from the MDS. Bounded: REC_PURGE_BATCH files a pass,
 * passes REC_PURGE_BUSY_MS apart while there is work, REC_PURGE_IDLE_MS
 * apart otherwise. A file a down server still holds stays queued and is
 * tried again on later passes; a crash of this daemon anywhere leaves the
 * entry for the next one (IO_REMOVE is idempotent). */
#include <inttypes.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "rec.h"

/* The purger's own client (mounted lazily, kept). */
static depfs_t *purger_fs(rec_ctx *c, depfs_t **fs)
{
    static bool warned;
    if (*fs)
        return *fs;
    depfs_options o = { .config_path = c->cfg->path };
    int rv = depfs_mount(&o, fs);
    if (rv) {
        *fs = NULL;
        if (!warned)
            log_warn("purger: cannot start its client: %s (%s); will retry", strerror(-rv),
                     depfs_last_error());
        warned = true;
        return NULL;
    }
    warned = false;
    return *fs;
}

/* One pass; true when it was full (more may be waiting). */
static bool purge_once(rec_ctx *c, depfs_t **fs, uint64_t *cursor)
{
    depfs_purge_report rep;
    if (!purger_fs(c, fs))
        return false;
    int rc = depfs_purge_pass(*fs, REC_PURGE_BATCH, cursor, &rep);
    if (rc < 0) {
        log_warn("purger: listing the purge queue: %s (%s)", strerror(-rc), depfs_last_error());
        *cursor = 0;
        return false;
    }
    if (rep.purged > 0 || rep.failed > 0)
        log_info("purger: %u files purged (%" PRIu64 " bytes), %u left for a later pass", rep.purged,
                 rep.bytes, rep.failed);
    return rep.listed >= REC_PURGE_BATCH || !rep.eof;
}

static void *purger_main(void *arg)
{
    rec_ctx *c = arg;
    depfs_t *fs = NULL;
    uint64_t cursor = 0;
    while (!c->stopping) {
        bool busy = purge_once(c, &fs, &cursor);
        rec_wait_until(c, clock_now_ms() + (busy ? REC_PURGE_BUSY_MS : REC_PURGE_IDLE_MS));
    }
    if (fs)
        depfs_unmount(fs);
    return NULL;
}

int rec_purger_start(rec_ctx *c)
{
    int rc = pthread_create(&c->purger, NULL, purger_main, c);
    c->purger_started = rc == 0;
    return -rc;
}

void rec_purger_stop(rec_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    if (c->purger_started)
        pthread_join(c->purger, NULL);
    c->purger_started = false;
}
