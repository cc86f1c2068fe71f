/* eng_extent_map.c - SEEK_DATA/SEEK_HOLE over the servers' data extents
 * (eng_extent_map.h). Everything is counted in stripes: stripe s is the
 * local unit [s*su, (s+1)*su) of every position. */
#include "eng_extent_map.h"

#include <assert.h>

/* The stripes an extent touches: [*a, *b). */
static void ext_stripes(const dc_xext *e, uint32_t su, uint64_t *a, uint64_t *b)
{
    *a = e->off / su;
    *b = e->len == 0 ? *a : (e->off + e->len - 1) / su + 1;
}

/* The stripe from which position p's picture is unknown (data). */
static uint64_t known_end_stripe(const dc_xpos *x, uint32_t su)
{
    return x->known ? x->known_end / su : 0;
}

/* The run of stripes with one state starting at cur for position x: its
 * state (*data) and end (*end > cur). *i: the first extent that may
 * still matter, advanced past the ones that end by cur. */
static void run_at(const dc_xpos *x, uint32_t su, uint64_t cur, uint64_t limit, size_t *i,
                   bool *data, uint64_t *end)
{
    uint64_t kend = known_end_stripe(x, su);
    uint64_t a = 0, b = 0;
    while (*i < x->n) {
        ext_stripes(&x->ext[*i], su, &a, &b);
        if (b > cur)
            break;
        (*i)++;
    }
    if (cur >= kend) {
        *data = true;
        *end = limit;
    } else if (*i < x->n && a <= cur) {
        *data = true;
        *end = b < kend ? b : kend;
    } else {
        *data = false;
        *end = *i < x->n && a < kend ? a : kend;
    }
    if (*end > limit)
        *end = limit;
    assert(*end > cur);
}

/* The first stripe in [from, to) where position p holds a data unit whose
 * state is want_data: true and *stripe, else false. Each run is looked at
 * for at most n stripes: the rotation gives p a data unit in k of any n
 * stripes running. */
static bool first_stripe_of(const dc_xmap *m, unsigned p, uint64_t from, uint64_t to,
                            bool want_data, uint64_t *stripe)
{
    const layout *l = m->lay;
    const dc_xpos *x = &m->pos[p];
    size_t i = 0;
    uint64_t cur = from;
    while (cur < to) {
        bool data;
        uint64_t end;
        run_at(x, l->su, cur, to, &i, &data, &end);
        if (data == want_data) {
            uint64_t stop = end - cur > l->n ? cur + l->n : end;
            for (uint64_t t = cur; t < stop; t++) {
                if (layout_pos_unit(l, t, p) < l->k) {
                    *stripe = t;
                    return true;
                }
            }
        }
        cur = end;
    }
    return false;
}

bool dc_xpos_stripe_is_data(const dc_xpos *x, uint32_t su, uint64_t stripe)
{
    size_t i = 0;
    bool data;
    uint64_t end;
    run_at(x, su, stripe, stripe + 1, &i, &data, &end);
    return data;
}

bool dc_xmap_unit_is_data(const dc_xmap *m, uint64_t stripe, unsigned unit)
{
    const layout *l = m->lay;
    assert(unit < l->k && stripe >= m->first_stripe && stripe < m->end_stripe);
    return dc_xpos_stripe_is_data(&m->pos[layout_unit_pos(l, stripe, unit)], l->su, stripe);
}

bool dc_xmap_seek(const dc_xmap *m, uint64_t off, bool want_data, uint64_t *out)
{
    const layout *l = m->lay;
    uint64_t sb = layout_stripe_bytes(l);
    uint64_t s = off / sb;
    assert(s >= m->first_stripe && s < m->end_stripe);
    for (unsigned u = (unsigned)(off % sb / l->su); u < l->k; u++) { /* the rest of stripe s */
        if (dc_xmap_unit_is_data(m, s, u) == want_data) {
            uint64_t at = s * sb + (uint64_t)u * l->su;
            *out = at > off ? at : off;
            return true;
        }
    }
    bool found = false;
    for (unsigned p = 0; p < l->n; p++) { /* the earliest later unit of any position */
        uint64_t t;
        if (!first_stripe_of(m, p, s + 1, m->end_stripe, want_data, &t))
            continue;
        uint64_t at = t * sb + (uint64_t)layout_pos_unit(l, t, p) * l->su;
        if (!found || at < *out)
            *out = at;
        found = true;
    }
    return found;
}
