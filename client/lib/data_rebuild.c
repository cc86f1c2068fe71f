/* data_rebuild.c - libdepfs recovery operations (depfs.h "recovery
 * operations", recovery/README.md): rebuilding one server's units of a file
 * from the others under the stripe locks, repairing the parity of stripes
 * an orphaned lock left behind, the rejoin of a rebuilt server (dirty-record
 * passes, MDS state and epoch pushed to every server), a server state set
 * by hand the same way (depfs_set_server_state) and the namespace walk a
 * reconstruction starts from.
 *
 * Rebuild of file F onto server S, per batch of stripes (units of different
 * stripes sit on different servers thanks to rotation, so one batch reads
 * every server in parallel):
 *   phase 1  LOCK+READ of k whole source units per stripe (data units
 *            first), IO_LOCK on every other up position, S included:
 *            writers that include S and writers that record S dirty are
 *            both excluded. NACK: release, back off, retry.
 *   decode   S's unit of each stripe (data or parity alike).
 *   holes    a unit that decodes to zeros where S's strip file has no data
 *            (past its end, asked under the locks) is not written: it reads
 *            as zeros already, and sparse files stay sparse on S.
 *   phase 2  WRITE+UNLOCK (sync) of S's other units (IO_UNLOCK when none);
 *            IO_UNLOCK elsewhere.
 * Then, under a lock of every stripe past the end, S's strip file is cut to
 * the length the survivors' strips have (they may hold uncommitted writes
 * past the MDS size: those stripes are rebuilt first).
 *
 * Requests to S are sent even though the status vector calls it down
 * (any_state): a REBUILDING server accepts locks and writes. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "data_io.h"
#include "log.h"

/* Re-checks of the tail when survivors grew while we rebuilt. */
#define DC_RB_TAIL_ROUNDS_MAX 8u
/* "Every stripe from here on" for the tail lock (no overflow past it). */
#define DC_RB_TAIL_STRIPES (UINT64_MAX / 4)
/* Rejoin: dirty-record passes before giving up (writes keep racing). */
#define DC_REJOIN_PASSES_MAX 64u
/* Namespace walk: directories deeper than this are skipped (logged). */
#define DC_WALK_DEPTH_MAX 1024u
/* Orphan repair: lock rounds before giving up (-EBUSY). */
#define DC_ORPHAN_ATTEMPTS_MAX 100u
/* Orphan repair: stale lock ranges remembered per position (more: the
 * whole range counts as held there). */
#define DC_ORPHAN_TAKEN_MAX 16u
#define DC_INOSET_MIN_SLOTS 1024u

/* ================================================================ helpers */

/* A file as the recovery sees it: layout, size, codec, S's position. */
typedef struct dc_target {
    uint64_t ino;
    layout lay;
    uint64_t size;
    const codec *cd;
} dc_target;

static int dc_target_load(depfs_t *fs, uint64_t ino, dc_target *t)
{
    memset(t, 0, sizeof *t);
    t->ino = ino;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, ino, &rep);
    if (rc < 0)
        goto out;
    if (rep->attr == NULL || !S_ISREG(rep->attr->mode) || rep->layout == NULL) {
        dc_set_error("inode %llu is not a regular file with a layout", (unsigned long long)ino);
        rc = -EINVAL;
        goto out;
    }
    dc_layout_from_pb(rep->layout, &t->lay);
    t->size = rep->attr->size;
    char why[128];
    if (layout_validate(&t->lay, why, sizeof why) < 0) {
        dc_set_error("inode %llu has a bad layout: %s", (unsigned long long)ino, why);
        rc = -EINVAL;
        goto out;
    }
    uint64_t local = 0;
    int64_t mtime_ns = 0;
    if (dc_inode_local_size(fs, ino, &local, &mtime_ns) && local > t->size)
        t->size = local;
    t->cd = dc_codec(fs, t->lay.n, t->lay.k, t->lay.codec_version);
    if (t->cd == NULL)
        rc = -EINVAL;
out:
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

/* Layout position of server id, or -1. */
static int dc_pos_of(const layout *lay, uint32_t id)
{
    for (unsigned p = 0; p < lay->n; p++)
        if (lay->servers[p] == id)
            return (int)p;
    return -1;
}

static uint64_t dc_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Positions whose servers can be talked to: not failed locally and not
 * DOWN for the MDS (REBUILDING/RECONSTRUCTING servers take locks/writes). */
static uint32_t dc_reachable_mask(depfs_t *fs, const layout *lay)
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

static int dc_server_state(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (s == NULL)
        return DEPFS__SERVER_STATE__SERVER_DOWN;
    pthread_mutex_lock(&s->lock);
    int st = s->state;
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ------------------------------------------------ control calls (replies) */

/* Control requests (STAT, HEARTBEAT, DIRTY, SET_STATE, ...) to several
 * servers at once, each reply kept for the caller: the data fan-out in
 * data_io.c keeps only results. rep[i] NULL when server i did not answer;
 * rc[i] 0, -err of the reply, or a transport error. */
typedef struct dc_ctl {
    uint32_t server_id;
    uint16_t op;
    Depfs__IoRequest req;
    Depfs__IoReply *rep;
    int rc;
} dc_ctl;

static void dc_ctl_init(dc_ctl *c, uint32_t server_id, uint16_t op, uint64_t file_id)
{
    memset(c, 0, sizeof *c);
    c->server_id = server_id;
    c->op = op;
    depfs__io_request__init(&c->req);
    c->req.file_id = file_id;
}

static void dc_ctl_run(depfs_t *fs, dc_ctl *v, unsigned n)
{
    rpc_call **calls = calloc(n ? n : 1, sizeof *calls);
    if (calls == NULL) {
        for (unsigned i = 0; i < n; i++)
            v[i].rc = -ENOMEM;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        v[i].rep = NULL;
        rpc_conn *c = dc_server_conn_any(fs, v[i].server_id);
        v[i].rc = c ? rpc_call_start_msg(c, v[i].op, &v[i].req.base, NULL, 0, NULL, 0, &calls[i])
                    : DC_ERR_DOWN;
    }
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rc < 0 || calls[i] == NULL)
            continue;
        ProtobufCMessage *m = NULL;
        int rc = rpc_call_wait(calls[i], (int)fs->cfg.request_timeout_ms);
        if (rc == 0)
            rc = rpc_call_unpack(calls[i], &depfs__io_reply__descriptor, &m);
        v[i].rc = rc;
        if (rc == 0) {
            v[i].rep = (Depfs__IoReply *)m;
            v[i].rc = v[i].rep->err > 0 ? -v[i].rep->err : v[i].rep->err;
        } else if (rpc_err_is_transport(rc) || rpc_err_is_timeout(rc)) { /* silent = down */
            dc_server_mark_failed(fs, v[i].server_id);
            v[i].rc = DC_ERR_DOWN;
        }
    }
    for (unsigned i = 0; i < n; i++)
        rpc_call_free(calls[i]);
    free(calls);
}

static void dc_ctl_free(dc_ctl *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rep)
            depfs__io_reply__free_unpacked(v[i].rep, NULL);
        v[i].rep = NULL;
    }
}

/* Cluster servers other than `except` that are not failed locally or DOWN
 * for the MDS; returns how many ids were written (at most max). */
static unsigned dc_live_servers(depfs_t *fs, uint32_t except, uint32_t *ids, unsigned max)
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
static int dc_strip_extent(depfs_t *fs, const dc_target *t, uint32_t mask, uint64_t *max_bytes)
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

static int dc_untrusted_mask(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t *untrusted);

/* ================================================================ rebuild */

typedef struct dc_rebuild {
    depfs_t *fs;
    dc_target t;
    uint32_t server;          /* S */
    unsigned spos;            /* S's layout position */
    uint64_t batch;           /* stripes per batch */
    uint8_t *units;           /* n positions x batch x su, position-major */
    dc_req *reqs, *wreqs;
    uint32_t src_down;        /* positions not usable as sources this batch */
    uint32_t untrusted;       /* positions whose units of the file may be stale */
    bool *skip;               /* per stripe of the batch: S's unit stays a hole */
    uint64_t done_bytes;
    depfs_progress_fn fn;
    void *arg;
} dc_rebuild;

static uint8_t *dc_rb_unit(const dc_rebuild *rb, uint64_t first, uint64_t s, unsigned pos)
{
    return rb->units + ((uint64_t)pos * rb->batch + (s - first)) * rb->t.lay.su;
}

/* Units read for stripe s: the first k units (data first) whose position
 * is neither S nor down. */
static void dc_rb_sources(const dc_rebuild *rb, uint64_t s, bool *present)
{
    const layout *lay = &rb->t.lay;
    unsigned got = 0;
    for (unsigned u = 0; u < lay->n; u++) {
        unsigned pos = layout_unit_pos(lay, s, u);
        present[u] = got < lay->k && pos != rb->spos && !((rb->src_down >> pos) & 1u);
        got += present[u];
    }
    assert(got == lay->k);
}

static void dc_rb_build_phase1(dc_rebuild *rb, uint64_t first, uint64_t count, uint32_t lockset,
                               unsigned attempt)
{
    const layout *lay = &rb->t.lay;
    memset(rb->reqs, 0, sizeof(dc_req) * lay->n);
    for (uint64_t s = first; s < first + count; s++) {
        bool present[LAYOUT_MAX_N];
        dc_rb_sources(rb, s, present);
        for (unsigned u = 0; u < lay->n; u++) {
            if (!present[u])
                continue;
            unsigned pos = layout_unit_pos(lay, s, u);
            dc_req *r = &rb->reqs[pos];
            if (!r->active)
                dc_req_init(r, lay, pos, DEPFS__IO_OP__IO_READ);
            int rc = dc_req_add(r, layout_local_offset(lay, s), lay->su, dc_rb_unit(rb, first, s, pos));
            assert(rc == 0); /* batch <= DC_ROUND_STRIPES_MAX extents */
            (void)rc;
        }
    }
    uint64_t op = dc_next_op_id(rb->fs);
    for (unsigned p = 0; p < lay->n; p++) {
        if (!((lockset >> p) & 1u))
            continue;
        dc_req *r = &rb->reqs[p];
        if (!r->active)
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_LOCK);
        dc_req_set_lock(r, first, count, depfs_client_id(rb->fs), op);
        r->lock_attempt = attempt;
        r->any_state = true;
    }
}

/* Phase 1 of a batch with retries: 0 once every lock is held and every
 * source unit read. */
static int dc_rb_phase1(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    unsigned restarts = 0;
    for (unsigned attempt = 0;; attempt++) {
        uint32_t reach = dc_reachable_mask(rb->fs, lay) | (1u << rb->spos);
        rb->src_down = (dc_down_mask(rb->fs, lay) | rb->untrusted) & ~(1u << rb->spos);
        if (lay->n - 1 - dc_popcount32(rb->src_down) < lay->k) {
            dc_set_error("rebuild of inode %llu: fewer than k=%u other servers are up",
                         (unsigned long long)rb->t.ino, lay->k);
            return -EIO;
        }
        dc_rb_build_phase1(rb, first, count, reach, attempt);
        dc_io_run(rb->fs, rb->t.ino, rb->reqs, lay->n);
        bool nack = false, src_failed = false;
        int err = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            const dc_req *r = &rb->reqs[p];
            if (!r->active || r->result == 0)
                continue;
            bool is_source = r->op == DEPFS__IO_OP__IO_READ;
            if (r->result == -EAGAIN || r->result == -ENOLCK)
                nack = true;
            else if (p == rb->spos && err == 0)
                err = r->result == DC_ERR_DOWN ? -EHOSTDOWN : r->result;
            else if (r->result == DC_ERR_DOWN && is_source)
                src_failed = true;
            else if (r->result != DC_ERR_DOWN && err == 0)
                err = r->result; /* a down non-source merely holds no lock */
        }
        if (!nack && !src_failed && err == 0)
            return 0;
        dc_io_unlock_granted(rb->fs, rb->t.ino, rb->reqs, lay->n);
        if (err != 0) {
            dc_set_error("rebuild of inode %llu onto server %u: %s", (unsigned long long)rb->t.ino,
                         rb->server, strerror(-err));
            return err;
        }
        if (src_failed) {
            if (++restarts > DC_FAILOVER_RESTARTS_MAX)
                return -EIO;
            continue;
        }
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX) {
            dc_set_error("rebuild of inode %llu: stripes %llu.. stayed locked",
                         (unsigned long long)rb->t.ino, (unsigned long long)first);
            return -EBUSY;
        }
        dc_lock_backoff(attempt);
    }
}

static int dc_rb_decode(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    for (uint64_t s = first; s < first + count; s++) {
        bool present[LAYOUT_MAX_N];
        uint8_t *units[LAYOUT_MAX_N];
        dc_rb_sources(rb, s, present);
        for (unsigned u = 0; u < lay->n; u++)
            units[u] = dc_rb_unit(rb, first, s, layout_unit_pos(lay, s, u));
        int rc = codec_decode(rb->t.cd, lay->su, units, present);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static bool dc_all_zero(const uint8_t *p, uint64_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* rb->skip: S's units of the batch that decoded to zeros and lie past the
 * end of S's strip file (asked now, under the batch's locks: nothing can
 * write them meanwhile). When S's size is unknown, every unit is written. */
static void dc_rb_holes(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    bool any = false;
    for (uint64_t s = first; s < first + count; s++) {
        rb->skip[s - first] = dc_all_zero(dc_rb_unit(rb, first, s, rb->spos), lay->su);
        any |= rb->skip[s - first];
    }
    uint64_t s_size = 0;
    if (any && dc_strip_extent(rb->fs, &rb->t, 1u << rb->spos, &s_size) < 0)
        s_size = UINT64_MAX;
    for (uint64_t s = first; s < first + count && any; s++)
        if (layout_local_offset(lay, s) < s_size)
            rb->skip[s - first] = false; /* S may hold other bytes there */
}

/* WRITE+UNLOCK of S's units (but holes), IO_UNLOCK of every other lock of
 * phase 1. */
static int dc_rb_phase2(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    memset(rb->wreqs, 0, sizeof(dc_req) * lay->n);
    for (unsigned p = 0; p < lay->n; p++) {
        const dc_req *r = &rb->reqs[p];
        if (!r->active || !r->has_lock || r->result != 0)
            continue;
        dc_req *w = &rb->wreqs[p];
        dc_req_init(w, lay, p, p == rb->spos ? DEPFS__IO_OP__IO_WRITE : DEPFS__IO_OP__IO_UNLOCK);
        w->has_lock = true;
        w->lock = r->lock;
        w->any_state = true;
        if (p == rb->spos) {
            for (uint64_t s = first; s < first + count; s++) {
                if (rb->skip[s - first])
                    continue;
                int rc = dc_req_add(w, layout_local_offset(lay, s), lay->su,
                                    dc_rb_unit(rb, first, s, p));
                assert(rc == 0); /* count <= DC_ROUND_STRIPES_MAX extents */
                (void)rc;
            }
            w->unlock = w->sync = w->n_ext > 0;
            if (w->n_ext == 0)
                w->op = DEPFS__IO_OP__IO_UNLOCK; /* all holes: nothing to store */
        }
    }
    assert(rb->wreqs[rb->spos].active);
    dc_io_run(rb->fs, rb->t.ino, rb->wreqs, lay->n);
    int rc = rb->wreqs[rb->spos].result;
    if (rc < 0) {
        /* nothing stored, or stored without our lock: drop what we hold */
        rb->wreqs[rb->spos].op = DEPFS__IO_OP__IO_UNLOCK;
        rb->wreqs[rb->spos].result = 0;
        rb->wreqs[rb->spos].n_ext = 0;
        rb->wreqs[rb->spos].n_iov = 0;
        rb->wreqs[rb->spos].bytes = 0;
        rb->wreqs[rb->spos].unlock = false;
        for (unsigned p = 0; p < lay->n; p++)
            rb->wreqs[p].result = p == rb->spos ? 0 : 1;
        dc_io_unlock_granted(rb->fs, rb->t.ino, rb->wreqs, lay->n);
    }
    return rc;
}

static int dc_rb_batch(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    for (unsigned redo = 0;; redo++) {
        int rc = dc_rb_phase1(rb, first, count);
        if (rc < 0)
            return rc;
        rc = dc_rb_decode(rb, first, count);
        if (rc < 0) {
            dc_io_unlock_granted(rb->fs, rb->t.ino, rb->reqs, rb->t.lay.n);
            return rc;
        }
        dc_rb_holes(rb, first, count);
        rc = dc_rb_phase2(rb, first, count);
        if (rc == 0)
            break;
        if (rc != -EPERM || redo >= DC_FAILOVER_RESTARTS_MAX) {
            dc_set_error("rebuild of inode %llu: writing stripes %llu.. to server %u: %s",
                         (unsigned long long)rb->t.ino, (unsigned long long)first, rb->server,
                         strerror(-rc));
            return rc;
        }
        /* our lock was taken away (treated as an orphan): redo the batch */
    }
    rb->done_bytes += count * rb->t.lay.su;
    if (rb->fn && rb->fn(rb->arg, rb->done_bytes) != 0) {
        dc_set_error("rebuild of inode %llu cancelled", (unsigned long long)rb->t.ino);
        return -ECANCELED;
    }
    return 0;
}

static int dc_rb_range(dc_rebuild *rb, uint64_t from, uint64_t to)
{
    int rc = 0;
    for (uint64_t s = from; s < to && rc == 0; s += rb->batch) {
        uint64_t count = to - s < rb->batch ? to - s : rb->batch;
        rc = dc_rb_batch(rb, s, count);
    }
    return rc;
}

/* Lock every stripe from `stripes` on, on every reachable position (S
 * included); 0 when held (reqs say where), else an error. */
static int dc_rb_lock_tail(dc_rebuild *rb, uint64_t stripes)
{
    const layout *lay = &rb->t.lay;
    for (unsigned attempt = 0;; attempt++) {
        uint32_t reach = dc_reachable_mask(rb->fs, lay) | (1u << rb->spos);
        uint64_t op = dc_next_op_id(rb->fs);
        memset(rb->reqs, 0, sizeof(dc_req) * lay->n);
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((reach >> p) & 1u))
                continue;
            dc_req_init(&rb->reqs[p], lay, p, DEPFS__IO_OP__IO_LOCK);
            dc_req_set_lock(&rb->reqs[p], stripes, DC_RB_TAIL_STRIPES, depfs_client_id(rb->fs), op);
            rb->reqs[p].lock_attempt = attempt;
            rb->reqs[p].any_state = true;
        }
        dc_io_run(rb->fs, rb->t.ino, rb->reqs, lay->n);
        bool nack = false;
        int err = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            int r = rb->reqs[p].result;
            if (!rb->reqs[p].active || r == 0 || (r == DC_ERR_DOWN && p != rb->spos))
                continue;
            if (r == -EAGAIN || r == -ENOLCK)
                nack = true;
            else if (err == 0)
                err = r == DC_ERR_DOWN ? -EHOSTDOWN : r;
        }
        if (!nack && err == 0)
            return 0;
        dc_io_unlock_granted(rb->fs, rb->t.ino, rb->reqs, lay->n);
        if (err != 0)
            return err;
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX)
            return -EBUSY;
        dc_lock_backoff(attempt);
    }
}

/* Cut S's strip file to `stripes` units, unless the survivors grew past
 * that meanwhile (then *more says how far they reach). */
static int dc_rb_tail(dc_rebuild *rb, uint64_t stripes, uint64_t *more)
{
    const layout *lay = &rb->t.lay;
    *more = stripes;
    int rc = dc_rb_lock_tail(rb, stripes);
    if (rc < 0)
        return rc;
    uint64_t max_bytes = 0;
    uint32_t others = dc_reachable_mask(rb->fs, lay) & ~(1u << rb->spos);
    rc = dc_strip_extent(rb->fs, &rb->t, others, &max_bytes);
    if (rc == 0 && dc_div_up(max_bytes, lay->su) > stripes) {
        *more = dc_div_up(max_bytes, lay->su);
    } else if (rc == 0) {
        dc_req tr;
        dc_req_init(&tr, lay, rb->spos, DEPFS__IO_OP__IO_TRUNCATE);
        tr.has_local_size = true;
        tr.local_size = stripes * lay->su;
        tr.any_state = true;
        dc_io_run(rb->fs, rb->t.ino, &tr, 1);
        rc = tr.result == -ENOENT ? 0 : tr.result;
    }
    dc_io_unlock_granted(rb->fs, rb->t.ino, rb->reqs, lay->n);
    return rc;
}

static int dc_rb_alloc(dc_rebuild *rb, uint64_t stripes)
{
    const layout *lay = &rb->t.lay;
    rb->batch = dc_round_stripes(rb->fs, lay);
    if (rb->batch > stripes)
        rb->batch = stripes ? stripes : 1;
    rb->units = malloc((uint64_t)lay->n * rb->batch * lay->su);
    rb->reqs = calloc(lay->n, sizeof *rb->reqs);
    rb->wreqs = calloc(lay->n, sizeof *rb->wreqs);
    rb->skip = calloc(rb->batch, sizeof *rb->skip);
    return rb->units && rb->reqs && rb->wreqs && rb->skip ? 0 : -ENOMEM;
}

int depfs_rebuild_file(depfs_t *fs, uint64_t ino, uint32_t server_id, depfs_progress_fn fn,
                       void *arg)
{
    if (fs == NULL)
        return -EINVAL;
    dc_rebuild rb = {.fs = fs, .server = server_id, .fn = fn, .arg = arg};
    int rc = dc_target_load(fs, ino, &rb.t);
    if (rc < 0)
        return rc;
    int spos = dc_pos_of(&rb.t.lay, server_id);
    if (spos < 0)
        return 0;
    rb.spos = (unsigned)spos;
    const layout *lay = &rb.t.lay;
    /* S may have missed epochs while it was away: tell it ours first */
    rc = dc_push_state(fs, server_id, atomic_load(&fs->cluster_epoch), -1);
    if (rc < 0) {
        dc_set_error("rebuild of inode %llu: server %u: %s", (unsigned long long)ino, server_id,
                     strerror(-rc));
        return rc == DC_ERR_DOWN ? -EHOSTDOWN : rc;
    }
    /* another server's units of this file may be stale too (it missed
     * writes): never decode from them */
    rc = dc_untrusted_mask(fs, lay, ino, &rb.untrusted);
    if (rc < 0)
        return rc;
    uint64_t max_bytes = 0;
    rc = dc_strip_extent(fs, &rb.t, dc_reachable_mask(fs, lay) & ~(1u << rb.spos), &max_bytes);
    if (rc < 0)
        return rc;
    uint64_t stripes = dc_div_up(rb.t.size, layout_stripe_bytes(lay));
    if (dc_div_up(max_bytes, lay->su) > stripes)
        stripes = dc_div_up(max_bytes, lay->su);
    rc = dc_rb_alloc(&rb, stripes);
    uint64_t done = 0;
    for (unsigned round = 0; rc == 0; round++) {
        rc = dc_rb_range(&rb, done, stripes);
        if (rc < 0)
            break;
        done = stripes;
        if (round >= DC_RB_TAIL_ROUNDS_MAX) {
            dc_set_error("rebuild of inode %llu: the file kept growing", (unsigned long long)ino);
            rc = -EBUSY;
            break;
        }
        rc = dc_rb_tail(&rb, stripes, &stripes);
        if (rc < 0 || stripes == done)
            break;
        if (stripes > done && rb.batch < dc_round_stripes(fs, lay)) {
            free(rb.units);
            free(rb.reqs);
            free(rb.wreqs);
            free(rb.skip);
            rc = dc_rb_alloc(&rb, stripes - done);
        }
    }
    free(rb.units);
    free(rb.reqs);
    free(rb.wreqs);
    free(rb.skip);
    if (rc == 0)
        log_info("rebuilt inode %llu on server %u: %llu stripes", (unsigned long long)ino,
                 server_id, (unsigned long long)stripes);
    return rc;
}

/* ========================================================== orphan repair */

static int dc_dirty_record(depfs_t *fs, uint32_t server, uint64_t file);

/* An orphan lock marks stripes an unfinished write left in doubt. The write
 * protocol locks every server of a stripe it writes before it writes any,
 * and a server drops the lock only once it stored its unit (WRITE+UNLOCK),
 * so on a server where a stale lock is still held the write did not land,
 * and on every other server the stripe holds the writer's new unit or an
 * untouched one: the units outside the held positions are one consistent
 * codeword (the new one). The repair therefore treats held positions and
 * untrusted ones as erasures, decodes them from the rest and writes the
 * held, trusted ones. With more erasures than n-k it falls back to
 * recomputing parity from the data units (either content of a unit the
 * unacknowledged write touched is allowed), which is only sound when every
 * data unit is trusted; otherwise the stripes are left locked and the
 * repair fails loudly (a client crash during a server outage, beyond what
 * the units alone can tell). Stale locks of any owner on the range are
 * taken over at once (IO_LOCK take_over_stale), so overlapping orphans of
 * different owners cannot block each other. */

typedef struct dc_orphan {
    depfs_t *fs;
    dc_target t;
    uint64_t first, count;
    uint64_t owner_client, owner_op; /* the orphan reported (for logs) */
    Depfs__LockSpec mine;     /* our lock on [first, first+count) */
    uint32_t held;            /* positions where we hold it */
    uint32_t reach;           /* positions that answered */
    uint32_t untrusted;       /* positions whose units may be stale */
    /* per position, the stripes a stale lock held there (taken over) */
    uint64_t taken_first[LAYOUT_MAX_N][DC_ORPHAN_TAKEN_MAX];
    uint64_t taken_end[LAYOUT_MAX_N][DC_ORPHAN_TAKEN_MAX];
    unsigned n_taken[LAYOUT_MAX_N];
    bool taken_all[LAYOUT_MAX_N]; /* more than DC_ORPHAN_TAKEN_MAX: every stripe */
} dc_orphan;

/* Positions of the layout whose units of ino cannot be trusted now:
 * unreachable, an empty replacement (RECONSTRUCTING), or named in a dirty
 * record for ino on any server of the layout (DIRTY_PROBE). A server that
 * is back but still REBUILDING holds current units of every file no write
 * went around it for: a write around a server stores the dirty records
 * before any data, so without a record nothing of ino was missed there. */
static int dc_untrusted_mask(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t *untrusted)
{
    (void)dc_cluster_refresh(fs);
    uint32_t bad = ~dc_reachable_mask(fs, lay) & ((lay->n < 32 ? (1u << lay->n) : 0u) - 1u);
    for (unsigned p = 0; p < lay->n; p++)
        if (dc_server_state(fs, lay->servers[p]) == DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING)
            bad |= 1u << p;
    dc_ctl v[LAYOUT_MAX_N];
    uint32_t ids[LAYOUT_MAX_N];
    unsigned n = 0;
    for (unsigned p = 0; p < lay->n; p++)
        ids[p] = lay->servers[p];
    for (unsigned p = 0; p < lay->n; p++) {
        if ((bad >> p) & 1u && dc_server_state(fs, lay->servers[p]) ==
                                   DEPFS__SERVER_STATE__SERVER_DOWN)
            continue;
        dc_ctl_init(&v[n], lay->servers[p], DEPFS__IO_OP__IO_DIRTY, ino);
        v[n].req.has_dirty_action = true;
        v[n].req.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
        v[n].req.n_down_servers = lay->n;
        v[n].req.down_servers = ids;
        n++;
    }
    dc_ctl_run(fs, v, n);
    int rc = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rc == DC_ERR_DOWN) {
            int p = dc_pos_of(lay, v[i].server_id);
            bad |= 1u << p;
            continue;
        }
        if (v[i].rc < 0) {
            dc_set_error("dirty records of inode %llu on server %u: %s", (unsigned long long)ino,
                         v[i].server_id, strerror(-v[i].rc));
            rc = v[i].rc;
            continue;
        }
        for (size_t j = 0; j < v[i].rep->n_dirty_files; j++) {
            int p = dc_pos_of(lay, (uint32_t)v[i].rep->dirty_files[j]);
            if (p >= 0)
                bad |= 1u << p;
        }
    }
    dc_ctl_free(v, n);
    *untrusted = bad;
    return rc;
}

/* Lock [first, first+count) on every reachable position, taking over stale
 * locks of any owner; remembers what each position's orphans held. */
static int dc_orphan_lock(dc_orphan *o)
{
    const layout *lay = &o->t.lay;
    /* one op id for every attempt: what an attempt took over stays ours,
     * and what it learnt of the orphans is kept for the next */
    depfs__lock_spec__init(&o->mine);
    o->mine.first_stripe = o->first;
    o->mine.stripe_count = o->count;
    o->mine.owner_client = depfs_client_id(o->fs);
    o->mine.owner_op = dc_next_op_id(o->fs);
    for (unsigned attempt = 0;; attempt++) {
        uint32_t reach = dc_reachable_mask(o->fs, lay);
        dc_ctl v[LAYOUT_MAX_N];
        unsigned n = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((reach >> p) & 1u))
                continue;
            dc_ctl_init(&v[n], lay->servers[p], DEPFS__IO_OP__IO_LOCK, o->t.ino);
            v[n].req.lock = &o->mine;
            v[n].req.has_take_over_stale = v[n].req.take_over_stale = true;
            v[n].req.has_lock_attempt = attempt > 0;
            v[n].req.lock_attempt = attempt;
            n++;
        }
        dc_ctl_run(o->fs, v, n);
        bool nack = false;
        int err = 0;
        o->reach = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned p = (unsigned)dc_pos_of(lay, v[i].server_id);
            if (v[i].rc == DC_ERR_DOWN)
                continue;
            o->reach |= 1u << p;
            if (v[i].rc == -EAGAIN || v[i].rc == -ENOLCK) {
                nack = true;
            } else if (v[i].rc < 0) {
                if (err == 0)
                    err = v[i].rc;
                dc_set_error("orphan repair of inode %llu: locking on server %u: %s",
                             (unsigned long long)o->t.ino, v[i].server_id, strerror(-v[i].rc));
            } else {
                o->held |= 1u << p;
                for (size_t e = 0; e < v[i].rep->n_stale_locks; e++) {
                    const Depfs__LockSpec *l = v[i].rep->stale_locks[e]->lock;
                    if (l == NULL)
                        continue;
                    if (o->n_taken[p] == DC_ORPHAN_TAKEN_MAX) {
                        o->taken_all[p] = true;
                        continue;
                    }
                    o->taken_first[p][o->n_taken[p]] = l->first_stripe;
                    o->taken_end[p][o->n_taken[p]++] = l->first_stripe + l->stripe_count;
                }
            }
        }
        dc_ctl_free(v, n);
        if (!nack && err == 0)
            return 0;
        if (err != 0 || attempt + 1 >= DC_ORPHAN_ATTEMPTS_MAX) {
            if (err == 0)
                dc_set_error("orphan repair of inode %llu stripes %llu..: a live writer kept "
                             "them locked", (unsigned long long)o->t.ino,
                             (unsigned long long)o->first);
            return err != 0 ? err : -EBUSY;
        }
        /* a young lock: a live writer; ours (and what we took over) stay
         * held meanwhile, the next attempt re-locks them as the same owner */
        dc_lock_backoff(attempt);
    }
}

/* Positions where an orphan held stripe s (now ours). */
static uint32_t dc_orphan_held_at(const dc_orphan *o, uint64_t s)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < o->t.lay.n; p++) {
        bool in = o->taken_all[p];
        for (unsigned e = 0; e < o->n_taken[p] && !in; e++)
            in = o->taken_first[p][e] <= s && s < o->taken_end[p][e];
        if (in)
            m |= 1u << p;
    }
    return m;
}

typedef struct dc_orphan_batch {
    uint64_t first, count, batch;
    uint8_t *units;           /* n positions x batch x su */
    uint32_t erase[DC_ROUND_STRIPES_MAX]; /* per stripe: positions not read */
    uint32_t rewrite[DC_ROUND_STRIPES_MAX]; /* per stripe: positions to write */
    bool by_parity[DC_ROUND_STRIPES_MAX];   /* fallback: parity from data */
} dc_orphan_batch;

static uint8_t *dc_ob_unit(const dc_orphan *o, const dc_orphan_batch *b, uint64_t s, unsigned pos)
{
    return b->units + ((uint64_t)pos * b->batch + (s - b->first)) * o->t.lay.su;
}

/* Decide, per stripe of the batch, what is read and what is rewritten. */
static int dc_orphan_plan(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        uint32_t held = dc_orphan_held_at(o, s) & ~o->untrusted;
        uint32_t erase = held | o->untrusted | (all & ~o->reach);
        b->by_parity[i] = false;
        b->erase[i] = erase;
        b->rewrite[i] = held;
        if (held == 0)
            continue; /* no write in doubt on a trusted unit: consistent */
        if (dc_popcount32(erase) <= lay->n - lay->k)
            continue;
        uint32_t data = 0, parity = 0;
        for (unsigned u = 0; u < lay->n; u++) {
            if (u < lay->k)
                data |= 1u << layout_unit_pos(lay, s, u);
            else
                parity |= 1u << layout_unit_pos(lay, s, u);
        }
        if ((data & (o->untrusted | (all & ~o->reach))) != 0) {
            dc_set_error("orphan repair of inode %llu: stripe %llu has %u units in doubt or "
                         "stale, more than n-k=%u, and a stale data unit: left locked",
                         (unsigned long long)o->t.ino, (unsigned long long)s,
                         dc_popcount32(erase), lay->n - lay->k);
            return -EIO;
        }
        b->by_parity[i] = true;
        b->erase[i] = parity;
        b->rewrite[i] = parity & o->reach & ~o->untrusted;
    }
    return 0;
}

/* Read the units each stripe decodes from (k of the ones not erased). */
static int dc_orphan_read(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    dc_req rd[LAYOUT_MAX_N];
    memset(rd, 0, sizeof rd);
    bool any = false;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        if (b->rewrite[i] == 0)
            continue;
        unsigned got = 0;
        for (unsigned u = 0; u < lay->n && got < lay->k; u++) {
            unsigned pos = layout_unit_pos(lay, s, u);
            if ((b->erase[i] >> pos) & 1u)
                continue;
            if (!rd[pos].active) {
                dc_req_init(&rd[pos], lay, pos, DEPFS__IO_OP__IO_READ);
                rd[pos].ignore_locks = true; /* ours: we hold the stripes */
                rd[pos].any_state = true;
            }
            int rc = dc_req_add(&rd[pos], layout_local_offset(lay, s), lay->su,
                                dc_ob_unit(o, b, s, pos));
            assert(rc == 0); /* batch <= DC_ROUND_STRIPES_MAX extents */
            (void)rc;
            got++;
            any = true;
        }
        assert(got == lay->k);
    }
    if (!any)
        return 0;
    dc_io_run(o->fs, o->t.ino, rd, lay->n);
    for (unsigned p = 0; p < lay->n; p++)
        if (rd[p].active && rd[p].result != 0) {
            dc_set_error("orphan repair of inode %llu: reading server %u: %s",
                         (unsigned long long)o->t.ino, lay->servers[p], strerror(-rd[p].result));
            return rd[p].result == DC_ERR_DOWN ? -EIO : rd[p].result;
        }
    return 0;
}

/* Rebuild the rewritten units of every stripe from the ones read. */
static int dc_orphan_compute(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        if (b->rewrite[i] == 0)
            continue;
        uint8_t *units[LAYOUT_MAX_N];
        bool present[LAYOUT_MAX_N];
        unsigned got = 0;
        for (unsigned u = 0; u < lay->n; u++) {
            unsigned pos = layout_unit_pos(lay, s, u);
            units[u] = dc_ob_unit(o, b, s, pos);
            present[u] = got < lay->k && !((b->erase[i] >> pos) & 1u);
            got += present[u];
        }
        if (b->by_parity[i]) {
            codec_encode(o->t.cd, lay->su, units, units + lay->k);
            continue;
        }
        int rc = codec_decode(o->t.cd, lay->su, units, present);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Write the rewritten units (the stripes stay locked by us). Servers that
 * cannot be reached get dirty records on the others. */
static int dc_orphan_write(dc_orphan *o, dc_orphan_batch *b)
{
    const layout *lay = &o->t.lay;
    uint32_t all = (lay->n < 32 ? (1u << lay->n) : 0u) - 1u;
    dc_req wr[LAYOUT_MAX_N];
    memset(wr, 0, sizeof wr);
    bool any = false;
    for (uint64_t s = b->first; s < b->first + b->count; s++) {
        uint64_t i = s - b->first;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!((b->rewrite[i] >> p) & 1u))
                continue;
            assert((o->held >> p) & 1u);
            if (!wr[p].active) {
                dc_req_init(&wr[p], lay, p, DEPFS__IO_OP__IO_WRITE);
                wr[p].ignore_locks = true; /* held by us, under another op id */
                wr[p].any_state = true;
                wr[p].sync = true;
                for (unsigned q = 0; q < lay->n; q++)
                    if ((all & ~o->reach) >> q & 1u)
                        wr[p].down[wr[p].n_down++] = lay->servers[q];
            }
            int rc = dc_req_add(&wr[p], layout_local_offset(lay, s), lay->su,
                                dc_ob_unit(o, b, s, p));
            assert(rc == 0);
            (void)rc;
            any = true;
        }
    }
    if (!any)
        return 0;
    dc_io_run(o->fs, o->t.ino, wr, lay->n);
    for (unsigned p = 0; p < lay->n; p++)
        if (wr[p].active && wr[p].result != 0) {
            dc_set_error("orphan repair of inode %llu: writing server %u: %s",
                         (unsigned long long)o->t.ino, lay->servers[p], strerror(-wr[p].result));
            return wr[p].result == DC_ERR_DOWN ? -EIO : wr[p].result;
        }
    return 0;
}

/* Servers out of reach may hold the orphan's lock and a half-written unit:
 * record them dirty for the file on the others, so their rejoin rebuilds it
 * (and their lock is repaired again once they answer). */
static int dc_orphan_mark_unreachable(dc_orphan *o)
{
    const layout *lay = &o->t.lay;
    int rc = 0;
    for (unsigned p = 0; p < lay->n && rc == 0; p++)
        if (!((o->reach >> p) & 1u))
            rc = dc_dirty_record(o->fs, lay->servers[p], o->t.ino);
    return rc;
}

/* Release our lock: everywhere after a repair, or (keep_in_doubt) only
 * where no orphan held anything, so that the positions still in doubt stay
 * locked and are reported (by age) for a later repair. */
static void dc_orphan_unlock(dc_orphan *o, bool keep_in_doubt)
{
    const layout *lay = &o->t.lay;
    dc_req un[LAYOUT_MAX_N];
    memset(un, 0, sizeof un);
    for (unsigned p = 0; p < lay->n; p++) {
        if (!((o->held >> p) & 1u))
            continue;
        if (keep_in_doubt && (o->n_taken[p] > 0 || o->taken_all[p]))
            continue;
        dc_req_init(&un[p], lay, p, DEPFS__IO_OP__IO_UNLOCK);
        un[p].has_lock = true;
        un[p].lock = o->mine;
        un[p].any_state = true;
    }
    dc_io_run(o->fs, o->t.ino, un, lay->n);
}

static int dc_orphan_repair(dc_orphan *o)
{
    const layout *lay = &o->t.lay;
    int rc = dc_untrusted_mask(o->fs, lay, o->t.ino, &o->untrusted);
    if (rc < 0)
        return rc;
    rc = dc_orphan_lock(o);
    if (rc < 0) {
        dc_orphan_unlock(o, true);
        return rc;
    }
    dc_orphan_batch b = {.batch = dc_round_stripes(o->fs, lay)};
    if (b.batch > DC_ROUND_STRIPES_MAX)
        b.batch = DC_ROUND_STRIPES_MAX;
    b.units = malloc((uint64_t)lay->n * b.batch * lay->su);
    if (b.units == NULL)
        rc = -ENOMEM;
    bool in_doubt = false;
    for (uint64_t s = o->first; s < o->first + o->count && rc == 0; s += b.batch) {
        b.first = s;
        b.count = o->first + o->count - s < b.batch ? o->first + o->count - s : b.batch;
        rc = dc_orphan_plan(o, &b);
        for (uint64_t i = 0; i < b.count && rc == 0; i++)
            in_doubt |= b.rewrite[i] != 0;
        if (rc == 0)
            rc = dc_orphan_read(o, &b);
        if (rc == 0)
            rc = dc_orphan_compute(o, &b);
        if (rc == 0)
            rc = dc_orphan_write(o, &b);
    }
    free(b.units);
    if (rc == 0 && o->reach != ((lay->n < 32 ? (1u << lay->n) : 0u) - 1u))
        rc = dc_orphan_mark_unreachable(o);
    /* on failure the positions in doubt stay locked by us, so no write
     * builds on them; depfs-recovery repairs its own stale locks too, and
     * that later repair takes them over (with more servers back) */
    dc_orphan_unlock(o, rc < 0);
    if (rc == 0)
        log_info("repaired orphan lock of client %llu op %llu on inode %llu stripes %llu+%llu "
                 "(%s; untrusted positions %#x)", (unsigned long long)o->owner_client,
                 (unsigned long long)o->owner_op, (unsigned long long)o->t.ino,
                 (unsigned long long)o->first, (unsigned long long)o->count,
                 in_doubt ? "units in doubt rewritten" : "nothing in doubt", o->untrusted);
    return rc;
}

/* Release a stale lock of a removed file wherever it may be held. */
static void dc_orphan_release_everywhere(depfs_t *fs, uint64_t ino, const Depfs__LockSpec *l)
{
    uint32_t ids[CONFIG_MAX_IOSERVERS];
    unsigned n = dc_live_servers(fs, UINT32_MAX, ids, CONFIG_MAX_IOSERVERS);
    dc_ctl *v = calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return;
    for (unsigned i = 0; i < n; i++) {
        dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_UNLOCK, ino);
        v[i].req.lock = (Depfs__LockSpec *)l;
    }
    dc_ctl_run(fs, v, n);
    dc_ctl_free(v, n);
    free(v);
}

int depfs_repair_orphan_lock(depfs_t *fs, uint64_t ino, uint64_t first_stripe,
                             uint64_t stripe_count, uint64_t owner_client, uint64_t owner_op)
{
    if (fs == NULL || stripe_count == 0 || first_stripe + stripe_count < first_stripe)
        return -EINVAL;
    dc_orphan *o = calloc(1, sizeof *o);
    if (o == NULL)
        return -ENOMEM;
    o->fs = fs;
    o->first = first_stripe;
    o->count = stripe_count;
    o->owner_client = owner_client;
    o->owner_op = owner_op;
    int rc = dc_target_load(fs, ino, &o->t);
    if (rc == -ENOENT) {
        Depfs__LockSpec l;
        depfs__lock_spec__init(&l);
        l.first_stripe = first_stripe;
        l.stripe_count = stripe_count;
        l.owner_client = owner_client;
        l.owner_op = owner_op;
        dc_orphan_release_everywhere(fs, ino, &l);
    } else if (rc == 0) {
        rc = dc_orphan_repair(o);
    }
    free(o);
    return rc;
}

/* ================================================================= rejoin */

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

/* Claim or clear (DIRTY_CLAIM / DIRTY_CLEAR, recovery/README.md) the dirty
 * record (S, file) on every live server, or record it (an empty WRITE
 * naming S down: dc_dirty_record). A clear refused because a write recorded
 * the file again since the claim (-EAGAIN) is no error: the next pass
 * rebuilds it once more. */
static int dc_dirty_act(depfs_t *fs, uint32_t server, uint64_t file, int action)
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

#define DC_DIRTY_RECORD (-1)

static int dc_dirty_record(depfs_t *fs, uint32_t server, uint64_t file)
{
    return dc_dirty_act(fs, server, file, DC_DIRTY_RECORD);
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

/* ======================================================== namespace walk */

/* A set of inode numbers (open addressing; 0 is the empty slot). */
typedef struct dc_inoset {
    uint64_t *slot;
    size_t cap, n;
} dc_inoset;

static size_t dc_ino_hash(uint64_t ino, size_t cap)
{
    return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

/* 1 when newly added, 0 when present, -ENOMEM. */
static int dc_inoset_add(dc_inoset *s, uint64_t ino)
{
    assert(ino != 0);
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : DC_INOSET_MIN_SLOTS;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (slot == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (s->slot[i] == 0)
                continue;
            size_t h = dc_ino_hash(s->slot[i], cap);
            while (slot[h] != 0)
                h = (h + 1) & (cap - 1);
            slot[h] = s->slot[i];
        }
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    size_t h = dc_ino_hash(ino, s->cap);
    while (s->slot[h] != 0) {
        if (s->slot[h] == ino)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slot[h] = ino;
    s->n++;
    return 1;
}

typedef struct dc_walk_ent {
    uint64_t ino;
    mode_t type;
    unsigned depth;
} dc_walk_ent;

typedef struct dc_walk {
    dc_walk_ent *v;           /* stack of directories still to read */
    size_t n, cap;
    dc_walk_ent *batch;       /* entries of the directory being read */
    size_t bn, bcap;
    unsigned depth;
    int err;
} dc_walk;

static int dc_walk_push(dc_walk_ent **v, size_t *n, size_t *cap, dc_walk_ent e)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        dc_walk_ent *nv = realloc(*v, c * sizeof *nv);
        if (nv == NULL)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = e;
    return 0;
}

/* readdir callback: collect only (no library calls from inside it). */
static int dc_walk_collect(void *arg, const char *name, uint64_t ino, mode_t type, uint64_t cookie)
{
    (void)cookie;
    dc_walk *w = arg;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    dc_walk_ent e = {.ino = ino, .type = type, .depth = w->depth + 1};
    w->err = dc_walk_push(&w->batch, &w->bn, &w->bcap, e);
    return w->err != 0;
}

/* One entry: a directory goes on the stack, a regular file on S to fn. */
static int dc_walk_entry(depfs_t *fs, dc_walk *w, dc_inoset *seen, const dc_walk_ent *e,
                         uint32_t server, depfs_file_fn fn, void *arg)
{
    if (e->type == S_IFDIR) {
        if (e->depth > DC_WALK_DEPTH_MAX) {
            log_warn("files on server %u: directory %llu deeper than %u levels skipped", server,
                     (unsigned long long)e->ino, DC_WALK_DEPTH_MAX);
            return 0;
        }
        return dc_walk_push(&w->v, &w->n, &w->cap, *e);
    }
    if (e->type != 0 && e->type != S_IFREG)
        return 0;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_getattr_rep(fs, e->ino, &rep);
    if (rc == -ENOENT) /* removed since the listing */
        rc = 0;
    else if (rc == 0 && S_ISDIR(rep->attr->mode))
        rc = dc_walk_push(&w->v, &w->n, &w->cap, (dc_walk_ent){e->ino, S_IFDIR, e->depth});
    else if (rc == 0 && S_ISREG(rep->attr->mode) && rep->layout != NULL) {
        layout lay;
        dc_layout_from_pb(rep->layout, &lay);
        bool first_link = rep->attr->nlink <= 1 || dc_inoset_add(seen, e->ino) == 1;
        if (first_link && dc_pos_of(&lay, server) >= 0 && fn(arg, e->ino, rep->attr->size) != 0)
            rc = 1; /* the caller stops the walk */
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_files_on_server(depfs_t *fs, uint32_t server_id, depfs_file_fn fn, void *arg)
{
    if (fs == NULL || fn == NULL)
        return -EINVAL;
    dc_walk w = {0};
    dc_inoset seen = {0};
    int rc = dc_walk_push(&w.v, &w.n, &w.cap, (dc_walk_ent){DEPFS_ROOT_INO, S_IFDIR, 0});
    while (rc == 0 && w.n > 0) {
        dc_walk_ent dir = w.v[--w.n];
        w.bn = 0;
        w.depth = dir.depth;
        rc = depfs_readdir(fs, dir.ino, 0, dc_walk_collect, &w);
        if (rc == -ENOENT) /* removed while we walked */
            rc = 0;
        if (rc == 0)
            rc = w.err;
        for (size_t i = 0; i < w.bn && rc == 0; i++)
            rc = dc_walk_entry(fs, &w, &seen, &w.batch[i], server_id, fn, arg);
    }
    free(w.v);
    free(w.batch);
    free(seen.slot);
    return rc > 0 ? 0 : rc;
}
