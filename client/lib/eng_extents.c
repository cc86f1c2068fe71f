/* eng_extents.c - where a file holds data and what it occupies (issue 14):
 * SEEK_DATA/SEEK_HOLE from the servers' data extents (IO_EXTENTS with a
 * range; the mapping is eng_extent_map.c) and the allocation of its strip
 * files (IO_EXTENTS without one), which a writer reports to the MDS at its
 * size commit for st_blocks.
 *
 * Never a false hole: a server that is down, rebuilding, named in a dirty
 * record of the file (it missed writes: its holes may be units it never
 * got), silent or answering nonsense counts as data everywhere. */
#include "engines.h"
#include "eng_extent_map.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "wire_check.h"

/* Rounds of IO_EXTENTS one seek makes at most (each describes at least
 * WIRE_DATA_EXTENTS_MAX runs of a server, or the rest of the file). Past
 * it the seek answers what cannot lose data: SEEK_DATA "here", SEEK_HOLE
 * "at the end". */
#define DC_SEEK_ROUNDS_MAX 1024u

/* One round's replies, kept while the map points into them. */
typedef struct seek_round {
    dc_ctl ctl[LAYOUT_MAX_N];
    unsigned n_ctl;
    unsigned pos_of[LAYOUT_MAX_N];   /* ctl index -> layout position */
    dc_xext *ext[LAYOUT_MAX_N];      /* by position */
    Depfs__Extent range;
    Depfs__Extent *range_ptr;
    dc_xmap map;
} seek_round;

/* Positions whose holes say nothing now: down here or at the MDS, or
 * missed writes of the file (dirty records), or not asked. */
static uint32_t unknown_positions(depfs_t *fs, const layout *lay, uint64_t ino)
{
    uint32_t all = lay->n >= 32 ? UINT32_MAX : (1u << lay->n) - 1;
    uint32_t recorded = 0, silent = 0;
    if (dc_dirty_probe(fs, lay, ino, &recorded, &silent, NULL) < 0)
        return all; /* records we cannot read may exist: no holes */
    uint32_t away = (dc_down_mask(fs, lay) | silent) & all;
    /* a record lives on the servers that took the write it names; with
     * more than n-k away none of them may have answered (and the file
     * cannot be read whole anyway): nothing counts as known */
    if (dc_popcount32(away) > lay->n - lay->k)
        return all;
    return (away | recorded) & all;
}

void dc_extents_reply(const Depfs__IoReply *r, uint32_t su, uint64_t from, uint64_t to,
                      dc_xext *out, dc_xpos *x)
{
    x->known = false;
    if (r->n_data_extents > WIRE_DATA_EXTENTS_MAX)
        return;
    uint64_t prev_end = from;
    for (size_t i = 0; i < r->n_data_extents; i++) {
        const Depfs__Extent *e = r->data_extents[i];
        if (e->offset < prev_end || e->length == 0 || e->offset >= to ||
            e->length > to - e->offset)
            return;
        out[i] = (dc_xext){ .off = e->offset, .len = e->length };
        prev_end = e->offset + e->length;
    }
    uint64_t end = to;
    if (r->has_next_offset) {
        if (r->next_offset <= from || r->next_offset > to)
            return;
        end = r->next_offset - r->next_offset % su;
        if (end <= from)
            return;
    }
    x->known = true;
    x->known_end = end;
    x->ext = out;
    x->n = r->n_data_extents;
}

/* Asks every position not in unknown for its data in stripes [s0, s_end)
 * and builds rd->map over the stripes every answer describes. */
static int round_run(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t unknown,
                     uint64_t s0, uint64_t s_end, seek_round *rd)
{
    memset(rd, 0, sizeof(*rd));
    uint64_t from = s0 * lay->su, to = s_end * lay->su;
    depfs__extent__init(&rd->range);
    rd->range.offset = from;
    rd->range.length = to - from;
    rd->range_ptr = &rd->range;
    for (unsigned p = 0; p < lay->n; p++) {
        if ((unknown >> p) & 1u)
            continue;
        dc_ctl *c = &rd->ctl[rd->n_ctl];
        dc_ctl_init(c, lay->servers[p], DEPFS__IO_OP__IO_EXTENTS, ino);
        c->req.n_extents = 1;
        c->req.extents = &rd->range_ptr;
        c->req.has_stripe_unit = 1;
        c->req.stripe_unit = lay->su;
        rd->pos_of[rd->n_ctl++] = p;
    }
    dc_ctl_run(fs, rd->ctl, rd->n_ctl);
    rd->map.lay = lay;
    rd->map.first_stripe = s0;
    rd->map.end_stripe = s_end;
    for (unsigned i = 0; i < rd->n_ctl; i++) {
        unsigned p = rd->pos_of[i];
        const Depfs__IoReply *r = rd->ctl[i].rep;
        if (rd->ctl[i].rc != 0 || r == NULL)
            continue; /* unknown: data */
        rd->ext[p] = calloc(r->n_data_extents ? r->n_data_extents : 1, sizeof(dc_xext));
        if (rd->ext[p] == NULL)
            return -ENOMEM;
        dc_extents_reply(r, lay->su, from, to, rd->ext[p], &rd->map.pos[p]);
        if (!rd->map.pos[p].known)
            log_warn("libdepfs: server %u sent a malformed IO_EXTENTS reply for inode %llu: "
                     "its units count as data", lay->servers[p], (unsigned long long)ino);
        else if (rd->map.pos[p].known_end / lay->su < rd->map.end_stripe)
            rd->map.end_stripe = rd->map.pos[p].known_end / lay->su;
    }
    assert(rd->map.end_stripe > s0);
    return 0;
}

static void round_free(seek_round *rd)
{
    dc_ctl_free(rd->ctl, rd->n_ctl);
    for (unsigned p = 0; p < LAYOUT_MAX_N; p++)
        free(rd->ext[p]);
}

int dc_seek(depfs_t *fs, dc_inode *in, uint64_t size, uint64_t off, bool want_data,
            uint64_t *out)
{
    const layout *lay = &in->lay;
    if (off >= size)
        return -ENXIO;
    uint64_t sb = layout_stripe_bytes(lay);
    uint64_t stripes = size / sb + (size % sb != 0);
    uint32_t unknown = unknown_positions(fs, lay, in->ino);
    uint64_t cur = off;
    bool found = false;
    seek_round *rd = malloc(sizeof(*rd));
    if (rd == NULL)
        return -ENOMEM;
    unsigned round = 0;
    for (; round < DC_SEEK_ROUNDS_MAX && !found; round++) {
        uint64_t s0 = cur / sb;
        int rc = round_run(fs, in->ino, lay, unknown, s0, stripes, rd);
        if (rc == 0)
            found = dc_xmap_seek(&rd->map, cur, want_data, out);
        uint64_t next = rd->map.end_stripe;
        round_free(rd);
        if (rc) {
            free(rd);
            return rc;
        }
        if (found || next >= stripes)
            break;
        cur = next * sb;
    }
    free(rd);
    if (!found && round == DC_SEEK_ROUNDS_MAX) { /* never lose data: */
        log_warn("libdepfs: seek in inode %llu stopped after %u rounds at %llu",
                 (unsigned long long)in->ino, DC_SEEK_ROUNDS_MAX, (unsigned long long)cur);
        *out = want_data ? cur : size; /* data here, or none until the end */
        return 0;
    }
    if (want_data)
        return found && *out < size ? 0 : -ENXIO;
    if (!found || *out > size)
        *out = size; /* the hole every file has at its end */
    return 0;
}

int dc_data_alloc(depfs_t *fs, const dc_inode *in, uint64_t *alloc_bytes)
{
    const layout *lay = &in->lay;
    dc_ctl v[LAYOUT_MAX_N];
    for (unsigned p = 0; p < lay->n; p++)
        dc_ctl_init(&v[p], lay->servers[p], DEPFS__IO_OP__IO_EXTENTS, in->ino);
    uint32_t down = dc_down_mask(fs, lay);
    int rc = down ? -EHOSTDOWN : 0; /* a partial sum would under-report */
    if (rc == 0) {
        dc_ctl_run(fs, v, lay->n);
        atomic_fetch_add(&fs->alloc_rounds, 1);
    }
    uint64_t sum = 0;
    for (unsigned p = 0; rc == 0 && p < lay->n; p++) {
        if (v[p].rc < 0)
            rc = v[p].rc;
        else if (!dc_alloc_add(&sum, v[p].rep))
            rc = -EPROTO;
    }
    dc_ctl_free(v, lay->n); /* replies of ctls never run are NULL */
    if (rc == 0)
        *alloc_bytes = sum;
    return rc;
}
