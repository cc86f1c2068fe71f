/* eng_read.c - the read engine (dc_read): striped reads with degraded-mode
 * decoding, the read-ahead window and the degraded stripe cache.
 *
 * Fault-free: per round of stripes, one vectored IO_READ per server naming
 * exactly the data bytes wanted; the reply bulk lands straight in the
 * caller's buffer (resp_iov). No parity is read, nothing is decoded.
 * Degraded: stripes whose wanted data sit on a server known down skip that
 * first pass (and ones whose server fails in it are redone): they are read
 * as the same byte range of any k surviving units, under the stripe locks
 * (LOCK+READ) so no concurrent write is half seen, and only their lost
 * wanted data units are decoded. A piece spanning at least half a unit's
 * columns of a stripe with lost data units (touching a lost unit or not)
 * instead decodes the whole stripe, with the next few when the handle reads
 * in order, into the inode's degraded stripe cache, which serves the
 * handle's other reads of those stripes (see "degraded stripe cache"
 * below: FUSE requests do not end at stripe edges).
 * Read-ahead: per inode, a window of whole stripes (DC_RA_STRIPES, at most
 * DC_RA_BYTES_MAX) read in one round over all servers when a handle reads
 * sequentially in small reads (< DC_RA_READ_BYTES_MAX); later reads of that
 * handle are served from it. Large reads skip it: through FUSE the kernel
 * already reads ahead in large parallel requests, and a synchronous window
 * serialized them (measured: 305-322 vs 346-395 MB/s for 1 MiB reads). The window
 * belongs to the handle that filled it (a new open never sees it: close-to-
 * open) and is dropped by every write, flush, truncate and close here. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"

typedef struct dc_rstripe {
    stripe_piece pc;
    uint8_t *dest;          /* caller's bytes for pc */
    uint32_t used;          /* positions read for this stripe */
    bool degraded;
} dc_rstripe;

/* Range [a,b) of data unit u touched by the piece; false when untouched. */
static bool dc_piece_unit_range(const layout *lay, const stripe_piece *pc, unsigned u, uint32_t *a,
                                uint32_t *b)
{
    uint64_t lo = (uint64_t)u * lay->su, hi = lo + lay->su;
    uint64_t s = pc->off_in_stripe > lo ? pc->off_in_stripe : lo;
    uint64_t e = pc->off_in_stripe + pc->len < hi ? pc->off_in_stripe + pc->len : hi;
    if (s >= e)
        return false;
    *a = (uint32_t)(s - lo);
    *b = (uint32_t)(e - lo);
    return true;
}

/* ------------------------------------------------------- degraded reads */

enum dc_dmode {
    DC_D_DIRECT,   /* fetch the piece's columns of k units, decode, copy out */
    DC_D_FILL,     /* fetch the whole stripe into a claimed cache slot */
    DC_D_WAIT,     /* another read of this handle is filling its slot */
    DC_D_DONE,     /* served from the cache */
};

typedef struct dc_dstripe {
    dc_rstripe *rs;
    uint32_t ra, rb;
    enum dc_dmode mode;
    struct dc_dslot *slot;  /* DC_D_FILL */
    uint64_t gen;           /* DC_D_FILL: the cache generation when claimed */
    uint8_t *unit[LAYOUT_MAX_N];
    bool present[LAYOUT_MAX_N];
    bool want[LAYOUT_MAX_N];
} dc_dstripe;

/* The hull [ra, rb) of the unit columns the piece touches. */
static void dc_piece_cols(const layout *lay, const stripe_piece *pc, uint32_t *ra, uint32_t *rb)
{
    *ra = lay->su;
    *rb = 0;
    for (unsigned u = 0; u < lay->k; u++) {
        uint32_t a, b;
        if (!dc_piece_unit_range(lay, pc, u, &a, &b))
            continue;
        *ra = a < *ra ? a : *ra;
        *rb = b > *rb ? b : *rb;
    }
    assert(*ra < *rb);
}

static void dc_degraded_range(const layout *lay, dc_dstripe *d)
{
    dc_piece_cols(lay, &d->rs->pc, &d->ra, &d->rb);
}

/* A piece the degraded stripe cache takes: its whole stripe lies in the
 * file, the piece is part of it and spans at least half a unit's columns
 * (a direct decode would fetch most of the stripe anyway). */
static bool dc_piece_cacheable(const layout *lay, const stripe_piece *pc, uint64_t size)
{
    uint64_t sb = layout_stripe_bytes(lay);
    uint32_t ra, rb;
    dc_piece_cols(lay, pc, &ra, &rb);
    return (pc->stripe + 1) * sb <= size && pc->len < sb && 2u * (rb - ra) >= lay->su;
}

/* Build LOCK+READ requests of any k usable units per degraded stripe
 * (data units first: they are the ones a healthy read would fetch). */
static int dc_degraded_build(depfs_t *fs, const layout *lay, dc_dstripe *ds, unsigned nd,
                             uint32_t bad, dc_req *reqs, uint64_t op_id, unsigned lock_attempt)
{
    memset(reqs, 0, sizeof(dc_req) * lay->n);
    for (unsigned i = 0; i < nd; i++) {
        dc_dstripe *d = &ds[i];
        uint64_t s = d->rs->pc.stripe;
        unsigned got = 0;
        memset(d->present, 0, sizeof d->present);
        for (unsigned u = 0; u < lay->n && got < lay->k; u++) {
            unsigned pos = layout_unit_pos(lay, s, u);
            if ((bad >> pos) & 1u)
                continue;
            if (!reqs[pos].active)
                dc_req_init(&reqs[pos], lay, pos, DEPFS__IO_OP__IO_READ);
            int rc = dc_req_add(&reqs[pos], layout_local_offset(lay, s) + d->ra, d->rb - d->ra,
                                d->unit[u]);
            assert(rc == 0);
            (void)rc;
            d->present[u] = true;
            got++;
        }
        if (got < lay->k)
            return -EIO;
    }
    uint64_t first = ds[0].rs->pc.stripe, count = ds[nd - 1].rs->pc.stripe - first + 1;
    for (unsigned p = 0; p < lay->n; p++) {
        if (!reqs[p].active)
            continue;
        if (fs->ignore_locks) {
            reqs[p].ignore_locks = true;
        } else if (!dc_test_hooks_get()->no_locks) { /* TEST ONLY: torn decodes */
            dc_req_set_lock(&reqs[p], first, count, depfs_client_id(fs), op_id);
            reqs[p].lock_attempt = lock_attempt;
        }
    }
    return 0;
}

/* Read any k usable units of every stripe of ds (ascending) over its
 * [ra, rb) into d->unit[] in one LOCK+READ fan-out, retrying NACKs and
 * failing over servers that fail. On success the stripe locks are still
 * held (the caller decodes, then dc_io_unlock_granted(reqs)): the bytes of
 * each stripe were all read under them, so no concurrent write is half seen. */
static int dc_degraded_fetch(depfs_t *fs, dc_inode *in, dc_dstripe *ds, unsigned nd, uint32_t bad,
                             dc_req *reqs)
{
    const layout *lay = &in->lay;
    unsigned restarts = 0, nacks = 0;
    for (unsigned attempt = 0;; attempt++) {
        bad |= dc_down_mask(fs, lay);
        if (dc_popcount32(bad) > lay->n - lay->k) {
            dc_set_error("read of inode %llu: %u of %u units of a stripe unavailable (n-k=%u)",
                         (unsigned long long)in->ino, dc_popcount32(bad), lay->n,
                         lay->n - lay->k);
            return -EIO;
        }
        int rc = dc_degraded_build(fs, lay, ds, nd, bad, reqs, dc_next_op_id(fs), nacks);
        if (rc < 0)
            return rc;
        dc_io_run(fs, in->ino, reqs, lay->n);
        bool nack = false, failed = false;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!reqs[p].active || reqs[p].result == 0)
                continue;
            if (reqs[p].result == -EAGAIN) {
                nack = true;
            } else {
                failed = true;
                bad |= 1u << p;
            }
        }
        if (!nack && !failed)
            return 0;
        dc_io_unlock_granted(fs, in->ino, reqs, lay->n);
        if (failed) {
            if (++restarts > DC_FAILOVER_RESTARTS_MAX)
                return -EIO;
            continue;
        }
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX) {
            dc_set_error("degraded read of inode %llu: stripes stayed locked by writers",
                         (unsigned long long)in->ino);
            return -EBUSY;
        }
        dc_lock_backoff(attempt);
        nacks++;
    }
}

/* Rebuild the wanted lost units of d and copy its piece to the caller. */
static int dc_degraded_decode(const layout *lay, const codec *cd, dc_dstripe *d)
{
    int rc = codec_decode_want(cd, d->rb - d->ra, d->unit, d->present, d->want);
    if (rc < 0)
        return rc;
    uint8_t *dest = d->rs->dest;
    for (unsigned u = 0; u < lay->k; u++) {
        uint32_t a, b;
        if (!dc_piece_unit_range(lay, &d->rs->pc, u, &a, &b))
            continue;
        uint64_t at = (uint64_t)u * lay->su + a - d->rs->pc.off_in_stripe;
        memcpy(dest + at, d->unit[u] + (a - d->ra), b - a);
    }
    return 0;
}

/* ------------------------------------------------- degraded stripe cache
 *
 * Decoding a lost unit's columns costs k units' worth of reads over those
 * columns. Through FUSE the kernel reads in read-ahead requests (128 KiB
 * with its default window, a third of an 8@6 stripe of 64 KiB units; up to
 * 1 MiB with the window depfs-fuse sets, 2.7 stripes, whose edge stripes
 * two requests share), so decoding per request read each degraded stripe
 * about three times at 128 KiB (2.25x the healthy bytes with 2 of 8 down) and
 * the requests of one stripe NACKed each other's stripe locks. Instead a
 * read whose piece of a degraded stripe spans at least half a unit's
 * columns fetches and decodes the WHOLE stripe (k units: what a healthy
 * read of the stripe moves) into a per-inode slot, and the handle's other
 * reads of that stripe are served from it, or wait for the read filling it.
 * Like the read-ahead window, a slot belongs to the handle that filled it
 * (close-to-open) and every write, flush, truncate and close here drops it
 * (dc_ra_drop bumps `gen`: a fill begun before a drop is not kept). A slot
 * also expires after DC_DCACHE_TTL_MS: it only bridges the kernel's
 * parallel requests of one stripe, not later re-reads. */

#define DC_DCACHE_SLOTS 16u
#define DC_DCACHE_BYTES_MAX (16u << 20)
#define DC_DCACHE_TTL_MS 1000u
/* Stripes a handle filling in order fetches beyond the one it needs. */
#define DC_DCACHE_AHEAD 3u

enum dc_dslot_state { DC_DSLOT_EMPTY, DC_DSLOT_FILLING, DC_DSLOT_READY };

typedef struct dc_dslot {
    enum dc_dslot_state state;
    uint64_t stripe;
    const depfs_fh_t *owner;
    uint64_t ready_ms, last_use;
    uint8_t *buf;              /* n units of su: data units 0..k-1 = the stripe's bytes */
} dc_dslot;

typedef struct dc_dcache {
    pthread_mutex_t lock;
    pthread_cond_t cond;       /* a FILLING slot finished */
    uint64_t gen;              /* bumped by every drop */
    uint64_t clock;            /* LRU stamps */
    unsigned nslots;           /* 0: stripes too large to cache */
    const depfs_fh_t *seq_owner; /* the handle that fetched last, */
    uint64_t seq_next;         /* and the stripe after its last fetch */
    dc_dslot slot[DC_DCACHE_SLOTS];
} dc_dcache;

static void dc_dcache_init(dc_dcache *dc, const layout *lay)
{
    uint64_t slot_bytes = (uint64_t)lay->n * lay->su;
    uint64_t by_mem = DC_DCACHE_BYTES_MAX / slot_bytes;
    dc->nslots = (unsigned)(by_mem < DC_DCACHE_SLOTS ? by_mem : DC_DCACHE_SLOTS);
    pthread_mutex_init(&dc->lock, NULL);
    pthread_cond_init(&dc->cond, NULL);
}

static void dc_dcache_destroy(dc_dcache *dc)
{
    for (unsigned i = 0; i < DC_DCACHE_SLOTS; i++)
        free(dc->slot[i].buf);
    pthread_cond_destroy(&dc->cond);
    pthread_mutex_destroy(&dc->lock);
}

static void dc_dcache_drop(dc_dcache *dc)
{
    pthread_mutex_lock(&dc->lock);
    dc->gen++;
    for (unsigned i = 0; i < dc->nslots; i++)
        if (dc->slot[i].state == DC_DSLOT_READY)
            dc->slot[i].state = DC_DSLOT_EMPTY;
    pthread_mutex_unlock(&dc->lock);
}

/* Worth caching: the handle is known and the piece is cacheable. */
static bool dc_dcache_fits(const dc_dcache *dc, const layout *lay, const dc_dstripe *d,
                           uint64_t size)
{
    return dc != NULL && dc->nslots > 0 && dc_piece_cacheable(lay, &d->rs->pc, size);
}

/* Serve d from the handle's slot of its stripe (DC_D_DONE), claim a slot to
 * fill (DC_D_FILL), report a fill in progress (DC_D_WAIT; with `wait`,
 * wait for it instead), or give up (DC_D_DIRECT: every slot is filling). */
static enum dc_dmode dc_dcache_acquire(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
                                       dc_dstripe *d, bool wait)
{
    uint64_t s = d->rs->pc.stripe;
    enum dc_dmode mode = DC_D_DIRECT;
    pthread_mutex_lock(&dc->lock);
    for (;;) {
        dc_dslot *mine = NULL, *victim = NULL;
        uint64_t now_ms = dc_now_ms();
        for (unsigned i = 0; i < dc->nslots; i++) {
            dc_dslot *sl = &dc->slot[i];
            if (sl->state == DC_DSLOT_READY && now_ms - sl->ready_ms > DC_DCACHE_TTL_MS)
                sl->state = DC_DSLOT_EMPTY;
            if (sl->state != DC_DSLOT_EMPTY && sl->stripe == s && sl->owner == fh)
                mine = sl;
            if (sl->state != DC_DSLOT_FILLING &&
                (victim == NULL || sl->state < victim->state ||
                 (sl->state == victim->state && sl->last_use < victim->last_use)))
                victim = sl;
        }
        if (mine != NULL && mine->state == DC_DSLOT_READY) {
            if (d->rs->pc.len > 0) /* 0: a read-ahead stripe, nothing to copy */
                memcpy(d->rs->dest, mine->buf + d->rs->pc.off_in_stripe, d->rs->pc.len);
            mine->last_use = ++dc->clock;
            mode = DC_D_DONE;
            break;
        }
        if (mine != NULL && wait) {
            pthread_cond_wait(&dc->cond, &dc->lock);
            continue;
        }
        if (mine != NULL) {
            mode = DC_D_WAIT;
            break;
        }
        if (victim == NULL)
            break;
        if (victim->buf == NULL)
            victim->buf = malloc((size_t)lay->n * lay->su);
        if (victim->buf == NULL)
            break;
        victim->state = DC_DSLOT_FILLING;
        victim->stripe = s;
        victim->owner = fh;
        victim->last_use = ++dc->clock;
        d->slot = victim;
        d->gen = dc->gen;
        mode = DC_D_FILL;
        break;
    }
    pthread_mutex_unlock(&dc->lock);
    return mode;
}

/* A fill ended: keep the slot when it succeeded and no drop came since it
 * was claimed; wake the reads waiting for it. */
static void dc_dcache_publish(dc_dcache *dc, dc_dstripe *d, bool ok)
{
    pthread_mutex_lock(&dc->lock);
    bool keep = ok && d->gen == dc->gen;
    d->slot->state = keep ? DC_DSLOT_READY : DC_DSLOT_EMPTY;
    d->slot->ready_ms = dc_now_ms();
    pthread_mutex_unlock(&dc->lock);
    pthread_cond_broadcast(&dc->cond);
    d->slot = NULL;
}

/* True when stripe t continues fh's fills: the stripe after the last one
 * it fetched, or at most `gap` stripes later (stripes with no lost data
 * unit need no fill); the fills now end before `next`. */
static bool dc_dcache_sequential(dc_dcache *dc, const depfs_fh_t *fh, uint64_t t, uint64_t gap,
                                 uint64_t next)
{
    pthread_mutex_lock(&dc->lock);
    bool seq = dc->seq_owner == fh && t >= dc->seq_next && t - dc->seq_next <= gap;
    dc->seq_owner = fh;
    dc->seq_next = next;
    pthread_mutex_unlock(&dc->lock);
    return seq;
}

static bool dc_stripe_lost(const layout *lay, uint64_t s, uint32_t bad)
{
    for (unsigned u = 0; u < lay->k; u++)
        if ((bad >> layout_unit_pos(lay, s, u)) & 1u)
            return true;
    return false;
}

/* A handle filling stripes in order also fills the next DC_DCACHE_AHEAD
 * stripes with lost data units in the same fetch (one LOCK+READ and one
 * UNLOCK per server for all of them: after the bytes, the request count
 * was the degraded path's main cost), as long as they lie in the file and
 * are not cached or being filled. Stripes whose lost units are all parity
 * (at most n-k in a row) are skipped. `last` is the round's last stripe, a
 * FILL; next[] and ahead[] (empty pieces) receive the extra ones. Returns
 * how many. */
static unsigned dc_dcache_ahead(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
                                uint64_t size, uint32_t bad, const dc_dstripe *last,
                                dc_dstripe *next, dc_rstripe *ahead)
{
    uint64_t t = last->rs->pc.stripe, sb = layout_stripe_bytes(lay), gap = lay->n - lay->k;
    if (!dc_dcache_sequential(dc, fh, t, gap, t + 1))
        return 0;
    unsigned added = 0;
    uint64_t end = t + 1;
    for (uint64_t s = t + 1; added < DC_DCACHE_AHEAD && s <= t + DC_DCACHE_AHEAD + gap; s++) {
        if ((s + 1) * sb > size)
            break;
        if (!dc_stripe_lost(lay, s, bad))
            continue;
        memset(&ahead[added], 0, sizeof ahead[added]);
        ahead[added].pc.stripe = s;
        ahead[added].pc.file_off = s * sb;
        dc_dstripe *d = &next[added];
        memset(d, 0, sizeof *d);
        d->rs = &ahead[added];
        if (dc_dcache_acquire(dc, lay, fh, d, false) != DC_D_FILL)
            break;
        d->mode = DC_D_FILL;
        d->ra = 0;
        d->rb = lay->su;
        added++;
        end = s + 1;
    }
    if (added > 0)
        (void)dc_dcache_sequential(dc, fh, t + 1, 0, end);
    return added;
}

/* ------------------------------------------------ degraded read rounds */

static dc_dcache *dc_dcache_of(dc_inode *in); /* the inode's, in its read-ahead state */

/* What the read needs decoded: the lost data units its piece touches, or,
 * for a slot fill, every lost data unit of the stripe. */
static void dc_degraded_want(const layout *lay, dc_dstripe *d)
{
    memset(d->want, 0, sizeof d->want);
    for (unsigned u = 0; u < lay->k; u++) {
        uint32_t a, b;
        d->want[u] = d->mode == DC_D_FILL || dc_piece_unit_range(lay, &d->rs->pc, u, &a, &b);
    }
}

/* Fetch, decode and copy out the DIRECT and FILL stripes of ds (ascending,
 * no other modes), publishing the filled slots. */
static int dc_degraded_batch(depfs_t *fs, dc_inode *in, dc_dcache *dc, dc_dstripe *ds,
                             unsigned nd, uint32_t bad)
{
    const layout *lay = &in->lay;
    const codec *cd = dc_codec(fs, lay->n, lay->k, lay->codec_version);
    uint64_t arena_bytes = 0;
    for (unsigned i = 0; i < nd; i++)
        if (ds[i].mode == DC_D_DIRECT)
            arena_bytes += (uint64_t)lay->n * (ds[i].rb - ds[i].ra);
    uint8_t *arena = arena_bytes ? malloc(arena_bytes) : NULL;
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    int rc = 0;
    if (cd == NULL)
        rc = -EINVAL;
    else if (reqs == NULL || (arena_bytes && arena == NULL))
        rc = -ENOMEM;
    uint8_t *cur = arena;
    for (unsigned i = 0; i < nd && rc == 0; i++) {
        dc_dstripe *d = &ds[i];
        dc_degraded_want(lay, d);
        for (unsigned u = 0; u < lay->n; u++) {
            if (d->mode == DC_D_FILL) {
                d->unit[u] = d->slot->buf + (size_t)u * lay->su;
            } else {
                d->unit[u] = cur;
                cur += d->rb - d->ra;
            }
        }
        if (d->mode == DC_D_FILL) {
            /* the whole stripe: its buffered bytes must land first */
            uint64_t sb = layout_stripe_bytes(lay);
            rc = dc_wb_flush_range(fs, in, d->rs->pc.stripe * sb, sb);
        }
    }
    bool locked = false;
    if (rc == 0) {
        rc = dc_degraded_fetch(fs, in, ds, nd, bad, reqs);
        locked = rc == 0;
    }
    for (unsigned i = 0; i < nd && rc == 0; i++)
        rc = dc_degraded_decode(lay, cd, &ds[i]);
    for (unsigned i = 0; i < nd; i++)
        if (ds[i].mode == DC_D_FILL && ds[i].slot != NULL)
            dc_dcache_publish(dc, &ds[i], rc == 0);
    if (locked)
        dc_io_unlock_granted(fs, in->ino, reqs, lay->n);
    free(reqs);
    free(arena);
    return rc;
}

/* Read the degraded stripes (ascending) of one round by decoding: cached
 * slots first, then one fetch of every stripe to decode (and the next ones
 * when the handle reads in order: ds has room for DC_DCACHE_AHEAD more),
 * then the stripes other reads of this handle were filling. */
static int dc_read_degraded(depfs_t *fs, dc_inode *in, const depfs_fh_t *fh, uint64_t size,
                            dc_dstripe *ds, unsigned nd, uint32_t bad)
{
    const layout *lay = &in->lay;
    dc_dcache *dc = fh != NULL ? dc_dcache_of(in) : NULL;
    for (unsigned i = 0; i < nd; i++) {
        dc_dstripe *d = &ds[i];
        dc_degraded_range(lay, d);
        d->mode = dc_dcache_fits(dc, lay, d, size) ? dc_dcache_acquire(dc, lay, fh, d, false)
                                                   : DC_D_DIRECT;
        if (d->mode == DC_D_FILL) {
            d->ra = 0;
            d->rb = lay->su;
        }
    }
    dc_rstripe ahead[DC_DCACHE_AHEAD];
    if (ds[nd - 1].mode == DC_D_FILL)
        nd += dc_dcache_ahead(dc, lay, fh, size, bad, &ds[nd - 1], &ds[nd], ahead);
    /* compact the stripes to fetch to the front, keeping their order */
    unsigned nf = 0;
    for (unsigned i = 0; i < nd; i++) {
        if (ds[i].mode != DC_D_DIRECT && ds[i].mode != DC_D_FILL)
            continue;
        dc_dstripe t = ds[i];
        memmove(&ds[nf + 1], &ds[nf], (i - nf) * sizeof *ds);
        ds[nf++] = t;
    }
    int rc = nf ? dc_degraded_batch(fs, in, dc, ds, nf, bad) : 0;
    for (unsigned i = nf; i < nd && rc == 0; i++) {
        dc_dstripe *d = &ds[i];
        if (d->mode != DC_D_WAIT)
            continue;
        d->mode = dc_dcache_acquire(dc, lay, fh, d, true);
        if (d->mode == DC_D_DONE)
            continue;
        if (d->mode == DC_D_FILL) {
            d->ra = 0;
            d->rb = lay->su;
        }
        rc = dc_degraded_batch(fs, in, dc, d, 1, bad);
    }
    return rc;
}

/* ----------------------------------------------------------- fault-free */

/* True when a data unit the piece wants sits on a position in `down`. */
static bool dc_piece_lost(const layout *lay, const dc_rstripe *r, uint32_t down)
{
    for (unsigned u = 0; u < lay->k; u++) {
        uint32_t a, b;
        if (dc_piece_unit_range(lay, &r->pc, u, &a, &b) &&
            ((down >> layout_unit_pos(lay, r->pc.stripe, u)) & 1u))
            return true;
    }
    return false;
}

/* One request per server naming the wanted data bytes of every stripe
 * whose wanted units are all up; stripes with a wanted unit on a down
 * server are left to the decoding read (their surviving data would only
 * be fetched twice). So are cacheable pieces of stripes with lost data
 * units when reads may be cached (`size` != 0): the stripe is decoded
 * whole once for all its pieces, which would otherwise fetch its surviving
 * units a second time. */
static void dc_build_reads(const layout *lay, dc_rstripe *rs, unsigned nst, uint32_t down,
                           uint64_t size, dc_req *reqs)
{
    memset(reqs, 0, sizeof(dc_req) * lay->n);
    for (unsigned i = 0; i < nst; i++) {
        dc_rstripe *r = &rs[i];
        r->used = 0;
        r->degraded = dc_piece_lost(lay, r, down) ||
                      (size != 0 && dc_stripe_lost(lay, r->pc.stripe, down) &&
                       dc_piece_cacheable(lay, &r->pc, size));
        for (unsigned u = 0; u < lay->k && !r->degraded; u++) {
            uint32_t a, b;
            if (!dc_piece_unit_range(lay, &r->pc, u, &a, &b))
                continue;
            unsigned pos = layout_unit_pos(lay, r->pc.stripe, u);
            if (!reqs[pos].active)
                dc_req_init(&reqs[pos], lay, pos, DEPFS__IO_OP__IO_READ);
            uint8_t *dest = r->dest + ((uint64_t)u * lay->su + a - r->pc.off_in_stripe);
            int rc = dc_req_add(&reqs[pos], layout_local_offset(lay, r->pc.stripe) + a, b - a, dest);
            assert(rc == 0);
            (void)rc;
            r->used |= 1u << pos;
        }
    }
}

/* Where a read's degraded stripes may be cached: the handle reading (NULL:
 * no cache) and the file size the read was clamped to. */
typedef struct dc_rctx {
    const depfs_fh_t *fh;
    uint64_t size;
} dc_rctx;

static int dc_read_round(depfs_t *fs, dc_inode *in, const dc_rctx *cx, dc_rstripe *rs,
                         unsigned nst, dc_req *reqs, dc_dstripe *ds)
{
    const layout *lay = &in->lay;
    uint32_t down = dc_down_mask(fs, lay);
    dc_build_reads(lay, rs, nst, down, cx->fh != NULL ? cx->size : 0, reqs);
    dc_io_run(fs, in->ino, reqs, lay->n);
    uint32_t bad = down;
    for (unsigned p = 0; p < lay->n; p++)
        if (reqs[p].active && reqs[p].result != 0)
            bad |= 1u << p;
    unsigned nd = 0;
    for (unsigned i = 0; i < nst; i++) {
        if (rs[i].degraded || (rs[i].used & bad) != 0) {
            memset(&ds[nd], 0, sizeof ds[nd]);
            ds[nd++].rs = &rs[i];
        }
    }
    if (nd == 0)
        return 0;
    return dc_read_degraded(fs, in, cx->fh, cx->size, ds, nd, bad);
}

static int dc_read_range_cx(depfs_t *fs, dc_inode *in, const dc_rctx *cx, uint8_t *buf,
                            uint64_t off, uint64_t len)
{
    const layout *lay = &in->lay;
    if (len == 0)
        return 0;
    uint64_t per_round = dc_round_stripes(fs, lay);
    uint64_t npieces = layout_piece_count(lay, off, len);
    dc_rstripe *rs = calloc(per_round, sizeof *rs);
    dc_dstripe *ds = calloc(per_round + DC_DCACHE_AHEAD, sizeof *ds); /* + read-ahead */
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    int rc = 0;
    if (rs == NULL || ds == NULL || reqs == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint64_t i = 0; i < npieces && rc == 0; i += per_round) {
        unsigned nst = (unsigned)(npieces - i < per_round ? npieces - i : per_round);
        for (unsigned j = 0; j < nst; j++) {
            rs[j].pc = layout_piece(lay, off, len, i + j);
            rs[j].dest = buf + (rs[j].pc.file_off - off);
        }
        rc = dc_read_round(fs, in, cx, rs, nst, reqs, ds);
    }
out:
    free(reqs);
    free(ds);
    free(rs);
    return rc;
}

int dc_read_range(depfs_t *fs, dc_inode *in, uint8_t *buf, uint64_t off, uint64_t len)
{
    const dc_rctx none = {0};
    return dc_read_range_cx(fs, in, &none, buf, off, len);
}

/* ------------------------------------------------------------ read-ahead */

#define DC_RA_STRIPES 8u
#define DC_RA_BYTES_MAX (16u << 20)
#define DC_RA_READ_BYTES_MAX (64u << 10)

typedef struct dc_ra dc_ra;
static void dc_ra_destroy(dc_ra *ra);
struct dc_ra {
    pthread_mutex_t lock;
    const depfs_fh_t *owner;  /* handle whose reads filled the window */
    uint64_t off, len;        /* cached window [off, off+len); len 0: none */
    uint64_t next_off;        /* where the owner's last read ended */
    uint64_t cap;
    uint8_t *buf;
    dc_dcache dc;             /* degraded stripes (own lock) */
};

static uint64_t dc_ra_capacity(const layout *lay)
{
    uint64_t sb = layout_stripe_bytes(lay);
    uint64_t cap = (uint64_t)DC_RA_STRIPES * sb;
    if (cap > DC_RA_BYTES_MAX)
        cap = sb <= DC_RA_BYTES_MAX ? (DC_RA_BYTES_MAX / sb) * sb : DC_RA_BYTES_MAX;
    return cap;
}

static dc_ra *dc_ra_get(dc_inode *in)
{
    dc_ra **slot = &in->ra;
    dc_ra *ra = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (ra != NULL)
        return ra;
    dc_ra *fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL)
        return NULL;
    fresh->cap = dc_ra_capacity(&in->lay); /* buf: at the first fill */
    pthread_mutex_init(&fresh->lock, NULL);
    dc_dcache_init(&fresh->dc, &in->lay);
    dc_ra *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, fresh, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return fresh;
    dc_ra_destroy(fresh);
    return expected;
}

static dc_dcache *dc_dcache_of(dc_inode *in)
{
    dc_ra *ra = dc_ra_get(in);
    return ra != NULL ? &ra->dc : NULL;
}

void dc_ra_drop(dc_inode *in)
{
    dc_ra *ra = __atomic_load_n(&in->ra, __ATOMIC_ACQUIRE);
    if (ra == NULL)
        return;
    pthread_mutex_lock(&ra->lock);
    ra->len = 0;
    ra->owner = NULL;
    pthread_mutex_unlock(&ra->lock);
    dc_dcache_drop(&ra->dc);
}

static void dc_ra_destroy(dc_ra *ra)
{
    pthread_mutex_destroy(&ra->lock);
    dc_dcache_destroy(&ra->dc);
    free(ra->buf);
    free(ra);
}

void dc_ra_free(dc_inode *in)
{
    dc_ra *ra = __atomic_exchange_n(&in->ra, NULL, __ATOMIC_ACQ_REL);
    if (ra != NULL)
        dc_ra_destroy(ra);
}

/* Serve [off, off+len) (within size) from the window, filling it first when
 * the handle reads sequentially: 1 served, 0 not (read it normally), or an
 * error. ra->lock held. */
static int dc_ra_serve_locked(depfs_fh_t *fh, dc_ra *ra, uint8_t *buf, uint64_t off,
                              uint64_t len, uint64_t size)
{
    dc_inode *in = fh->inode;
    bool mine = ra->owner == fh && ra->len > 0;
    if (mine && off >= ra->off && off + len <= ra->off + ra->len)
        goto hit;
    bool sequential = off == ra->next_off || (mine && off >= ra->off && off <= ra->off + ra->len);
    ra->next_off = off + len;
    if (!sequential)
        return 0;
    uint64_t sb = layout_stripe_bytes(&in->lay);
    uint64_t start = (off / sb) * sb;
    uint64_t end = start + ra->cap < size ? start + ra->cap : size;
    if (off + len > end)
        return 0; /* larger than the window: no gain */
    ra->len = 0;
    if (ra->buf == NULL && (ra->buf = malloc(ra->cap)) == NULL)
        return 0;
    int rc = dc_wb_flush_range(fh->fs, in, start, end - start);
    if (rc == 0)
        rc = dc_read_range(fh->fs, in, ra->buf, start, end - start);
    if (rc < 0)
        return rc;
    ra->owner = fh;
    ra->off = start;
    ra->len = end - start;
hit:
    memcpy(buf, ra->buf + (off - ra->off), len);
    ra->next_off = off + len;
    return 1;
}

static int dc_ra_read(depfs_fh_t *fh, uint8_t *buf, uint64_t off, uint64_t len, uint64_t size)
{
    if (dc_test_hooks_get()->read_ahead_off || (fh->flags & O_DIRECT) ||
        len >= DC_RA_READ_BYTES_MAX)
        return 0;
    dc_ra *ra = dc_ra_get(fh->inode);
    if (ra == NULL)
        return 0;
    pthread_mutex_lock(&ra->lock);
    int rc = dc_ra_serve_locked(fh, ra, buf, off, len, size);
    pthread_mutex_unlock(&ra->lock);
    return rc;
}


int dc_read(depfs_fh_t *fh, uint8_t *buf, uint64_t off, uint64_t len, uint64_t size)
{
    depfs_t *fs = fh->fs;
    dc_inode *in = fh->inode;
    int rc = dc_ra_read(fh, buf, off, len, size);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = dc_wb_flush_range(fs, in, off, len);
    if (rc < 0)
        return rc;
    bool cache = !dc_test_hooks_get()->read_ahead_off && !(fh->flags & O_DIRECT);
    const dc_rctx cx = {.fh = cache ? fh : NULL, .size = size};
    return dc_read_range_cx(fs, in, &cx, buf, off, len);
}
