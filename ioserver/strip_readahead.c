/* strip_readahead.c - plans the I/O server's read-ahead of a strip file
 * (strip_readahead.h): which stream a read continues, begins or takes
 * over, the stream's window, and the wanted units of the window still to
 * read ahead. */
#include "strip_readahead.h"

#include <assert.h>

#include "layout.h"

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The parity units a data-unit reader skips in a row, in bytes. */
static uint64_t parity_gap(const ios_data_units *want)
{
    return want ? (uint64_t)(want->n - want->k) * want->su : 0;
}

/* The largest window of a stream. A position holds data units in k
 * stripes in a row of every n (parity rotates by one per stripe), so a
 * window of P periods of n units is at most P + 1 runs of them, and
 * IOS_RA_MAX_RANGES - 1 periods always fit one plan (only tiny stripe units
 * make that less than IOS_RA_MAX_BYTES). */
static uint64_t window_cap(const ios_ra_stream *st)
{
    if (!st->has_units)
        return IOS_RA_MAX_BYTES;
    return min_u64(IOS_RA_MAX_BYTES,
                   (uint64_t)(IOS_RA_MAX_RANGES - 1) * st->units.n * st->units.su);
}

/* Where a data-unit reader that has read up to `at` reads next: at, or
 * past the parity units that follow it when it ends a unit. */
static uint64_t data_resume(const ios_data_units *want, uint64_t at)
{
    if (at % want->su != 0)
        return at;
    const layout l = {.n = want->n, .k = want->k, .su = want->su};
    uint64_t stripe = at / want->su;
    for (unsigned i = 0; i < want->n - want->k && layout_pos_unit(&l, stripe, want->pos) >= want->k;
         i++)
        stripe++;
    return stripe * want->su;
}

/* Whether a read starting at first continues st: a read exactly where it
 * ended (or past the parity units after that), as random reads almost
 * never do; and once it is sequential, a read within IOS_RA_REORDER times
 * its last read's length of where it has got to (parallel requests, ranks
 * taking turns and a degraded reader's fills arrive out of order; a random
 * read that lands there shrinks that reach to its own length). */
static bool continues(const ios_ra_stream *st, const ios_data_units *want, uint64_t first)
{
    if (st->used == 0)
        return false;
    if (first == st->next || (want && first == data_resume(want, st->next)))
        return true;
    if (st->window == 0)
        return false;
    uint64_t reach = min_u64(IOS_RA_REORDER * st->span, st->window);
    return first <= st->next + reach + parity_gap(want) && first + reach >= st->next;
}

/* The stream a read continues (the most recent of several), else NULL. */
static ios_ra_stream *find_stream(ios_ra_file *f, const ios_data_units *want, uint64_t first)
{
    ios_ra_stream *best = NULL;
    for (unsigned i = 0; i < IOS_RA_STREAMS; i++)
        if (continues(&f->s[i], want, first) && (!best || f->s[i].used > best->used))
            best = &f->s[i];
    return best;
}

/* The stream used longest ago (a free one first), made a new stream of a
 * read of [first, end). */
static ios_ra_stream *take_stream(ios_ra_file *f, const ios_data_units *want, uint64_t first,
                                  uint64_t end)
{
    ios_ra_stream *st = &f->s[0];
    for (unsigned i = 1; i < IOS_RA_STREAMS; i++)
        if (f->s[i].used < st->used)
            st = &f->s[i];
    *st = (ios_ra_stream){.next = end, .ahead = end, .span = end - first,
                          .has_units = want != NULL};
    if (want)
        st->units = *want;
    return st;
}

/* Appends [at, end) to out[0..*n), joined to the last range it continues. */
static void add_range(ios_extent *out, size_t *n, uint64_t at, uint64_t end)
{
    if (*n > 0 && out[*n - 1].offset + out[*n - 1].length == at) {
        out[*n - 1].length += end - at;
        return;
    }
    assert(*n < IOS_RA_MAX_RANGES);
    out[(*n)++] = (ios_extent){.offset = at, .length = end - at};
}

/* The units of [from, to) st's readers want, as ranges. */
static size_t wanted_ranges(const ios_ra_stream *st, uint64_t from, uint64_t to,
                            ios_extent out[IOS_RA_MAX_RANGES])
{
    size_t n = 0;
    if (!st->has_units) {
        add_range(out, &n, from, to);
        return n;
    }
    const ios_data_units *u = &st->units;
    const layout l = {.n = u->n, .k = u->k, .su = u->su};
    for (uint64_t at = from; at < to;) {
        uint64_t stripe = at / u->su;
        uint64_t unit_end = min_u64((stripe + 1) * u->su, to);
        if (layout_pos_unit(&l, stripe, u->pos) < u->k)
            add_range(out, &n, at, unit_end);
        at = unit_end;
    }
    return n;
}

size_t ios_ra_plan(ios_ra_file *f, const ios_data_units *want, uint64_t first, uint64_t end,
                   ios_extent out[IOS_RA_MAX_RANGES])
{
    assert(first < end);
    assert(!want || (want->n > 0 && want->k > 0 && want->k <= want->n && want->pos < want->n &&
                     want->su > 0));
    f->clock++;
    ios_ra_stream *st = find_stream(f, want, first);
    if (!st) {
        st = take_stream(f, want, first, end);
        st->used = f->clock;
        if (first != 0)
            return 0; /* not (yet) sequential: nothing ahead */
    } else {
        st->used = f->clock;
        st->next = max_u64(st->next, end);
        st->span = end - first;
        st->has_units = st->has_units && want != NULL;
    }
    uint64_t cap = window_cap(st);
    if (st->window == 0)
        st->window = min_u64(max_u64(IOS_RA_MIN_BYTES, 2 * (end - first)), cap);
    else
        st->window = min_u64(2 * st->window, cap);
    if (st->ahead >= st->next + st->window / 2)
        return 0; /* more than half the window is ahead already */
    uint64_t from = max_u64(st->ahead, st->next);
    uint64_t to = min_u64(st->next + st->window, IOS_STRIP_BYTES_CAP);
    if (from >= to)
        return 0;
    st->ahead = to;
    return wanted_ranges(st, from, to, out);
}
