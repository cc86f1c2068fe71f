/* recover_rebuild.c - depfs_rebuild_file: rebuilding one server's units of
 * a file from the others under the stripe locks (recovery/README.md).
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
 * Batches run in DC_RB_LANES lanes at once (each its own buffers and
 * locks on its own stripes), so one lane's synced write to S overlaps
 * the others' reads and decodes; progress (and the caller's rate limit)
 * is reported one batch at a time, under a mutex. After each batch the
 * lane keeps to the client's rebuild pace (core_pace.h: rebuild_rate,
 * and rebuild_busy_rate while the servers it used say clients are busy;
 * its requests are marked background so that they do not count as such).
 *
 * Requests to S are sent even though the status vector calls it down
 * (any_state): a REBUILDING server accepts locks and writes.
 *
 * The rebuild holds the file open at the MDS (dc_open_held, as a handle
 * does; the open's reply gives the layout and size) until its last write to S is
 * answered: a file unlinked meanwhile stays out of the purge queue's lists
 * until then, so its purge removes S's strip file after the rebuild wrote
 * it, never before (which would leave it on S with no queue entry). An
 * unlinked file no handle holds is ENOENT there: its strip files may be
 * going already, and it has nothing left to rebuild. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "api.h"
#include "recover.h"
#include "log.h"
#include "wire_check.h"

/* Re-checks of the tail when survivors grew while we rebuilt. */
#define DC_RB_TAIL_ROUNDS_MAX 8u
/* "Every stripe from here on" for the tail lock (no overflow past it). */
#define DC_RB_TAIL_STRIPES (UINT64_MAX / 4)
/* Batches in flight at once; together they use one round's buffers
 * (dc_round_stripes), split between them. */
#define DC_RB_LANES 4u
/* A lane's error text, handed to the caller's thread (errors are per thread). */
#define DC_RB_ERR_BYTES 512u

/* What the lanes of one rebuild share. */
typedef struct dc_rb_shared {
    pthread_mutex_t mu;       /* guards done_bytes and the calls of fn */
    uint64_t done_bytes;
    depfs_progress_fn fn;
    void *arg;
    uint64_t from, to;        /* the range the lanes work through */
    atomic_uint_fast64_t next; /* the next batch of it to take */
    atomic_bool stop;         /* a lane failed: the others stop */
    bool background;          /* mark requests background (cluster key held) */
    atomic_uint_fast64_t paced_ms; /* slept to keep the pace */
} dc_rb_shared;

/* One lane: a batch at a time, with its own buffers and locks. */
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
    dc_rb_shared *sh;
    int rc;                   /* the lane's result */
    char err[DC_RB_ERR_BYTES];
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
            if (!r->active) {
                dc_req_init(r, lay, pos, DEPFS__IO_OP__IO_READ);
                r->background = rb->sh->background;
            }
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
        if (!r->active) {
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_LOCK);
            r->background = rb->sh->background;
        }
        dc_req_set_lock(r, first, count, depfs_client_id(rb->fs), op,
                        p == rb->spos ? DC_LOCK_WRITE : DC_LOCK_READ);
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
        if (!nack && !src_failed && err == 0) {
            /* the stripes are ours now: a source a writer went around
             * before we held them has its dirty record by now */
            uint32_t fresh = 0;
            int rc = dc_untrusted_mask(rb->fs, lay, rb->t.ino, false, &fresh);
            uint32_t sources = 0;
            for (unsigned p = 0; p < lay->n; p++)
                if (rb->reqs[p].active && rb->reqs[p].op == DEPFS__IO_OP__IO_READ)
                    sources |= 1u << p;
            fresh &= ~(1u << rb->spos);
            if (rc == 0 && (fresh & sources & ~rb->untrusted) == 0)
                return 0;
            rb->untrusted |= fresh;
            dc_io_unlock_granted(rb->fs, rb->t.ino, rb->reqs, lay->n);
            if (rc < 0)
                return rc;
            if (++restarts > DC_FAILOVER_RESTARTS_MAX)
                return -EIO;
            continue;
        }
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

/* Clears skip[] of the units of stripes [first, first+count) where S's
 * strip file holds data (IO_EXTENTS of that range): and of every unit S
 * does not describe plainly (an error, a reply cut short or malformed). */
static void dc_rb_keep_s_data(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    uint64_t from = layout_local_offset(lay, first), to = layout_local_offset(lay, first + count);
    Depfs__Extent range = DEPFS__EXTENT__INIT;
    range.offset = from;
    range.length = to - from;
    Depfs__Extent *range_ptr = &range;
    dc_ctl c;
    dc_ctl_init(&c, rb->server, DEPFS__IO_OP__IO_EXTENTS, rb->t.ino);
    c.req.n_extents = 1;
    c.req.extents = &range_ptr;
    c.req.has_stripe_unit = c.req.stripe_unit = lay->su;
    c.req.has_ignore_locks = c.req.ignore_locks = true; /* S is REBUILDING */
    dc_ctl_run(rb->fs, &c, 1);
    const Depfs__IoReply *r = c.rc == 0 ? c.rep : NULL;
    dc_xpos x = {.known = false}; /* unknown: every unit counts as data */
    dc_xext *ext = NULL;
    if (r != NULL && r->n_data_extents <= WIRE_DATA_EXTENTS_MAX &&
        (ext = calloc(r->n_data_extents ? r->n_data_extents : 1, sizeof(*ext))) != NULL)
        dc_extents_reply(r, lay->su, from, to, ext, &x);
    for (uint64_t s = first; s < first + count; s++)
        if (dc_xpos_stripe_is_data(&x, lay->su, s)) /* stripe s: local unit s */
            rb->skip[s - first] = false;
    free(ext);
    dc_ctl_free(&c, 1);
}

/* rb->skip: S's units of the batch that decoded to zeros where S's strip
 * file holds no data (asked now, under the batch's locks: nothing writes
 * them meanwhile, and another lane's writes further on leave them holes):
 * they read as zeros already, and sparse files stay sparse on S. */
static void dc_rb_holes(dc_rebuild *rb, uint64_t first, uint64_t count)
{
    const layout *lay = &rb->t.lay;
    bool any = false;
    for (uint64_t s = first; s < first + count; s++) {
        rb->skip[s - first] = dc_all_zero(dc_rb_unit(rb, first, s, rb->spos), lay->su);
        any |= rb->skip[s - first];
    }
    if (any)
        dc_rb_keep_s_data(rb, first, count);
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
        w->background = rb->sh->background;
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

/* After a batch that rebuilt `bytes`: sleep what the client's rebuild pace
 * asks, told how recently the servers of the batch served clients. */
static void dc_rb_keep_pace(dc_rebuild *rb, uint64_t bytes)
{
    const layout *lay = &rb->t.lay;
    uint32_t min_idle = UINT32_MAX;
    for (unsigned p = 0; p < lay->n; p++) {
        if (rb->reqs[p].active && rb->reqs[p].client_io_idle_ms < min_idle)
            min_idle = rb->reqs[p].client_io_idle_ms;
        if (rb->wreqs[p].active && rb->wreqs[p].client_io_idle_ms < min_idle)
            min_idle = rb->wreqs[p].client_io_idle_ms;
    }
    pthread_mutex_lock(&rb->fs->pace_lock);
    uint64_t now = dc_now_ms();
    uint64_t ms = dc_pace_take(&rb->fs->pace, now, bytes, min_idle);
    bool busy = dc_pace_busy(&rb->fs->pace, now);
    pthread_mutex_unlock(&rb->fs->pace_lock);
    log_debug("rebuild pace: %llu bytes, least client_io_idle_ms %u, %s, sleep %llu ms",
              (unsigned long long)bytes, min_idle, busy ? "busy" : "idle",
              (unsigned long long)ms);
    if (ms > 0) {
        clock_sleep_ms(ms);
        atomic_fetch_add(&rb->sh->paced_ms, ms);
    }
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
        if ((rc != -EPERM && rc != DC_ERR_STALE_PLAN) || redo >= DC_FAILOVER_RESTARTS_MAX) {
            dc_set_error("rebuild of inode %llu: writing stripes %llu.. to server %u: %s",
                         (unsigned long long)rb->t.ino, (unsigned long long)first, rb->server,
                         strerror(-rc));
            return rc;
        }
        /* our lock was taken away (treated as an orphan), or the epoch
         * moved on before S's unit was stored: redo the batch */
    }
    dc_rb_shared *sh = rb->sh;
    dc_rb_keep_pace(rb, count * rb->t.lay.su);
    pthread_mutex_lock(&sh->mu);
    sh->done_bytes += count * rb->t.lay.su;
    bool cancel = sh->fn && sh->fn(sh->arg, sh->done_bytes) != 0;
    pthread_mutex_unlock(&sh->mu);
    if (cancel) {
        dc_set_error("rebuild of inode %llu cancelled", (unsigned long long)rb->t.ino);
        return -ECANCELED;
    }
    return 0;
}

/* A lane's loop: the next batch of the shared range until it is done or
 * some lane failed. */
static void *dc_rb_lane_run(void *arg)
{
    dc_rebuild *rb = arg;
    dc_rb_shared *sh = rb->sh;
    rb->rc = 0;
    while (!atomic_load(&sh->stop)) {
        uint64_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= dc_div_up(sh->to - sh->from, rb->batch))
            break;
        uint64_t s = sh->from + i * rb->batch;
        uint64_t count = sh->to - s < rb->batch ? sh->to - s : rb->batch;
        rb->rc = dc_rb_batch(rb, s, count);
        if (rb->rc < 0) {
            snprintf(rb->err, sizeof rb->err, "%s", depfs_last_error());
            atomic_store(&sh->stop, true);
            break;
        }
    }
    return NULL;
}

/* Stripes [from, to) in up to nlanes lanes at once (lane 0 in this thread);
 * the first failure's error, its text set in this thread. */
static int dc_rb_range(dc_rebuild *lanes, unsigned nlanes, uint64_t from, uint64_t to)
{
    dc_rb_shared *sh = lanes[0].sh;
    sh->from = from;
    sh->to = to;
    atomic_store(&sh->next, 0);
    atomic_store(&sh->stop, false);
    uint64_t batches = to > from ? dc_div_up(to - from, lanes[0].batch) : 0;
    unsigned use = batches < nlanes ? (unsigned)batches : nlanes;
    pthread_t th[DC_RB_LANES];
    bool started[DC_RB_LANES] = {false};
    assert(nlanes <= DC_RB_LANES);
    for (unsigned i = 1; i < use; i++)
        started[i] = pthread_create(&th[i], NULL, dc_rb_lane_run, &lanes[i]) == 0;
    dc_rb_lane_run(&lanes[0]); /* a lane that could not start leaves its batches to us */
    int rc = lanes[0].rc;
    for (unsigned i = 1; i < use; i++) {
        if (!started[i])
            continue;
        pthread_join(th[i], NULL);
        if (rc == 0 && lanes[i].rc < 0) {
            rc = lanes[i].rc;
            dc_set_error("%s", lanes[i].err);
        }
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
            dc_req_set_lock(&rb->reqs[p], stripes, DC_RB_TAIL_STRIPES, depfs_client_id(rb->fs), op,
                            p == rb->spos ? DC_LOCK_WRITE : DC_LOCK_READ);
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

static void dc_rb_free(dc_rebuild *lanes, unsigned nlanes)
{
    for (unsigned i = 0; i < nlanes; i++) {
        free(lanes[i].units);
        free(lanes[i].reqs);
        free(lanes[i].wreqs);
        free(lanes[i].skip);
        lanes[i].units = NULL;
        lanes[i].reqs = lanes[i].wreqs = NULL;
        lanes[i].skip = NULL;
    }
}

/* Lanes 1.. as copies of lane 0, each with buffers for batches of one
 * round's stripes split between the lanes (fewer lanes than DC_RB_LANES
 * when `stripes` is small); *nlanes says how many. */
static int dc_rb_alloc(dc_rebuild *lanes, unsigned *nlanes, uint64_t stripes)
{
    const layout *lay = &lanes[0].t.lay;
    uint64_t round = dc_round_stripes(lanes[0].fs, lay);
    uint64_t batch = round / DC_RB_LANES ? round / DC_RB_LANES : 1;
    if (batch > stripes)
        batch = stripes ? stripes : 1;
    uint64_t batches = stripes ? dc_div_up(stripes, batch) : 1;
    *nlanes = batches < DC_RB_LANES ? (unsigned)batches : DC_RB_LANES;
    for (unsigned i = 0; i < *nlanes; i++) {
        dc_rebuild *rb = &lanes[i];
        if (i > 0)
            *rb = lanes[0]; /* buffers are allocated below */
        rb->batch = batch;
        rb->units = malloc((uint64_t)lay->n * rb->batch * lay->su);
        rb->reqs = calloc(lay->n, sizeof *rb->reqs);
        rb->wreqs = calloc(lay->n, sizeof *rb->wreqs);
        rb->skip = calloc(rb->batch, sizeof *rb->skip);
        if (!rb->units || !rb->reqs || !rb->wreqs || !rb->skip) {
            dc_rb_free(lanes, i + 1);
            return -ENOMEM;
        }
    }
    return 0;
}

/* The rebuild of the file onto server_id, held open by the caller's handle. */
static int dc_rebuild_held(depfs_t *fs, const depfs_fh_t *held, uint32_t server_id,
                           depfs_progress_fn fn, void *arg)
{
    uint64_t ino = held->inode->ino;
    dc_rb_shared sh = {.fn = fn, .arg = arg, .background = dc_holds_cluster_key(fs)};
    dc_rebuild lanes[DC_RB_LANES];
    memset(lanes, 0, sizeof lanes);
    dc_rebuild *rb = &lanes[0];
    rb->fs = fs;
    rb->server = server_id;
    rb->sh = &sh;
    int rc = dc_target_of_handle(fs, held, &rb->t);
    if (rc < 0)
        return rc;
    int spos = dc_pos_of(&rb->t.lay, server_id);
    if (spos < 0)
        return 0;
    rb->spos = (unsigned)spos;
    dc_test_pause(DC_PAUSE_REBUILD_HELD);
    const layout *lay = &rb->t.lay;
    /* S may have missed epochs while it was away: tell it ours first */
    rc = dc_push_state(fs, server_id, atomic_load(&fs->cluster_epoch), -1);
    if (rc < 0) {
        dc_set_error("rebuild of inode %llu: server %u: %s", (unsigned long long)ino, server_id,
                     strerror(-rc));
        return rc == DC_ERR_DOWN ? -EHOSTDOWN : rc;
    }
    /* another server's units of this file may be stale too (it missed
     * writes): never decode from them */
    rc = dc_untrusted_mask(fs, lay, ino, true, &rb->untrusted);
    if (rc < 0)
        return rc;
    uint64_t max_bytes = 0;
    rc = dc_strip_extent(fs, &rb->t, dc_reachable_mask(fs, lay) & ~(1u << rb->spos), &max_bytes);
    if (rc < 0)
        return rc;
    uint64_t stripes = dc_div_up(rb->t.size, layout_stripe_bytes(lay));
    if (dc_div_up(max_bytes, lay->su) > stripes)
        stripes = dc_div_up(max_bytes, lay->su);
    if (pthread_mutex_init(&sh.mu, NULL) != 0)
        return -ENOMEM;
    unsigned nlanes = 0;
    rc = dc_rb_alloc(lanes, &nlanes, stripes);
    uint64_t done = 0;
    for (unsigned round = 0; rc == 0; round++) {
        rc = dc_rb_range(lanes, nlanes, done, stripes);
        if (rc < 0)
            break;
        done = stripes;
        if (round >= DC_RB_TAIL_ROUNDS_MAX) {
            dc_set_error("rebuild of inode %llu: the file kept growing", (unsigned long long)ino);
            rc = -EBUSY;
            break;
        }
        rc = dc_rb_tail(rb, stripes, &stripes);
        if (rc < 0 || stripes == done)
            break;
        if (stripes > done && (nlanes < DC_RB_LANES ||
                               rb->batch * DC_RB_LANES < dc_round_stripes(fs, lay))) {
            dc_rb_free(lanes, nlanes);
            rc = dc_rb_alloc(lanes, &nlanes, stripes - done);
        }
    }
    dc_rb_free(lanes, nlanes);
    pthread_mutex_destroy(&sh.mu);
    if (rc == 0) {
        pthread_mutex_lock(&fs->pace_lock);
        uint64_t busy_bytes = fs->pace.busy_bytes, idle_bytes = fs->pace.idle_bytes;
        pthread_mutex_unlock(&fs->pace_lock);
        log_info("rebuilt inode %llu on server %u: %llu stripes (%llu ms paced: rebuild_rate, "
                 "or clients busy; this process's rebuilds so far: %llu bytes while clients "
                 "were busy, %llu while idle)", (unsigned long long)ino, server_id,
                 (unsigned long long)stripes, (unsigned long long)atomic_load(&sh.paced_ms),
                 (unsigned long long)busy_bytes, (unsigned long long)idle_bytes);
    }
    return rc;
}

int depfs_rebuild_file(depfs_t *fs, uint64_t ino, uint32_t server_id, depfs_progress_fn fn,
                       void *arg)
{
    if (fs == NULL)
        return -EINVAL;
    depfs_fh_t *held = NULL;
    int rc = dc_open_held(fs, ino, &held);
    if (rc < 0)
        return rc; /* -ENOENT: gone, or unlinked with its strip files going */
    rc = dc_rebuild_held(fs, held, server_id, fn, arg);
    int rc2 = depfs_close(held); /* no data buffered: gives the hold back */
    return rc < 0 ? rc : rc2;
}
