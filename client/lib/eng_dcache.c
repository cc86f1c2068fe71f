/* eng_dcache.c - the degraded stripe cache of the read engine.
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
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "eng_read.h"

/* The hull [ra, rb) of the unit columns the piece touches. */
void dc_piece_cols(const layout *lay, const stripe_piece *pc, uint32_t *ra, uint32_t *rb)
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

/* A piece the degraded stripe cache takes: its whole stripe lies in the
 * file, the piece is part of it and spans at least half a unit's columns
 * (a direct decode would fetch most of the stripe anyway). */
bool dc_piece_cacheable(const layout *lay, const stripe_piece *pc, uint64_t size)
{
    uint64_t sb = layout_stripe_bytes(lay);
    uint32_t ra, rb;
    dc_piece_cols(lay, pc, &ra, &rb);
    return (pc->stripe + 1) * sb <= size && pc->len < sb && 2u * (rb - ra) >= lay->su;
}

void dc_dcache_init(dc_dcache *dc, const layout *lay)
{
    uint64_t slot_bytes = (uint64_t)lay->n * lay->su;
    uint64_t by_mem = DC_DCACHE_BYTES_MAX / slot_bytes;
    dc->nslots = (unsigned)(by_mem < DC_DCACHE_SLOTS ? by_mem : DC_DCACHE_SLOTS);
    pthread_mutex_init(&dc->lock, NULL);
    pthread_cond_init(&dc->cond, NULL);
}

void dc_dcache_destroy(dc_dcache *dc)
{
    for (unsigned i = 0; i < DC_DCACHE_SLOTS; i++)
        free(dc->slot[i].buf);
    pthread_cond_destroy(&dc->cond);
    pthread_mutex_destroy(&dc->lock);
}

void dc_dcache_drop(dc_dcache *dc)
{
    pthread_mutex_lock(&dc->lock);
    dc->gen++;
    for (unsigned i = 0; i < dc->nslots; i++)
        if (dc->slot[i].state == DC_DSLOT_READY)
            dc->slot[i].state = DC_DSLOT_EMPTY;
    pthread_mutex_unlock(&dc->lock);
}

/* Worth caching: the handle is known and the piece is cacheable. */
bool dc_dcache_fits(const dc_dcache *dc, const layout *lay, const dc_dstripe *d,
                           uint64_t size)
{
    return dc != NULL && dc->nslots > 0 && dc_piece_cacheable(lay, &d->rs->pc, size);
}

/* Serve d from the handle's slot of its stripe (DC_D_DONE), claim a slot to
 * fill (DC_D_FILL), report a fill in progress (DC_D_WAIT; with `wait`,
 * wait for it instead), or give up (DC_D_DIRECT: every slot is filling). */
enum dc_dmode dc_dcache_acquire(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
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
void dc_dcache_publish(dc_dcache *dc, dc_dstripe *d, bool ok)
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

/* True when fh has a fill in flight besides the round's own `own` ones
 * (claimed FILLING slots): another read of the handle is fetching now. */
static bool dc_dcache_others_filling(dc_dcache *dc, const depfs_fh_t *fh, unsigned own)
{
    unsigned filling = 0;
    pthread_mutex_lock(&dc->lock);
    for (unsigned i = 0; i < dc->nslots; i++)
        if (dc->slot[i].state == DC_DSLOT_FILLING && dc->slot[i].owner == fh)
            filling++;
    pthread_mutex_unlock(&dc->lock);
    assert(filling >= own);
    return filling > own;
}

bool dc_stripe_lost(const layout *lay, uint64_t s, uint32_t bad)
{
    for (unsigned u = 0; u < lay->k; u++)
        if ((bad >> layout_unit_pos(lay, s, u)) & 1u)
            return true;
    return false;
}

/* A handle filling stripes in order, one read at a time, also fills the
 * next DC_DCACHE_AHEAD stripes with lost data units in the same fetch (one
 * LOCK+READ and one UNLOCK per server for all of them: after the bytes, the
 * request count was the degraded path's main cost), as long as they lie in
 * the file and are not cached or being filled. Stripes whose lost units are
 * all parity (at most n-k in a row) are skipped. A handle with another
 * fill in flight reads in parallel already (the kernel's read-ahead
 * requests through FUSE): fetching ahead would take the stripes the next
 * requests are about to fetch and make them wait for this one, so it
 * fetches none. `last` is the round's last stripe, a FILL, and the round
 * claimed `own` FILL slots; next[] and ahead[] (empty pieces) receive the
 * extra ones. Returns how many. */
unsigned dc_dcache_ahead(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
                                uint64_t size, uint32_t bad, const dc_dstripe *last,
                                unsigned own, dc_dstripe *next, dc_rstripe *ahead)
{
    uint64_t t = last->rs->pc.stripe, sb = layout_stripe_bytes(lay), gap = lay->n - lay->k;
    if (!dc_dcache_sequential(dc, fh, t, gap, t + 1) || dc_dcache_others_filling(dc, fh, own))
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

