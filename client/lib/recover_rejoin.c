/* recover_rejoin.c - depfs_server_rejoin and depfs_set_server_state: the
 * dirty-record passes of a returning server and the state changes that
 * follow, pushed to every server (recovery/README.md "Rejoin"). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "recover.h"
#include "log.h"

/* Rejoin: dirty-record passes before giving up (writes keep racing). */
#define DC_REJOIN_PASSES_MAX 64u

typedef struct dc_idvec {
    uint64_t *v;
    size_t n, cap;
} dc_idvec;

static int dc_idvec_push(dc_idvec *d, uint64_t id)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        uint64_t *v = realloc(d->v, cap * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = id;
    return 0;
}

static int dc_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void dc_idvec_sort_unique(dc_idvec *d)
{
    if (d->n == 0)
        return;
    qsort(d->v, d->n, sizeof *d->v, dc_u64_cmp);
    size_t w = 1;
    for (size_t i = 1; i < d->n; i++)
        if (d->v[i] != d->v[w - 1])
            d->v[w++] = d->v[i];
    d->n = w;
}

/* Every file some live server holds a dirty record (S, file) for. */
static int dc_dirty_list(depfs_t *fs, uint32_t server, dc_idvec *out)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, server, ids, CONFIG_MAX_IOSERVERS);
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        uint64_t cursor = 0;
        for (bool more = true; more && rc == 0;) {
            dc_ctl c;
            dc_ctl_init(&c, ids[i], DEPFS__IO_OP__IO_DIRTY, cursor);
            c.req.has_local_size = true;
            c.req.local_size = server;
            dc_ctl_run(fs, &c, 1);
            if (c.rc == DC_ERR_DOWN) {
                more = false; /* its records are out of reach; writes recorded elsewhere too */
            } else if (c.rc < 0) {
                dc_set_error("listing dirty records for server %u on server %u: %s", server, ids[i],
                             strerror(-c.rc));
                rc = c.rc;
            } else {
                for (size_t j = 0; j < c.rep->n_dirty_files && rc == 0; j++)
                    rc = dc_idvec_push(out, c.rep->dirty_files[j]);
                more = c.rep->has_local_size && c.rep->local_size > cursor;
                cursor = c.rep->local_size;
            }
            dc_ctl_free(&c, 1);
        }
    }
    dc_idvec_sort_unique(out);
    return rc;
}

/* Progress of a rejoin across files: bytes of earlier files + this one. */
typedef struct dc_rj_progress {
    depfs_progress_fn fn;
    void *arg;
    uint64_t base;
    uint64_t last;
} dc_rj_progress;

static int dc_rj_progress_fn(void *arg, uint64_t bytes_done)
{
    dc_rj_progress *p = arg;
    p->last = bytes_done;
    return p->fn ? p->fn(p->arg, p->base + bytes_done) : 0;
}

/* Claim the file's records, rebuild it on S, clear what is still claimed:
 * the records stay (and keep S's units of the file untrusted for orphan
 * repair and other rebuilds) until the rebuild is done. */
static int dc_rejoin_file(depfs_t *fs, uint32_t server, uint64_t file, dc_rj_progress *prog)
{
    int rc = dc_dirty_act(fs, server, file, DEPFS__DIRTY_ACTION__DIRTY_CLAIM);
    if (rc < 0)
        return rc;
    prog->last = 0;
    rc = depfs_rebuild_file(fs, file, server, dc_rj_progress_fn, prog);
    prog->base += prog->last;
    if (rc == -ENOENT) {
        /* removed while S was away: its strip file goes too */
        dc_ctl c;
        dc_ctl_init(&c, server, DEPFS__IO_OP__IO_REMOVE, file);
        dc_ctl_run(fs, &c, 1);
        rc = c.rc == -ENOENT ? 0 : c.rc;
        dc_ctl_free(&c, 1);
    }
    if (rc == 0)
        rc = dc_dirty_act(fs, server, file, DEPFS__DIRTY_ACTION__DIRTY_CLEAR);
    return rc; /* on failure the records stay for the next try */
}

/* Dirty passes until no live server holds a record for `server`. */
static int dc_rejoin_passes(depfs_t *fs, uint32_t server, dc_rj_progress *prog)
{
    for (unsigned pass = 0; pass < DC_REJOIN_PASSES_MAX; pass++) {
        dc_idvec files = {0};
        int rc = dc_dirty_list(fs, server, &files);
        for (size_t i = 0; i < files.n && rc == 0; i++)
            rc = dc_rejoin_file(fs, server, files.v[i], prog);
        size_t n = files.n;
        free(files.v);
        if (rc < 0)
            return rc;
        if (n == 0)
            return 0;
        log_info("rejoin of server %u: pass %u rebuilt %zu files", server, pass + 1, n);
    }
    dc_set_error("rejoin of server %u: writes kept recording it dirty", server);
    return -EBUSY;
}

/* Push the epoch to every live server (S keeps REBUILDING). */
static int dc_rejoin_push(depfs_t *fs, uint32_t server, uint64_t epoch)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, server, ids, CONFIG_MAX_IOSERVERS);
    for (unsigned i = 0; i < n; i++) {
        int rc = dc_push_state(fs, ids[i], epoch, -1);
        if (rc < 0) /* it counts as behind (down) for clients until told */
            log_warn("rejoin of server %u: pushing epoch %llu to server %u: %s", server,
                     (unsigned long long)epoch, ids[i], strerror(-rc));
    }
    int rc = dc_push_state(fs, server, epoch, DEPFS__SERVER_STATE__SERVER_REBUILDING);
    if (rc < 0)
        dc_set_error("rejoin: server %u: %s", server, strerror(-rc));
    return rc;
}

/* Rejoin: how long every live server waits for the locks it held at the
 * epoch push (writers that planned without S) before the last pass. One
 * call waits at most a fraction of a request timeout (the call's own
 * timeout), and is repeated up to DC_REJOIN_DRAIN_TRIES times. */
#define DC_REJOIN_DRAIN_TRIES 8u

/* After the push of S's new epoch, wait until the writes that were in
 * flight across it let go of their stripes: a round planned without S and
 * finished after the push (some servers took it at the old epoch, others
 * refused it at the new one) records S dirty only while it still holds its
 * locks, and the last pass must see those records. */
static int dc_rejoin_drain(depfs_t *fs, uint32_t server)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, server, ids, CONFIG_MAX_IOSERVERS);
    uint32_t wait_ms = fs->cfg.request_timeout_ms ? fs->cfg.request_timeout_ms / 2
                                                  : DC_DEFAULT_TIMEOUT_MS / 2;
    dc_ctl v[CONFIG_MAX_IOSERVERS];
    for (unsigned attempt = 0; n > 0 && attempt < DC_REJOIN_DRAIN_TRIES; attempt++) {
        for (unsigned i = 0; i < n; i++) {
            dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_SET_STATE, 0);
            v[i].req.has_drain_ms = true;
            v[i].req.drain_ms = wait_ms;
        }
        dc_ctl_run(fs, v, n);
        unsigned busy = 0;
        for (unsigned i = 0; i < n; i++)
            if (v[i].rc == -EBUSY)
                ids[busy++] = ids[i]; /* others drained, or are out of reach */
        dc_ctl_free(v, n);
        n = busy;
    }
    if (n > 0) {
        dc_set_error("rejoin of server %u: writes that went around it still hold their stripes "
                     "on %u servers", server, n);
        return -EBUSY;
    }
    return 0;
}

int depfs_server_rejoin(depfs_t *fs, uint32_t server_id, depfs_progress_fn fn, void *arg)
{
    if (fs == NULL)
        return -EINVAL;
    if (dc_server_by_id(fs, server_id) == NULL) {
        dc_set_error("I/O server %u is not in the cluster", server_id);
        return -ENOENT;
    }
    dc_rj_progress prog = {.fn = fn, .arg = arg};
    int rc = dc_rejoin_passes(fs, server_id, &prog);
    uint64_t epoch = 0;
    if (rc == 0)
        rc = dc_mds_set_state(fs, server_id, DEPFS__SERVER_STATE__SERVER_UP, &epoch);
    if (rc == 0)
        rc = dc_rejoin_push(fs, server_id, epoch);
    if (rc == 0)
        rc = dc_rejoin_drain(fs, server_id);
    if (rc == 0)
        rc = dc_rejoin_passes(fs, server_id, &prog);
    if (rc == 0)
        rc = dc_push_state(fs, server_id, epoch, DEPFS__SERVER_STATE__SERVER_UP);
    if (rc < 0) {
        log_warn("rejoin of server %u failed: %s (%s)", server_id, strerror(-rc),
                 depfs_last_error());
        return rc == DC_ERR_DOWN ? -EHOSTDOWN : rc;
    }
    log_info("server %u rejoined at cluster epoch %llu (%llu bytes rebuilt)", server_id,
             (unsigned long long)epoch, (unsigned long long)prog.base);
    return 0;
}

int depfs_set_server_state(depfs_t *fs, uint32_t server_id, int state)
{
    if (fs == NULL || state < 0)
        return -EINVAL;
    uint64_t before = atomic_load(&fs->cluster_epoch), epoch = 0;
    int rc = dc_mds_set_state(fs, server_id, state, &epoch);
    if (rc < 0 || epoch <= before)
        return rc;
    /* like depfs-recovery: every server that runs learns the new epoch
     * (else lock/write requests of clients that know it are refused) */
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, UINT32_MAX, ids, CONFIG_MAX_IOSERVERS);
    for (unsigned i = 0; i < n; i++) {
        int prc = dc_push_state(fs, ids[i], epoch, -1);
        if (prc < 0)
            log_warn("server %u state %d: pushing epoch %llu to server %u: %s", server_id, state,
                     (unsigned long long)epoch, ids[i], strerror(-prc));
    }
    return 0;
}
