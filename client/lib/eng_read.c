/* eng_read.c - the read engine (dc_read): striped reads with degraded-mode
 * decoding, the read-ahead window and the degraded stripe cache.
 *
 * Fault-free: per round of stripes, one vectored IO_READ per server naming
 * exactly the data bytes wanted; the reply bulk lands straight in the
 * caller's buffer (resp_iov). No parity is read, nothing is decoded, and
 * the requests say so (data_only): the server then reads none of its
 * parity units ahead either (ioserver/strip_readahead.h).
 * Degraded: stripes whose wanted data sit on a server known down skip that
 * first pass (and ones whose server fails in it are redone): they are read
 * as the same byte range of any k surviving units, under the stripe locks
 * (LOCK+READ; NACKed, they wait at the servers next: dc_io_run_gated) so
 * no concurrent write is half seen, and only their lost
 * wanted data units are decoded. A piece spanning at least half a unit's
 * columns of a stripe with lost data units (touching a lost unit or not)
 * instead decodes the whole stripe, with the next few when the handle reads
 * in order one read at a time, into the inode's degraded stripe cache,
 * which serves the handle's other reads of those stripes (see "degraded
 * stripe cache" below: FUSE requests do not end at stripe edges).
 * Read-ahead: per inode, a window of whole stripes (DC_RA_STRIPES, at most
 * DC_RA_BYTES_MAX) read in one round over all servers when a handle reads
 * sequentially in small reads (< DC_RA_READ_BYTES_MAX), or forward with one
 * stride twice running that leaves DC_RA_STRIDE_READS_MIN reads in a window
 * (an MPI rank's share of an interleaved file); later reads of that handle
 * are served from it. A strided window holds only the rank's own pieces
 * when they are large (DC_RA_GATHER_PIECE_MIN) and the gaps between them
 * at least as large: one round reads the next pieces at their stride and
 * nothing between (other ranks' bytes, which a whole window would fetch
 * for nothing). Small pieces take the whole window, gaps and all, as the
 * kernel's page cache would: a server reads whole checksum blocks anyway,
 * and one extent per piece would cost more than the bytes between. Large
 * reads skip it: through FUSE the kernel already reads ahead in large
 * parallel requests, and a synchronous window serialized them (measured:
 * 305-322 vs 346-395 MB/s for 1 MiB reads). The window
 * belongs to the handle that filled it (a new open never sees it: close-to-
 * open) and is dropped by every write, flush, truncate and close here. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "eng_read.h"
#include "log.h"

/* ------------------------------------------------------- degraded reads */

static void dc_degraded_range(const layout *lay, dc_dstripe *d)
{
    dc_piece_cols(lay, &d->rs->pc, &d->ra, &d->rb);
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
            dc_req_set_lock(&reqs[p], first, count, depfs_client_id(fs), op_id, DC_LOCK_READ);
            reqs[p].lock_attempt = lock_attempt;
        }
    }
    return 0;
}

/* MDS rechecks of this client's failure marks before a read fails. */
#define DC_MARK_RECHECKS 2u

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
    uint32_t failed_here = 0;
    bool rechecked = false;
    for (unsigned attempt = 0;; attempt++) {
        bad = (rechecked ? 0 : bad) | failed_here | dc_down_mask(fs, lay);
        if (dc_popcount32(bad) > lay->n - lay->k && !rechecked) {
            /* some of these may be marks from a failure that is over (the
             * server rejoined meanwhile): ask the MDS before failing. The
             * first answer after a mark only dates the failure; a second
             * one lifts the marks of servers that came back since. */
            rechecked = true;
            for (unsigned i = 0; i < DC_MARK_RECHECKS && dc_popcount32(bad) > lay->n - lay->k; i++) {
                dc_status_recheck_now(fs);
                bad = failed_here | dc_down_mask(fs, lay);
            }
        }
        if (dc_popcount32(bad) > lay->n - lay->k) {
            dc_set_error("read of inode %llu: %u of %u units of a stripe unavailable or damaged (n-k=%u)",
                         (unsigned long long)in->ino, dc_popcount32(bad), lay->n,
                         lay->n - lay->k);
            return -EIO;
        }
        int rc = dc_degraded_build(fs, lay, ds, nd, bad, reqs, dc_next_op_id(fs), nacks);
        if (rc < 0)
            return rc;
        if (nacks > 0) /* NACKed before: wait at the servers, from the gate on */
            dc_io_run_gated(fs, in->ino, lay, bad, reqs);
        else
            dc_io_run(fs, in->ino, reqs, lay->n);
        bool nack = false, failed = false;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!reqs[p].active || reqs[p].result == 0)
                continue;
            if (reqs[p].result == -EAGAIN) {
                nack = true;
            } else {
                failed = true;
                failed_here |= 1u << p;
            }
        }
        /* units read from servers the granted locks' replies call
         * untrusted (a write went around them while they served): decode
         * around them too, as around a failed server */
        uint32_t told = dc_reqs_untrusted(reqs, lay->n), read_from = 0;
        for (unsigned p = 0; p < lay->n; p++)
            if (reqs[p].active && reqs[p].op == DEPFS__IO_OP__IO_READ)
                read_from |= 1u << p;
        if ((told & read_from & ~failed_here) != 0) {
            log_warn("libdepfs: degraded read of inode %llu: units at positions %#x are "
                     "untrusted (dirty records name their servers): reading around them",
                     (unsigned long long)in->ino, told & read_from);
            failed_here |= told;
            failed = true;
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
        /* the first NACK goes straight to waiting at the servers; a fetch
         * that waited there in vain backs off before it waits again */
        if (nacks > 0)
            dc_lock_backoff(nacks - 1);
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
    if (locked)
        dc_test_pause(DC_PAUSE_DEGRADED_LOCKED);
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
 * when the handle reads in order, one read at a time: ds has room for
 * DC_DCACHE_AHEAD more), then the stripes other reads of this handle were
 * filling. */
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
    if (ds[nd - 1].mode == DC_D_FILL) {
        unsigned own = 0;
        for (unsigned i = 0; i < nd; i++)
            own += ds[i].mode == DC_D_FILL;
        nd += dc_dcache_ahead(dc, lay, fh, size, bad, &ds[nd - 1], own, &ds[nd], ahead);
    }
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
            if (!reqs[pos].active) {
                dc_req_init(&reqs[pos], lay, pos, DEPFS__IO_OP__IO_READ);
                reqs[pos].data_only = true;
            }
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

/* Stripes [lo, hi) where a read met damaged units (hi 0: none). */
typedef struct dc_heal_range {
    uint64_t lo, hi;
} dc_heal_range;

static void dc_heal_note(dc_heal_range *h, uint64_t stripe)
{
    if (h->hi == 0 || stripe < h->lo)
        h->lo = stripe;
    if (stripe + 1 > h->hi)
        h->hi = stripe + 1;
}

static int dc_read_round(depfs_t *fs, dc_inode *in, const dc_rctx *cx, dc_rstripe *rs,
                         unsigned nst, dc_req *reqs, dc_dstripe *ds, dc_heal_range *heal)
{
    const layout *lay = &in->lay;
    uint32_t down = dc_down_mask(fs, lay);
    dc_build_reads(lay, rs, nst, down, cx->fh != NULL ? cx->size : 0, reqs);
    dc_io_run(fs, in->ino, reqs, lay->n);
    uint32_t bad = down, damaged = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (reqs[p].active && reqs[p].result != 0) {
            bad |= 1u << p;
            if (dc_unit_damaged(reqs[p].result))
                damaged |= 1u << p;
        }
    for (unsigned i = 0; i < nst && damaged != 0; i++)
        if ((rs[i].used & damaged) != 0)
            dc_heal_note(heal, rs[i].pc.stripe);
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

/* The read returned the right bytes by reading around damaged units; now
 * rebuild them where they lie, so the next read (and the next failure)
 * finds them whole. A failure here only leaves them to the next read or
 * scrub. */
static void dc_read_heal(depfs_t *fs, dc_inode *in, const dc_heal_range *h)
{
    depfs_scrub_report rep;
    int rc = dc_scrub_heal(fs, in->ino, &in->lay, h->lo, h->hi - h->lo, &rep);
    uint64_t bad = rep.units_checksum + rep.units_io_error + rep.units_missing + rep.units_mismatch;
    if (rc < 0)
        log_warn("libdepfs: inode %llu stripes %llu..%llu: repairing the damaged units a read "
                 "met failed: %s (%s)", (unsigned long long)in->ino, (unsigned long long)h->lo,
                 (unsigned long long)(h->hi - 1), strerror(-rc), depfs_last_error());
    else if (bad != 0)
        log_warn("libdepfs: inode %llu stripes %llu..%llu: a read met %llu damaged units; "
                 "%llu rebuilt in place, %llu left", (unsigned long long)in->ino,
                 (unsigned long long)h->lo, (unsigned long long)(h->hi - 1),
                 (unsigned long long)bad, (unsigned long long)rep.units_repaired,
                 (unsigned long long)rep.findings_unrepaired);
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
    dc_heal_range heal = {0};
    for (uint64_t i = 0; i < npieces && rc == 0; i += per_round) {
        unsigned nst = (unsigned)(npieces - i < per_round ? npieces - i : per_round);
        for (unsigned j = 0; j < nst; j++) {
            rs[j].pc = layout_piece(lay, off, len, i + j);
            rs[j].dest = buf + (rs[j].pc.file_off - off);
        }
        rc = dc_read_round(fs, in, cx, rs, nst, reqs, ds, &heal);
    }
    if (rc == 0 && heal.hi != 0)
        dc_read_heal(fs, in, &heal);
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
#define DC_RA_STRIDE_READS_MIN 4u /* a stride this many times in a window, at least */
/* A strided window gathers only the pieces when they are this large and
 * the stride at least twice their length (so it reads at most half). */
#define DC_RA_GATHER_PIECE_MIN DEPFS_READ_GATHER_MIN
#define DC_RA_GATHER_STRIDE_FACTOR 2u

typedef struct dc_ra dc_ra;
static void dc_ra_destroy(dc_ra *ra);
struct dc_ra {
    pthread_mutex_t lock;
    const depfs_fh_t *owner;  /* handle whose reads filled the window */
    uint64_t off, len;        /* cached window [off, off+len); len 0: none */
    uint64_t next_off;        /* where the owner's last read ended */
    uint64_t prev_off;        /* where the last read began */
    uint64_t stride;          /* from the read before it to the last; 0: none forward */
    /* a gathered window (gcount > 0): gcount pieces of glen bytes, piece i
     * at off + i*gstride in the file and at i*glen in buf */
    uint64_t gstride, glen;
    unsigned gcount;
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
    ra->gcount = 0;
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

/* Whether a read at off repeats the last forward stride, one short enough
 * that a window holds DC_RA_STRIDE_READS_MIN such reads; then notes off's. */
static bool dc_ra_strided(dc_ra *ra, uint64_t off)
{
    uint64_t stride = off > ra->prev_off ? off - ra->prev_off : 0;
    bool again = stride != 0 && stride == ra->stride &&
                 stride <= ra->cap / DC_RA_STRIDE_READS_MIN;
    ra->stride = stride;
    ra->prev_off = off;
    return again;
}

/* Where [off, off+len) sits in the window's buf, or NULL when it does not. */
static const uint8_t *dc_ra_find(const dc_ra *ra, uint64_t off, uint64_t len)
{
    if (ra->len == 0 || off < ra->off)
        return NULL;
    if (ra->gcount == 0)
        return off + len <= ra->off + ra->len ? ra->buf + (off - ra->off) : NULL;
    uint64_t i = (off - ra->off) / ra->gstride, within = (off - ra->off) % ra->gstride;
    if (i >= ra->gcount || within + len > ra->glen)
        return NULL;
    return ra->buf + i * ra->glen + within;
}

/* How many pieces of len bytes every stride from off a gathered window
 * takes (0: gather nothing, take the whole window): all in the file, in
 * the buffer, and few enough that no server's request passes its extent
 * limit (each piece adds at most one extent per stripe it touches). */
static unsigned dc_ra_gather_count(const dc_ra *ra, const layout *lay, uint64_t off,
                                   uint64_t len, uint64_t size)
{
    if (len < DC_RA_GATHER_PIECE_MIN || ra->stride < (uint64_t)DC_RA_GATHER_STRIDE_FACTOR * len)
        return 0;
    uint64_t per_piece = len / layout_stripe_bytes(lay) + 2; /* stripes one piece may touch */
    uint64_t n = ra->cap / len;
    if (n > DC_REQ_MAX_EXTENTS / per_piece)
        n = DC_REQ_MAX_EXTENTS / per_piece;
    while (n > 0 && off + (n - 1) * ra->stride + len > size)
        n--;
    return n < DC_RA_STRIDE_READS_MIN ? 0 : (unsigned)n;
}

/* The gathered window: count pieces of len bytes every stride from off
 * into buf, one round over the servers, only when it is all fault-free (1);
 * 0 when a server is down or a request failed (the caller reads the whole
 * window, through the reads that decode around failures and heal damage). */
static int dc_read_gathered(depfs_t *fs, dc_inode *in, uint8_t *buf, uint64_t off,
                            uint64_t stride, uint64_t len, unsigned count)
{
    const layout *lay = &in->lay;
    if (dc_down_mask(fs, lay) != 0)
        return 0;
    uint64_t per_piece = layout_piece_count(lay, off, len) + 1;
    dc_rstripe *rs = calloc(count * per_piece, sizeof *rs);
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    int rc = 1;
    if (rs == NULL || reqs == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    unsigned nst = 0;
    for (unsigned i = 0; i < count; i++) {
        uint64_t at = off + i * stride;
        uint64_t np = layout_piece_count(lay, at, len);
        assert(np <= per_piece);
        for (uint64_t j = 0; j < np; j++) {
            rs[nst].pc = layout_piece(lay, at, len, j);
            rs[nst].dest = buf + (uint64_t)i * len + (rs[nst].pc.file_off - at);
            nst++;
        }
    }
    dc_build_reads(lay, rs, nst, 0, 0, reqs);
    dc_io_run(fs, in->ino, reqs, lay->n);
    for (unsigned p = 0; p < lay->n && rc == 1; p++)
        if (reqs[p].active && reqs[p].result != 0)
            rc = 0;
out:
    free(reqs);
    free(rs);
    return rc;
}

/* Fills the window from off: the pieces alone when the handle reads
 * strided and gathering pays, else the whole stripes [start, end). 0 or an
 * error. */
static int dc_ra_fill(depfs_fh_t *fh, dc_ra *ra, bool strided, uint64_t off, uint64_t len,
                      uint64_t start, uint64_t end, uint64_t size)
{
    dc_inode *in = fh->inode;
    unsigned n = strided ? dc_ra_gather_count(ra, &in->lay, off, len, size) : 0;
    if (n > 0) {
        uint64_t span = (n - 1) * ra->stride + len;
        int rc = dc_wb_flush_range(fh->fs, in, off, span);
        if (rc == 0)
            rc = dc_read_gathered(fh->fs, in, ra->buf, off, ra->stride, len, n);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            ra->off = off;
            ra->len = span;
            ra->gstride = ra->stride;
            ra->glen = len;
            ra->gcount = n;
            return 0;
        }
    }
    int rc = dc_wb_flush_range(fh->fs, in, start, end - start);
    if (rc == 0)
        rc = dc_read_range(fh->fs, in, ra->buf, start, end - start);
    if (rc < 0)
        return rc;
    ra->off = start;
    ra->len = end - start;
    return 0;
}

/* Serve [off, off+len) (within size) from the window, filling it first when
 * the handle reads sequentially or strided: 1 served, 0 not (read it
 * normally), or an error. ra->lock held. */
static int dc_ra_serve_locked(depfs_fh_t *fh, dc_ra *ra, uint8_t *buf, uint64_t off,
                              uint64_t len, uint64_t size)
{
    dc_inode *in = fh->inode;
    bool mine = ra->owner == fh && ra->len > 0;
    bool strided = dc_ra_strided(ra, off);
    const uint8_t *from = mine ? dc_ra_find(ra, off, len) : NULL;
    if (from != NULL)
        goto hit;
    bool sequential = off == ra->next_off || strided ||
                      (mine && off >= ra->off && off <= ra->off + ra->len);
    ra->next_off = off + len;
    if (!sequential)
        return 0;
    uint64_t sb = layout_stripe_bytes(&in->lay);
    uint64_t start = (off / sb) * sb;
    uint64_t end = start + ra->cap < size ? start + ra->cap : size;
    if (off + len > end)
        return 0; /* larger than the window: no gain */
    ra->len = 0;
    ra->gcount = 0;
    if (ra->buf == NULL && (ra->buf = malloc(ra->cap)) == NULL)
        return 0;
    int rc = dc_ra_fill(fh, ra, strided, off, len, start, end, size);
    if (rc < 0)
        return rc;
    ra->owner = fh;
    from = dc_ra_find(ra, off, len);
    assert(from != NULL);
hit:
    memcpy(buf, from, len);
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
