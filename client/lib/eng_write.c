/* eng_write.c - the stripe-lock write protocol (dc_write_range, dc_write_extents).
 *
 * A write (one range, or the sorted extents of a write-behind flush) is cut
 * into stripe pieces and processed in rounds of a bounded number of pieces
 * on distinct stripes; a round locks [its first stripe, its last stripe]
 * on each server. Per round:
 *   plan     per partial stripe pick read-modify-write by delta (RMW),
 *            reconstruct-write (RECON) or, when a data unit's server is
 *            down, decode-write (DECODE); full stripes need no pre-read.
 *   phase 1  to every server that is written, holds parity or is pre-read:
 *            one IO_READ carrying the lock (LOCK+READ) or an IO_LOCK.
 *            Any NACK: release what was granted, retry waiting at the
 *            servers for the stripes (dc_io_run_gated); NACKed again
 *            (the wait ran out): randomized growing back-off first. A
 *            server failing: release, re-plan. A unit
 *            failing its checksums (or lost): release, rebuild the damaged
 *            units of the round's stripes (dc_scrub_heal), retry. A unit
 *            pre-read from a server the lock replies call untrusted
 *            (recovery/README.md "Trusted units"): release, re-plan
 *            decoding around it, retry.
 *   compute  new parity: delta update, or encode afresh.
 *   phase 2  IO_WRITE + unlock to every written server (IO_UNLOCK to the
 *            ones only read), down servers listed for dirty records.
 * Pieces of one stripe from different extents (a write-behind flush of
 * small writes interleaved with another client's) go as ONE piece over
 * their span while the gaps between them cost less than rounds of their
 * own (dc_merges): the gaps are pre-read under the lock with the rest and
 * written back unchanged, so such pieces cost one round, not one each.
 * Farther pieces of a stripe go in later rounds, each moving only its own
 * bytes.
 * An uncontended partial-stripe write is two round trips. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "engines.h"
#include "log.h"

/* Repairs of damaged units one write round may start before it gives up
 * (a unit damaged again right after its repair is a failing disk). */
#define DC_WRITE_HEALS_MAX 2u

typedef enum { DC_W_FULL, DC_W_RMW, DC_W_RECON, DC_W_DECODE } dc_wmethod;

/* Bytes of a merged piece that are not new: [off, off+len) of the stripe's
 * k*su data bytes. */
typedef struct dc_wgap {
    uint32_t off, len;
} dc_wgap;

typedef struct dc_wstripe {
    stripe_piece pc;
    const uint8_t *src;               /* the piece's new bytes: src[0] = file byte pc.file_off */
    uint8_t *merged;                  /* a merged piece: src, its gaps filled after phase 1 */
    dc_wgap *gaps;                    /* ascending, inside the piece (malloc'd with merged) */
    unsigned n_gaps;
    dc_wmethod method;
    uint32_t ra, rb;                  /* byte range inside each unit parity covers */
    uint32_t ua[LAYOUT_MAX_N], ub[LAYOUT_MAX_N]; /* new bytes of data unit u (ua == ub: none) */
    uint8_t *unit[LAYOUT_MAX_N];      /* n buffers over [ra, rb) (FULL: data -> user buffer) */
    uint8_t *old[LAYOUT_MAX_N];       /* RMW: old bytes of data unit u over [ua, ub) */
    bool present[LAYOUT_MAX_N];       /* DECODE: units pre-read */
} dc_wstripe;

typedef struct dc_wround {
    depfs_t *fs;
    dc_inode *in;
    const layout *lay;
    const codec *cd;
    unsigned nst;                     /* pieces in this round, ascending distinct stripes */
    dc_wstripe *st;
    uint8_t *arena;
    uint32_t down;                    /* positions written around when planned */
    uint32_t around_up;               /* of those, servers the cluster still calls UP */
    uint32_t untrusted;               /* positions the lock replies call untrusted */
    uint32_t noread;                  /* positions not read from (down, refusing reads,
                                       * or untrusted): still written */
    uint32_t lockset;                 /* positions locked (written or pre-read) */
    uint32_t writeset;                /* positions written in phase 2 */
    bool sync;
    bool force_recon;                 /* redo after a lost lock: encode afresh */
    bool no_locks;                    /* TEST ONLY (DEPFS_TEST_NO_LOCKS): no lock at all */
    unsigned lock_attempt;            /* 0 first try, n the n-th retry after a NACK */
    uint64_t owner_op;
} dc_wround;

static uint8_t *dc_new_ptr(const dc_wround *w, const dc_wstripe *ws, unsigned u, uint32_t x)
{
    uint64_t file_byte = ws->pc.stripe * layout_stripe_bytes(w->lay) + (uint64_t)u * w->lay->su + x;
    assert(file_byte >= ws->pc.file_off && file_byte < ws->pc.file_off + ws->pc.len);
    return (uint8_t *)(ws->src + (file_byte - ws->pc.file_off));
}

static bool dc_unit_down(const dc_wround *w, uint64_t stripe, unsigned u)
{
    return (w->down >> layout_unit_pos(w->lay, stripe, u)) & 1u;
}

/* Not to be read from: down, it said it serves no reads (REBUILDING), or
 * the others hold dirty records naming it (its units of the file may be
 * stale while it serves) - such a server is still written. */
static bool dc_unit_noread(const dc_wround *w, uint64_t stripe, unsigned u)
{
    return (w->noread >> layout_unit_pos(w->lay, stripe, u)) & 1u;
}

/* ------------------------------------------------------------------ plan */

static void dc_plan_ranges(const dc_wround *w, dc_wstripe *ws)
{
    const layout *lay = w->lay;
    uint64_t a = ws->pc.off_in_stripe, b = a + ws->pc.len;
    ws->ra = lay->su;
    ws->rb = 0;
    for (unsigned u = 0; u < lay->k; u++) {
        uint64_t lo = (uint64_t)u * lay->su, hi = lo + lay->su;
        uint64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
        if (s >= e) {
            ws->ua[u] = ws->ub[u] = 0;
            continue;
        }
        ws->ua[u] = (uint32_t)(s - lo);
        ws->ub[u] = (uint32_t)(e - lo);
        if (ws->ua[u] < ws->ra)
            ws->ra = ws->ua[u];
        if (ws->ub[u] > ws->rb)
            ws->rb = ws->ub[u];
    }
    assert(ws->ra < ws->rb && ws->rb <= lay->su);
}

static void dc_plan_method(const dc_wround *w, dc_wstripe *ws)
{
    const layout *lay = w->lay;
    if (ws->pc.full) {
        ws->method = DC_W_FULL;
        ws->ra = 0;
        ws->rb = lay->su;
        return;
    }
    uint64_t r = ws->rb - ws->ra, touched = 0;
    bool data_down = false, parity_unreadable = false;
    unsigned parity_alive = 0;
    for (unsigned u = 0; u < lay->k; u++) {
        touched += ws->ub[u] - ws->ua[u];
        data_down = data_down || dc_unit_noread(w, ws->pc.stripe, u);
    }
    for (unsigned u = lay->k; u < lay->n; u++) {
        parity_alive += !dc_unit_down(w, ws->pc.stripe, u);
        /* written but not readable: read-modify-write cannot update it */
        parity_unreadable = parity_unreadable || (dc_unit_noread(w, ws->pc.stripe, u) &&
                                                  !dc_unit_down(w, ws->pc.stripe, u));
    }
    if (data_down) {
        ws->method = DC_W_DECODE;
        return;
    }
    uint64_t rmw_cost = touched + parity_alive * r;
    uint64_t recon_cost = lay->k * r - touched;
    ws->method = rmw_cost < recon_cost && !w->force_recon && !parity_unreadable ? DC_W_RMW
                                                                                : DC_W_RECON;
}

static uint64_t dc_stripe_buf_bytes(const dc_wround *w, const dc_wstripe *ws)
{
    const layout *lay = w->lay;
    uint64_t r = ws->rb - ws->ra;
    switch (ws->method) {
    case DC_W_FULL:
        return (uint64_t)(lay->n - lay->k) * lay->su;
    case DC_W_RMW: {
        uint64_t touched = 0;
        for (unsigned u = 0; u < lay->k; u++)
            touched += ws->ub[u] - ws->ua[u];
        return (uint64_t)(lay->n - lay->k) * r + touched;
    }
    default:
        return (uint64_t)lay->n * r;
    }
}

static void dc_assign_buffers(dc_wround *w, dc_wstripe *ws, uint8_t **cursor)
{
    const layout *lay = w->lay;
    uint64_t r = ws->rb - ws->ra;
    memset(ws->unit, 0, sizeof ws->unit);
    memset(ws->old, 0, sizeof ws->old);
    if (ws->method == DC_W_FULL) {
        for (unsigned u = 0; u < lay->k; u++)
            ws->unit[u] = dc_new_ptr(w, ws, u, 0);
    } else if (ws->method != DC_W_RMW) {
        for (unsigned u = 0; u < lay->k; u++) {
            ws->unit[u] = *cursor;
            *cursor += r;
        }
    }
    for (unsigned u = lay->k; u < lay->n; u++) {
        ws->unit[u] = *cursor;
        *cursor += ws->method == DC_W_FULL ? lay->su : r;
        /* parity of a down server is computed but never sent: keep it defined */
        if (ws->method == DC_W_RMW && dc_unit_down(w, ws->pc.stripe, u))
            memset(ws->unit[u], 0, r);
    }
    if (ws->method == DC_W_RMW) {
        for (unsigned u = 0; u < lay->k; u++) {
            if (ws->ub[u] == ws->ua[u])
                continue;
            ws->old[u] = *cursor;
            *cursor += ws->ub[u] - ws->ua[u];
        }
    }
}

/* Plan every piece of the round (pc and src set by the caller) with the
 * current down mask; allocates. */
static int dc_plan_round(dc_wround *w)
{
    const layout *lay = w->lay;
    w->down = dc_write_down_mask(w->fs, lay, &w->around_up);
    w->noread = w->down | dc_down_mask(w->fs, lay) | w->untrusted;
    if (dc_popcount32(w->noread) > lay->n - lay->k) {
        dc_set_error("write of inode %llu: %u of %u servers down or untrusted, more than n-k=%u",
                     (unsigned long long)w->in->ino, dc_popcount32(w->noread), lay->n,
                     lay->n - lay->k);
        return -EIO;
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < w->nst; i++) {
        dc_wstripe *ws = &w->st[i];
        assert(i == 0 || ws->pc.stripe > w->st[i - 1].pc.stripe);
        dc_plan_ranges(w, ws);
        dc_plan_method(w, ws);
        total += dc_stripe_buf_bytes(w, ws);
    }
    free(w->arena);
    w->arena = malloc(total ? total : 1);
    if (w->arena == NULL)
        return -ENOMEM;
    uint8_t *cursor = w->arena;
    for (unsigned i = 0; i < w->nst; i++)
        dc_assign_buffers(w, &w->st[i], &cursor);
    assert((uint64_t)(cursor - w->arena) == total);
    return 0;
}

/* ------------------------------------------------------------- phase 1 */

static int dc_add(dc_req *reqs, const dc_wround *w, uint64_t stripe, unsigned u, uint16_t op,
                  uint32_t a, uint32_t len, void *mem)
{
    unsigned pos = layout_unit_pos(w->lay, stripe, u);
    dc_req *r = &reqs[pos];
    assert(!((w->down >> pos) & 1u));
    assert(a + len <= w->lay->su);
    if (!r->active)
        dc_req_init(r, w->lay, pos, op);
    assert(r->op == op);
    int rc = dc_req_add(r, layout_local_offset(w->lay, stripe) + a, len, mem);
    assert(rc == 0); /* rounds are sized so requests never overflow */
    return rc;
}

static void dc_preread_stripe(dc_wround *w, dc_wstripe *ws, dc_req *reqs)
{
    const layout *lay = w->lay;
    uint64_t s = ws->pc.stripe;
    uint16_t op = DEPFS__IO_OP__IO_READ;
    uint32_t ra = ws->ra, rb = ws->rb;
    if (ws->method == DC_W_RMW) {
        for (unsigned u = 0; u < lay->k; u++)
            if (ws->ub[u] > ws->ua[u])
                dc_add(reqs, w, s, u, op, ws->ua[u], ws->ub[u] - ws->ua[u], ws->old[u]);
        for (unsigned u = lay->k; u < lay->n; u++)
            if (!dc_unit_noread(w, s, u))
                dc_add(reqs, w, s, u, op, ra, rb - ra, ws->unit[u]);
    } else if (ws->method == DC_W_RECON) {
        for (unsigned u = 0; u < lay->k; u++) {
            if (ws->ub[u] == ws->ua[u] || ws->n_gaps > 0) { /* gaps: the unit whole */
                dc_add(reqs, w, s, u, op, ra, rb - ra, ws->unit[u]);
                continue;
            }
            if (ws->ua[u] > ra)
                dc_add(reqs, w, s, u, op, ra, ws->ua[u] - ra, ws->unit[u]);
            if (ws->ub[u] < rb)
                dc_add(reqs, w, s, u, op, ws->ub[u], rb - ws->ub[u], ws->unit[u] + (ws->ub[u] - ra));
        }
    } else if (ws->method == DC_W_DECODE) {
        unsigned got = 0;
        memset(ws->present, 0, sizeof ws->present);
        for (unsigned u = 0; u < lay->n && got < lay->k; u++) {
            if (dc_unit_noread(w, s, u))
                continue;
            dc_add(reqs, w, s, u, op, ra, rb - ra, ws->unit[u]);
            ws->present[u] = true;
            got++;
        }
        assert(got == lay->k); /* the plan checked at most n-k are unreadable */
    }
}

/* Positions written in phase 2, from the plan. */
static uint32_t dc_write_positions(const dc_wround *w)
{
    const layout *lay = w->lay;
    uint32_t m = 0;
    for (unsigned i = 0; i < w->nst; i++) {
        const dc_wstripe *ws = &w->st[i];
        for (unsigned u = 0; u < lay->n; u++) {
            bool written = ws->method == DC_W_FULL || u >= lay->k || ws->ub[u] > ws->ua[u];
            if (written)
                m |= 1u << layout_unit_pos(lay, ws->pc.stripe, u);
        }
    }
    return m & ~w->down;
}

static uint64_t dc_round_first_stripe(const dc_wround *w) { return w->st[0].pc.stripe; }
static uint64_t dc_round_stripe_count(const dc_wround *w)
{
    return w->st[w->nst - 1].pc.stripe - w->st[0].pc.stripe + 1;
}

/* Positions only pre-read (reconstruct-write's untouched data units) are
 * locked to read: a writer vanishing leaves nothing in doubt there. */
static dc_lock_mode dc_lock_mode_at(const dc_wround *w, unsigned pos)
{
    return (w->writeset >> pos) & 1u ? DC_LOCK_WRITE : DC_LOCK_READ;
}

/* Whether the round's lock requests wait at the servers (dc_io_run_gated):
 * once NACKed. A first try does not: uncontended, its locks cost one round
 * trip to all servers at once, where waiting costs two in a row. */
static bool dc_round_waits(const dc_wround *w)
{
    return w->lock_attempt > 0;
}

static void dc_build_phase1(dc_wround *w, dc_req *reqs)
{
    const layout *lay = w->lay;
    memset(reqs, 0, sizeof(dc_req) * lay->n);
    for (unsigned i = 0; i < w->nst; i++)
        if (w->st[i].method != DC_W_FULL)
            dc_preread_stripe(w, &w->st[i], reqs);
    w->writeset = dc_write_positions(w);
    w->lockset = w->writeset;
    for (unsigned p = 0; p < lay->n; p++)
        if (reqs[p].active)
            w->lockset |= 1u << p;
    w->owner_op = dc_next_op_id(w->fs);
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req *r = &reqs[p];
        if (!((w->lockset >> p) & 1u))
            continue;
        if (w->no_locks)
            continue; /* TEST ONLY: plain pre-reads, no lock messages */
        if (w->fs->ignore_locks) {
            r->ignore_locks = r->active;
            continue; /* recovery: pre-reads only, no lock messages */
        }
        if (!r->active)
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_LOCK);
        dc_req_set_lock(r, dc_round_first_stripe(w), dc_round_stripe_count(w),
                        depfs_client_id(w->fs), w->owner_op, dc_lock_mode_at(w, p));
        r->lock_attempt = w->lock_attempt;
    }
}

/* A pre-read met damaged units (a block failing its checksum, a strip
 * file lost): with the round's locks given back, rebuild the damaged units
 * of its stripes from the others (the self-healing read's repair, under
 * its own locks), so the retried pre-read reads right bytes and the new
 * parity is computed from them. 0 when the repair found nothing it could
 * not rebuild; else the write fails, as the unit's old bytes are gone. */
static int dc_phase1_heal(dc_wround *w)
{
    uint64_t first = dc_round_first_stripe(w), count = dc_round_stripe_count(w);
    depfs_scrub_report rep;
    int rc = dc_scrub_heal(w->fs, w->in->ino, w->lay, first, count, &rep);
    log_warn("libdepfs: write of inode %llu: its pre-read of stripes %llu..%llu met damaged "
             "units: %llu rebuilt, %llu left%s%s", (unsigned long long)w->in->ino,
             (unsigned long long)first, (unsigned long long)(first + count - 1),
             (unsigned long long)rep.units_repaired, (unsigned long long)rep.findings_unrepaired,
             rc < 0 ? ": " : "", rc < 0 ? strerror(-rc) : "");
    if (rc == 0 && rep.findings_unrepaired != 0)
        rc = -EIO;
    if (rc < 0)
        dc_set_error("write of inode %llu: stripes %llu..%llu hold damaged units that could not "
                     "be rebuilt before the write (%s)", (unsigned long long)w->in->ino,
                     (unsigned long long)first, (unsigned long long)(first + count - 1),
                     strerror(-rc));
    return rc;
}

/* Phase 1 with retries: 0 once every lock is held and pre-read done. */
static int dc_phase1(dc_wround *w, dc_req *reqs)
{
    const layout *lay = w->lay;
    unsigned restarts = 0, heals = 0;
    w->lock_attempt = 0;
    for (unsigned attempt = 0;; attempt++) {
        dc_build_phase1(w, reqs);
        if (dc_round_waits(w)) {
            dc_io_run_gated(w->fs, w->in->ino, lay, w->down, reqs);
            for (unsigned p = 0; p < lay->n; p++) /* the gate: phase 2 unlocks it */
                if (reqs[p].active && reqs[p].has_lock)
                    w->lockset |= 1u << p;
        } else {
            dc_io_run(w->fs, w->in->ino, reqs, lay->n);
        }
        bool nack = false, down = false, damaged = false;
        int err = 0;
        uint32_t told = dc_reqs_untrusted(reqs, lay->n), read_from = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            if (!reqs[p].active)
                continue;
            if (reqs[p].op == DEPFS__IO_OP__IO_READ)
                read_from |= 1u << p;
            if (reqs[p].result == -EAGAIN || reqs[p].result == -ENOLCK)
                nack = true; /* busy stripes, or a full lock table: back off */
            else if (reqs[p].result == DC_ERR_DOWN)
                down = true;
            else if (reqs[p].result == -EIO && reqs[p].has_lock) {
                /* it could not store the lock's intent (its state store
                 * fails): nothing was granted; write around it like a
                 * failed server (its dirty records get it rebuilt) */
                dc_server_mark_failed(w->fs, reqs[p].server_id, -EIO);
                down = true;
            }
            else if (reqs[p].result == -EBADMSG || reqs[p].result == -ENODATA)
                damaged = true; /* the server is fine, a unit it holds is not */
            else if (reqs[p].result < 0 && err == 0)
                err = reqs[p].result;
        }
        bool distrusted = (told & read_from) != 0; /* pre-read units that may be stale */
        if (!nack && !down && !damaged && err == 0 && !distrusted)
            return 0;
        dc_io_unlock_granted(w->fs, w->in->ino, reqs, lay->n);
        if (err == 0 && distrusted) {
            /* a write went around these servers while the cluster had them
             * up (recovery/README.md "Trusted units"): decode their units
             * from the others instead, until their rejoin rebuilt the file
             * (servers that are down are named too: never read anyway) */
            w->untrusted |= told;
            log_warn("libdepfs: write of inode %llu: units at positions %#x are untrusted "
                     "(dirty records name their servers): decoding around them",
                     (unsigned long long)w->in->ino, told & read_from);
            int rc = dc_plan_round(w);
            if (rc < 0)
                return rc;
            if (!nack && !down && !damaged)
                continue;
        }
        if (err == 0 && damaged && !nack && !down) {
            if (++heals > DC_WRITE_HEALS_MAX) {
                dc_set_error("write of inode %llu: its pre-read met damaged units again after "
                             "%u repairs", (unsigned long long)w->in->ino, DC_WRITE_HEALS_MAX);
                return -EIO;
            }
            int rc = dc_phase1_heal(w);
            if (rc < 0)
                return rc;
            continue;
        }
        if (err != 0) {
            dc_set_error("write of inode %llu: pre-read/lock failed: %s",
                         (unsigned long long)w->in->ino, strerror(-err));
            return err;
        }
        if (down) {
            if (++restarts > DC_FAILOVER_RESTARTS_MAX)
                return -EIO;
            int rc = dc_plan_round(w);
            if (rc < 0)
                return rc;
            continue;
        }
        if (attempt + 1 >= DC_LOCK_ATTEMPTS_MAX) {
            dc_set_error("write of inode %llu: stripes %llu..%llu stayed locked by another "
                         "writer after %u attempts",
                         (unsigned long long)w->in->ino,
                         (unsigned long long)dc_round_first_stripe(w),
                         (unsigned long long)(dc_round_first_stripe(w) +
                                              dc_round_stripe_count(w) - 1),
                         DC_LOCK_ATTEMPTS_MAX);
            return -EBUSY;
        }
        /* the first NACK goes straight to waiting at the servers; a round
         * that waited there in vain backs off before it waits again */
        if (w->lock_attempt > 0)
            dc_lock_backoff(w->lock_attempt - 1);
        w->lock_attempt++;
    }
}

/* ------------------------------------------------------------- compute */

static void dc_xor(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= len; i += sizeof(uint64_t)) {
        uint64_t a, b;
        memcpy(&a, dst + i, sizeof a);
        memcpy(&b, src + i, sizeof b);
        a ^= b;
        memcpy(dst + i, &a, sizeof a);
    }
    for (; i < len; i++)
        dst[i] ^= src[i];
}

static void dc_overlay_new(const dc_wround *w, dc_wstripe *ws)
{
    for (unsigned u = 0; u < w->lay->k; u++)
        if (ws->ub[u] > ws->ua[u])
            memcpy(ws->unit[u] + (ws->ua[u] - ws->ra), dc_new_ptr(w, ws, u, ws->ua[u]),
                   ws->ub[u] - ws->ua[u]);
}

/* A merged piece's gaps get the bytes phase 1 read there under the lock
 * (RMW: the old bytes of each touched unit; otherwise the unit read or
 * decoded whole over [ra, rb)), so phase 2 writes them back unchanged. */
static void dc_fill_gaps(const dc_wround *w, dc_wstripe *ws)
{
    const layout *lay = w->lay;
    for (unsigned g = 0; g < ws->n_gaps; g++) {
        uint64_t a = ws->gaps[g].off, b = a + ws->gaps[g].len;
        for (unsigned u = 0; u < lay->k; u++) {
            uint64_t lo = (uint64_t)u * lay->su, hi = lo + lay->su;
            uint64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
            if (s >= e)
                continue;
            uint32_t x = (uint32_t)(s - lo);
            assert(x >= ws->ua[u] && x + (e - s) <= ws->ub[u]);
            const uint8_t *cur = ws->method == DC_W_RMW ? ws->old[u] + (x - ws->ua[u])
                                                        : ws->unit[u] + (x - ws->ra);
            memcpy(dc_new_ptr(w, ws, u, x), cur, e - s);
        }
    }
}

static int dc_compute_stripe(const dc_wround *w, dc_wstripe *ws)
{
    const layout *lay = w->lay;
    unsigned k = lay->k, m = lay->n - lay->k;
    size_t r = ws->rb - ws->ra;
    assert(ws->n_gaps == 0 || ws->method != DC_W_FULL);
    if (ws->method != DC_W_DECODE)
        dc_fill_gaps(w, ws); /* DECODE: once the lost unit is decoded */
    switch (ws->method) {
    case DC_W_FULL:
        codec_encode(w->cd, lay->su, ws->unit, ws->unit + k);
        return 0;
    case DC_W_RMW:
        for (unsigned u = 0; u < k; u++) {
            if (ws->ub[u] == ws->ua[u])
                continue;
            uint8_t *par[LAYOUT_MAX_N];
            for (unsigned p = 0; p < m; p++)
                par[p] = ws->unit[k + p] + (ws->ua[u] - ws->ra);
            dc_xor(ws->old[u], dc_new_ptr(w, ws, u, ws->ua[u]), ws->ub[u] - ws->ua[u]);
            codec_update(w->cd, ws->ub[u] - ws->ua[u], u, ws->old[u], par);
        }
        return 0;
    case DC_W_DECODE: {
        int rc = codec_decode(w->cd, r, ws->unit, ws->present);
        if (rc < 0)
            return rc;
        dc_fill_gaps(w, ws);
    }
        /* fall through */
    case DC_W_RECON:
        dc_overlay_new(w, ws);
        codec_encode(w->cd, r, ws->unit, ws->unit + k);
        return 0;
    }
    return -EINVAL;
}

/* ------------------------------------------------------------- phase 2 */

static void dc_build_phase2(dc_wround *w, dc_req *reqs)
{
    const layout *lay = w->lay;
    uint16_t op = DEPFS__IO_OP__IO_WRITE;
    memset(reqs, 0, sizeof(dc_req) * lay->n);
    for (unsigned i = 0; i < w->nst; i++) {
        dc_wstripe *ws = &w->st[i];
        uint64_t s = ws->pc.stripe;
        for (unsigned u = 0; u < lay->n; u++) {
            if (dc_unit_down(w, s, u))
                continue;
            if (ws->method == DC_W_FULL)
                dc_add(reqs, w, s, u, op, 0, lay->su, ws->unit[u]);
            else if (u >= lay->k)
                dc_add(reqs, w, s, u, op, ws->ra, ws->rb - ws->ra, ws->unit[u]);
            else if (ws->ub[u] > ws->ua[u])
                dc_add(reqs, w, s, u, op, ws->ua[u], ws->ub[u] - ws->ua[u],
                       dc_new_ptr(w, ws, u, ws->ua[u]));
        }
    }
    for (unsigned p = 0; p < lay->n; p++) {
        dc_req *r = &reqs[p];
        if (!((w->lockset >> p) & 1u))
            continue;
        assert(r->active == (((w->writeset >> p) & 1u) != 0));
        if (!r->active && (w->fs->ignore_locks || w->no_locks))
            continue;
        if (!r->active)
            dc_req_init(r, lay, p, DEPFS__IO_OP__IO_UNLOCK);
        if (w->fs->ignore_locks) {
            r->ignore_locks = true;
        } else if (!w->no_locks) {
            dc_req_set_lock(r, dc_round_first_stripe(w), dc_round_stripe_count(w),
                            depfs_client_id(w->fs), w->owner_op, dc_lock_mode_at(w, p));
            r->unlock = true;
        }
        r->sync = w->sync;
        for (unsigned q = 0; q < lay->n; q++)
            if ((w->down >> q) & 1u)
                r->down[r->n_down++] = lay->servers[q];
    }
}

/* Survivors record dirty records for servers that failed during phase 2
 * (and for the ones the round already wrote around): the write is
 * acknowledged only once they hold them. */
static int dc_notify_dirty(dc_wround *w, uint32_t *failed)
{
    uint32_t down = *failed | w->down;
    int rc = dc_record_down(w->fs, w->in->ino, w->lay, &down);
    *failed |= down & ~w->down;
    return rc;
}

/* 0, -EAGAIN when a server no longer knew our lock (the recovery module
 * took it as an orphan: the round must be redone), or an error. */
/* Send phase 2. Normally all servers in parallel; under the TEST ONLY
 * DEPFS_TEST_PAUSE=between_writes the first server alone, then the pause,
 * then the rest (a writer dying with its stripes half written). */
static void dc_phase2_send(dc_wround *w, dc_req *reqs)
{
    const layout *lay = w->lay;
    if (dc_test_hooks_get()->pause != DC_PAUSE_BETWEEN_WRITES) {
        dc_io_run(w->fs, w->in->ino, reqs, lay->n);
        return;
    }
    unsigned first = 0;
    while (first < lay->n && !reqs[first].active)
        first++;
    assert(first < lay->n);
    bool rest[LAYOUT_MAX_N] = {0};
    for (unsigned p = first + 1; p < lay->n; p++) {
        rest[p] = reqs[p].active;
        reqs[p].active = false;
    }
    dc_io_run(w->fs, w->in->ino, reqs, lay->n);
    dc_test_pause(DC_PAUSE_BETWEEN_WRITES);
    reqs[first].active = false;
    for (unsigned p = first + 1; p < lay->n; p++)
        reqs[p].active = rest[p];
    dc_io_run(w->fs, w->in->ino, reqs, lay->n);
    reqs[first].active = true;
}

/* Positions whose phase-2 result is r. */
static uint32_t dc_results_of(const dc_wround *w, const dc_req *reqs, int r)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < w->lay->n; p++)
        if (reqs[p].active && reqs[p].result == r)
            m |= 1u << p;
    return m;
}

/* A server the round was planned without came back while the write was on
 * its way: servers that already knew refused it (DC_ERR_STALE_PLAN, our
 * lock still held there), the others stored it. Redoing the round from
 * here would read torn stripes (part new, part old units), and releasing
 * them would let a rebuild or a decoding writer read them; so the write
 * is finished as planned where it was refused, still naming the servers
 * it was planned without: their units of these stripes were not written,
 * and every server that stores the round records them dirty, so a rejoin
 * (or, if it is back already, depfs-recovery's check of servers that are
 * up with dirty records) rebuilds them once we release the stripes. */
static void dc_phase2_finish_stale(dc_wround *w, dc_req *reqs, uint32_t stale)
{
    const layout *lay = w->lay;
    bool active[LAYOUT_MAX_N];
    for (unsigned p = 0; p < lay->n; p++)
        active[p] = reqs[p].active;
    for (unsigned attempt = 0; stale != 0 && attempt < DC_FAILOVER_RESTARTS_MAX; attempt++) {
        for (unsigned p = 0; p < lay->n; p++) {
            reqs[p].active = (stale >> p) & 1u;
            reqs[p].keep_down = reqs[p].active;
        }
        dc_io_run(w->fs, w->in->ino, reqs, lay->n);
        stale = dc_results_of(w, reqs, DC_ERR_STALE_PLAN);
    }
    for (unsigned p = 0; p < lay->n; p++) {
        reqs[p].active = active[p];
        reqs[p].keep_down = false;
    }
}

static int dc_phase2(dc_wround *w, dc_req *reqs)
{
    const layout *lay = w->lay;
    dc_build_phase2(w, reqs);
    dc_phase2_send(w, reqs);
    uint32_t stale = dc_results_of(w, reqs, DC_ERR_STALE_PLAN);
    bool torn = false; /* stale positions left beside stored ones: keep them locked */
    bool finished_stale = false;
    if (stale != 0 && dc_results_of(w, reqs, 0) != 0) {
        finished_stale = true;
        log_warn("libdepfs: write of inode %llu: the cluster changed during the write; "
                 "finishing it where it was refused", (unsigned long long)w->in->ino);
        dc_phase2_finish_stale(w, reqs, stale);
        torn = dc_results_of(w, reqs, DC_ERR_STALE_PLAN) != 0;
    }
    uint32_t failed = 0;
    int err = 0;
    bool lost_lock = false;
    uint32_t unstored = 0; /* refused after storing part of the unit, maybe */
    for (unsigned p = 0; p < lay->n; p++) {
        if (!reqs[p].active)
            continue;
        if (reqs[p].result == DC_ERR_DOWN)
            failed |= 1u << p;
        else if ((reqs[p].result == -EPERM || reqs[p].result == DC_ERR_STALE_PLAN) &&
                 reqs[p].has_lock)
            lost_lock = true;
        else if (reqs[p].result < 0 && !dc_write_not_applied(reqs[p].result))
            unstored |= 1u << p;
        else if (reqs[p].result < 0 && err == 0)
            err = reqs[p].result;
    }
    for (unsigned p = 0; p < lay->n; p++)
        if ((unstored >> p) & 1u)
            log_warn("libdepfs: I/O server %u could not store its unit of inode %llu (%s): "
                     "written around it, as if it had failed", lay->servers[p],
                     (unsigned long long)w->in->ino, strerror(-reqs[p].result));
    /* a server that failed to store its unit (a full or failing disk; it
     * demotes itself) missed this write like a crashed one: the survivors
     * record it dirty first, then its lock goes */
    failed |= unstored;
    /* Unless more than n-k positions missed it: recorded dirty, they would
     * be more stale units than n-k, and none of those servers could ever
     * be rebuilt (each rejoin needs k others up). The stripes are torn
     * instead: each position that did not store keeps its lock (or, after
     * a crash, its intent) in doubt, for depfs-recovery's orphan repair
     * once the servers answer. */
    bool beyond_nk = dc_popcount32(failed | w->down) > lay->n - lay->k;
    if (unstored != 0)
        dc_test_pause(DC_PAUSE_BEFORE_DIRTY);
    if (failed != 0 && !beyond_nk) {
        int rc = dc_notify_dirty(w, &failed);
        if (rc < 0 && err == 0)
            err = rc;
    }
    if (err != 0 || lost_lock || unstored != 0) {
        /* release our lock where the write was refused, or where it was
         * not stored and the server is now recorded dirty; if recording
         * failed, or the stripes are torn (stored in part, stale plan
         * elsewhere), a unit in doubt keeps its lock: depfs-recovery
         * repairs the stripes once it outlives its lease (an orphan lock) */
        for (unsigned p = 0; p < lay->n; p++) {
            bool refused = reqs[p].active && dc_write_not_applied(reqs[p].result) &&
                           !(torn && reqs[p].result == DC_ERR_STALE_PLAN);
            bool recorded = ((unstored >> p) & 1u) && err == 0 && !beyond_nk;
            reqs[p].result = refused || recorded ? 0 : 1;
        }
        dc_io_unlock_granted(w->fs, w->in->ino, reqs, lay->n);
    }
    if (err != 0) {
        dc_set_error("write of inode %llu: a server refused the write: %s",
                     (unsigned long long)w->in->ino, strerror(-err));
        return err;
    }
    if (failed != 0 && dc_popcount32(failed | w->down) > lay->n - lay->k) {
        dc_set_error("write of inode %llu: %u of its %u servers missed the write, more than "
                     "n-k=%u: its stripes are left locked in doubt for depfs-recovery",
                     (unsigned long long)w->in->ino, dc_popcount32(failed | w->down), lay->n,
                     lay->n - lay->k);
        return -EIO;
    }
    if (lost_lock)
        return -EAGAIN;
    /* finished as planned after the cluster changed (a server planned
     * without may be UP again), written around servers the cluster calls
     * UP, or missed by servers that failed during it (the cluster may not
     * know yet, or only this client lost them): their old units of these
     * stripes are served until they are out of service or rebuilt */
    uint32_t missed_up = (finished_stale && !torn ? w->down : 0) | (w->around_up & w->down) |
                         failed;
    return missed_up != 0 ? dc_wait_missed_settled(w->fs, lay, w->in->ino, missed_up) : 0;
}

/* ---------------------------------------------------------------- rounds */

static int dc_write_round_once(dc_wround *w, dc_req *reqs)
{
    int rc = dc_plan_round(w);
    if (rc < 0)
        return rc;
    rc = dc_phase1(w, reqs);
    if (rc < 0)
        return rc;
    dc_test_pause(DC_PAUSE_AFTER_LOCK);
    for (unsigned i = 0; i < w->nst; i++) {
        rc = dc_compute_stripe(w, &w->st[i]);
        if (rc < 0) {
            /* release the locks phase 1 took */
            for (unsigned p = 0; p < w->lay->n; p++)
                reqs[p].result = 0;
            dc_io_unlock_granted(w->fs, w->in->ino, reqs, w->lay->n);
            return rc;
        }
    }
    return dc_phase2(w, reqs);
}

/* A round whose lock was taken away mid-write (lease expired, recovery
 * repaired the stripes) is redone by reconstruct-write, which recomputes
 * parity from whatever data the stripes now hold. */
static int dc_write_round(dc_wround *w, dc_req *reqs)
{
    w->force_recon = false;
    int rc = dc_write_round_once(w, reqs);
    for (unsigned redo = 0; rc == -EAGAIN && redo < DC_FAILOVER_RESTARTS_MAX; redo++) {
        log_warn("write of inode %llu: stripe lock lost during the write; redoing the round",
                 (unsigned long long)w->in->ino);
        w->force_recon = true;
        rc = dc_write_round_once(w, reqs);
    }
    if (rc == -EAGAIN) {
        dc_set_error("write of inode %llu: stripe locks kept being lost", (unsigned long long)w->in->ino);
        rc = -EIO;
    }
    return rc;
}

/* Request budget of a round, per server: a piece may cost the server of a
 * data unit it touches two extents and two memory segments (reconstruct-
 * write pre-reads both sides of the new bytes), every other server of the
 * stripe one; a round stays within one request (RPC_MAX_IOV). */
#define DC_ROUND_SEGMENTS_MAX (DC_ROUND_STRIPES_MAX + 4u)
_Static_assert(DC_ROUND_SEGMENTS_MAX <= RPC_MAX_IOV, "a round must fit one request");
/* Pieces planned at once (bounds the piece list of a huge write). */
#define DC_WRITE_WINDOW_PIECES 4096u

typedef struct dc_wpiece {
    stripe_piece pc;
    const uint8_t *src;
} dc_wpiece;

/* Adds the piece's cost to cost[] when it fits the budget. */
static bool dc_piece_fits(const layout *lay, const stripe_piece *pc, unsigned cost[LAYOUT_MAX_N])
{
    unsigned c[LAYOUT_MAX_N];
    for (unsigned u = 0; u < lay->n; u++) {
        uint64_t lo = (uint64_t)u * lay->su, hi = lo + lay->su;
        bool touched = u < lay->k && pc->off_in_stripe < hi && pc->off_in_stripe + pc->len > lo;
        unsigned pos = layout_unit_pos(lay, pc->stripe, u);
        c[pos] = touched && !pc->full ? 2u : 1u;
        if (cost[pos] + c[pos] > DC_ROUND_SEGMENTS_MAX)
            return false;
    }
    for (unsigned p = 0; p < lay->n; p++)
        cost[p] += c[p];
    return true;
}

/* The n pieces of one stripe (ascending, disjoint) as one: their span,
 * full only when they cover the stripe without a gap. */
static stripe_piece dc_span(const layout *lay, const dc_wpiece *p, unsigned n)
{
    stripe_piece sp = p[0].pc;
    const stripe_piece *last = &p[n - 1].pc;
    sp.len = last->off_in_stripe + last->len - sp.off_in_stripe;
    bool gapless = true;
    for (unsigned i = 1; i < n; i++)
        gapless = gapless && p[i].pc.off_in_stripe == p[i - 1].pc.off_in_stripe + p[i - 1].pc.len;
    sp.full = gapless && sp.off_in_stripe == 0 && sp.len == layout_stripe_bytes(lay);
    return sp;
}

/* ws = the n pieces of one stripe as one piece over their span; for n > 1
 * a buffer with each piece's bytes in place and the gaps between listed
 * (dc_fill_gaps completes it after phase 1). */
static int dc_take_stripe(dc_wstripe *ws, const dc_wpiece *p, unsigned n, stripe_piece span)
{
    ws->pc = span;
    ws->src = p[0].src;
    ws->merged = NULL;
    ws->gaps = NULL;
    ws->n_gaps = 0;
    if (n == 1)
        return 0;
    uint8_t *buf = malloc(span.len);
    dc_wgap *gaps = malloc(sizeof *gaps * (n - 1));
    if (buf == NULL || gaps == NULL) {
        free(buf);
        free(gaps);
        return -ENOMEM;
    }
    unsigned ng = 0;
    for (unsigned i = 0; i < n; i++) {
        const stripe_piece *pc = &p[i].pc;
        assert(pc->stripe == span.stripe);
        memcpy(buf + (pc->off_in_stripe - span.off_in_stripe), p[i].src, pc->len);
        if (i == 0)
            continue;
        uint32_t prev_end = p[i - 1].pc.off_in_stripe + p[i - 1].pc.len;
        assert(pc->off_in_stripe >= prev_end);
        if (pc->off_in_stripe > prev_end)
            gaps[ng++] = (dc_wgap){.off = prev_end, .len = pc->off_in_stripe - prev_end};
    }
    ws->src = ws->merged = buf;
    ws->gaps = gaps;
    ws->n_gaps = ng;
    return 0;
}

static void dc_free_merged(dc_wround *w)
{
    for (unsigned i = 0; i < w->nst; i++) {
        free(w->st[i].merged);
        free(w->st[i].gaps);
        w->st[i].merged = NULL;
        w->st[i].gaps = NULL;
        w->st[i].n_gaps = 0;
    }
}

/* Pieces of one stripe go as one merged piece while the gap between two
 * neighbours costs less than a round of its own would: a gap is pre-read
 * and written back (twice its bytes), a piece in a round of its own
 * pre-reads and writes its parity ranges, (n - k) of up to its length
 * each. So a gap merges up to DC_WRITE_MERGE_GAP_MIN, or up to (n - k)
 * times the longer neighbour's length within a unit (the longer: the
 * fragment a stripe edge cuts off a large piece merges with the rest of
 * its stripe's pieces). A farther piece of
 * the stripe waits for a later round (a round takes distinct stripes) and
 * moves only its own bytes: random small writes buffered together fall a
 * unit or more apart in a stripe, and their spans cost many times their
 * bytes; interleaved large pieces (IO500's ior-hard) merge over the gaps. */
#define DC_WRITE_MERGE_GAP_MIN (4u << 10)

static bool dc_merges(const layout *lay, const stripe_piece *prev, const stripe_piece *next)
{
    uint64_t gap = next->off_in_stripe - (prev->off_in_stripe + prev->len);
    uint64_t longer = prev->len > next->len ? prev->len : next->len;
    if (longer > lay->su)
        longer = lay->su;
    return gap <= DC_WRITE_MERGE_GAP_MIN || gap <= (uint64_t)(lay->n - lay->k) * longer;
}

/* The end of the group of pieces from p[i]: the next pieces of its stripe
 * while each merges with the one before (dc_merges). */
static unsigned dc_group_end(const layout *lay, const dc_wpiece *p, unsigned i, unsigned np)
{
    unsigned e = i + 1;
    while (e < np && p[e].pc.stripe == p[i].pc.stripe && dc_merges(lay, &p[e - 1].pc, &p[e].pc))
        e++;
    return e;
}

/* Write a window of pieces (ascending file order) in rounds: each round
 * takes the next stripes while they fit the request budget, the first
 * group of each stripe's pieces (adjacent here) as one merged piece. The
 * stripes' other groups move to the front of pcs, in order, for the next
 * pass, until none is left. */
static int dc_write_window(dc_wround *w, dc_req *reqs, dc_wpiece *pcs, unsigned np,
                           uint64_t per_round)
{
    int rc = 0;
    while (np > 0 && rc == 0) {
        unsigned next = 0, later = 0;
        while (next < np && rc == 0) {
            unsigned cost[LAYOUT_MAX_N] = {0};
            w->nst = 0;
            while (next < np && w->nst < per_round) {
                unsigned grp = dc_group_end(w->lay, pcs, next, np), end = grp;
                while (end < np && pcs[end].pc.stripe == pcs[next].pc.stripe)
                    end++;
                stripe_piece span = dc_span(w->lay, pcs + next, grp - next);
                if (!dc_piece_fits(w->lay, &span, cost))
                    break;
                rc = dc_take_stripe(&w->st[w->nst], pcs + next, grp - next, span);
                if (rc < 0)
                    break;
                w->nst++;
                assert(later < grp); /* the stripe took a piece: no overlap ahead */
                memmove(pcs + later, pcs + grp, (size_t)(end - grp) * sizeof *pcs);
                later += end - grp;
                next = end;
            }
            assert(w->nst > 0 || rc < 0); /* a first stripe always fits an empty budget */
            if (rc == 0)
                rc = dc_write_round(w, reqs);
            dc_free_merged(w);
        }
        np = later;
    }
    return rc;
}

int dc_write_extents(depfs_t *fs, dc_inode *in, const dc_wext *ext, unsigned n, bool sync)
{
    const layout *lay = &in->lay;
    if (n == 0)
        return 0;
    assert(lay->n >= lay->k && lay->k > 0 && lay->n <= LAYOUT_MAX_N);
    const codec *cd = dc_codec(fs, lay->n, lay->k, lay->codec_version);
    if (cd == NULL)
        return -EINVAL;
    uint64_t per_round = dc_round_stripes(fs, lay);
    dc_wstripe *st = calloc(per_round, sizeof *st);
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    uint64_t total_pieces = 0;
    for (unsigned e = 0; e < n && total_pieces < DC_WRITE_WINDOW_PIECES; e++)
        total_pieces += layout_piece_count(lay, ext[e].off, ext[e].len);
    unsigned window = total_pieces < DC_WRITE_WINDOW_PIECES ? (unsigned)total_pieces
                                                            : DC_WRITE_WINDOW_PIECES;
    dc_wpiece *pcs = calloc(window ? window : 1, sizeof *pcs);
    int rc = 0;
    if (st == NULL || reqs == NULL || pcs == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    dc_wround w = {.fs = fs, .in = in, .lay = lay, .cd = cd, .st = st, .sync = sync,
                   .no_locks = dc_test_hooks_get()->no_locks};
    unsigned np = 0;
    for (unsigned e = 0; e < n && rc == 0; e++) {
        assert(e == 0 || ext[e].off >= ext[e - 1].off + ext[e - 1].len);
        uint64_t npieces = layout_piece_count(lay, ext[e].off, ext[e].len);
        for (uint64_t i = 0; i < npieces && rc == 0; i++) {
            stripe_piece pc = layout_piece(lay, ext[e].off, ext[e].len, i);
            pcs[np++] = (dc_wpiece){.pc = pc, .src = ext[e].data + (pc.file_off - ext[e].off)};
            if (np == window) {
                rc = dc_write_window(&w, reqs, pcs, np, per_round);
                np = 0;
            }
        }
    }
    if (rc == 0 && np > 0)
        rc = dc_write_window(&w, reqs, pcs, np, per_round);
    free(w.arena);
out:
    free(pcs);
    free(reqs);
    free(st);
    return rc;
}

int dc_write_range(depfs_t *fs, dc_inode *in, const uint8_t *buf, uint64_t off, uint64_t len,
                   bool sync)
{
    if (len == 0)
        return 0;
    dc_wext one = {.off = off, .len = len, .data = buf};
    return dc_write_extents(fs, in, &one, 1, sync);
}


