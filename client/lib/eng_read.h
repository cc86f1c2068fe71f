/* eng_read.h - private to the read engine (eng_read.c) and its degraded
 * stripe cache (eng_dcache.c): the stripes a read round works on and the
 * cache's slots. */
#ifndef DEPFS_CLIENT_ENG_READ_H
#define DEPFS_CLIENT_ENG_READ_H
#include "engines.h"

typedef struct dc_rstripe {
    stripe_piece pc;
    uint8_t *dest;          /* caller's bytes for pc */
    uint32_t used;          /* positions read for this stripe */
    bool degraded;
} dc_rstripe;

/* Range [a,b) of data unit u touched by the piece; false when untouched. */
static inline bool dc_piece_unit_range(const layout *lay, const stripe_piece *pc, unsigned u, uint32_t *a,
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

#define DC_DCACHE_SLOTS 16u
#define DC_DCACHE_BYTES_MAX (16u << 20)
#define DC_DCACHE_TTL_MS 1000u
/* Stripes a handle filling in order, one read at a time, fetches beyond
 * the ones it needs. */
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

/* The hull [ra, rb) of the unit columns the piece touches. */
void dc_piece_cols(const layout *lay, const stripe_piece *pc, uint32_t *ra, uint32_t *rb);
/* A piece the degraded stripe cache takes (eng_dcache.c). */
bool dc_piece_cacheable(const layout *lay, const stripe_piece *pc, uint64_t size);
/* Stripe s has a lost data unit among the positions in bad. */
bool dc_stripe_lost(const layout *lay, uint64_t s, uint32_t bad);

void dc_dcache_init(dc_dcache *dc, const layout *lay);
void dc_dcache_destroy(dc_dcache *dc);
/* Forget every ready slot (a write, flush, truncate or close here). */
void dc_dcache_drop(dc_dcache *dc);
/* Worth caching: the handle is known and the piece is cacheable. */
bool dc_dcache_fits(const dc_dcache *dc, const layout *lay, const dc_dstripe *d, uint64_t size);
/* Serve, claim, wait for or give up a slot for d (eng_dcache.c). */
enum dc_dmode dc_dcache_acquire(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
                                       dc_dstripe *d, bool wait);
/* A fill finished (ok: its bytes are in the slot). */
void dc_dcache_publish(dc_dcache *dc, dc_dstripe *d, bool ok);
/* Stripes to fill along with `last`, the last of a round that claimed
 * `own` FILL slots (eng_dcache.c). */
unsigned dc_dcache_ahead(dc_dcache *dc, const layout *lay, const depfs_fh_t *fh,
                                uint64_t size, uint32_t bad, const dc_dstripe *last,
                                unsigned own, dc_dstripe *next, dc_rstripe *ahead);

#endif
