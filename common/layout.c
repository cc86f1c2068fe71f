/* layout.c - stripe math and parity rotation (layout.h). Nothing else:
 * where a file byte lives, how a byte range splits into stripes, which server
 * holds which unit of a stripe, and how big a strip file must be. */
#include "layout.h"

#include <assert.h>

#include "invariant.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "codec.h"

#define LAYOUT_SU_ALIGN 512u

__attribute__((format(printf, 3, 4)))
static int invalid(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    if (why && why_len) {
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int layout_check_su(uint32_t su, char *why, size_t why_len)
{
    if (su % LAYOUT_SU_ALIGN != 0)
        return invalid(why, why_len, "stripe unit (%u) not a multiple of %u", su, LAYOUT_SU_ALIGN);
    if (su < LAYOUT_MIN_SU)
        return invalid(why, why_len, "stripe unit (%u) < minimum %u", su, LAYOUT_MIN_SU);
    if (su > LAYOUT_MAX_SU)
        return invalid(why, why_len, "stripe unit (%u) > maximum %u", su, LAYOUT_MAX_SU);
    return 0;
}

int layout_validate(const layout *l, char *why, size_t why_len)
{
    if (l->n < 1 || l->n > LAYOUT_MAX_N)
        return invalid(why, why_len, "n (%u) not in 1..%u", l->n, LAYOUT_MAX_N);
    if (l->k < 1)
        return invalid(why, why_len, "k (%u) must be at least 1", l->k);
    if (l->k > l->n)
        return invalid(why, why_len, "k (%u) > n (%u)", l->k, l->n);
    int rc = layout_check_su(l->su, why, why_len);
    if (rc < 0)
        return rc;
    if (l->codec_version != CODEC_VERSION_CAUCHY1)
        return invalid(why, why_len, "unknown codec version %u", l->codec_version);
    for (unsigned i = 0; i < l->n; i++)
        for (unsigned j = i + 1; j < l->n; j++)
            if (l->servers[i] == l->servers[j])
                return invalid(why, why_len, "server id %u listed twice (position %u)",
                               l->servers[i], j);
    return 0;
}

unsigned layout_unit_pos(const layout *l, uint64_t stripe, unsigned unit)
{
    INVARIANT(l->n > 0 && unit < l->n, "unit %u of a %u@%u layout", unit, l->n, l->k);
    return (unsigned)((unit + stripe % l->n) % l->n);
}

unsigned layout_pos_unit(const layout *l, uint64_t stripe, unsigned pos)
{
    INVARIANT(l->n > 0 && pos < l->n, "position %u of a %u@%u layout", pos, l->n, l->k);
    return (unsigned)((pos + l->n - stripe % l->n) % l->n);
}

unit_addr layout_locate(const layout *l, uint64_t file_off)
{
    assert(l->k > 0 && l->su > 0);
    uint64_t stripe_bytes = layout_stripe_bytes(l);
    uint64_t in_stripe = file_off % stripe_bytes;
    unit_addr a = {
        .stripe = file_off / stripe_bytes,
        .unit = (unsigned)(in_stripe / l->su),
        .off_in_unit = (uint32_t)(in_stripe % l->su),
    };
    assert(a.unit < l->k);
    return a;
}

uint64_t layout_piece_count(const layout *l, uint64_t off, uint64_t len)
{
    if (len == 0)
        return 0;
    assert(off + len > off); /* no wrap */
    return layout_stripe_of(l, off + len - 1) - layout_stripe_of(l, off) + 1;
}

stripe_piece layout_piece(const layout *l, uint64_t off, uint64_t len, uint64_t i)
{
    assert(i < layout_piece_count(l, off, len));
    uint64_t stripe_bytes = layout_stripe_bytes(l);
    uint64_t stripe = layout_stripe_of(l, off) + i;
    uint64_t stripe_start = stripe * stripe_bytes;
    uint64_t start = off > stripe_start ? off : stripe_start;
    uint64_t end = off + len < stripe_start + stripe_bytes ? off + len : stripe_start + stripe_bytes;
    assert(start < end);
    stripe_piece p = {
        .stripe = stripe,
        .file_off = start,
        .off_in_stripe = (uint32_t)(start - stripe_start),
        .len = (uint32_t)(end - start),
        .full = end - start == stripe_bytes,
    };
    return p;
}

uint64_t layout_local_size(const layout *l, uint64_t file_size, unsigned pos)
{
    INVARIANT(pos < l->n, "position %u of a %u@%u layout", pos, l->n, l->k);
    (void)pos; /* every position keeps whole units of every stripe in the file */
    if (file_size == 0)
        return 0;
    uint64_t last_stripe = layout_stripe_of(l, file_size - 1);
    return (last_stripe + 1) * l->su;
}

int layout_choose_servers(layout *l, const uint32_t *ids, unsigned count, uint64_t seed)
{
    if (l->n == 0 || l->n > LAYOUT_MAX_N || count < l->n)
        return -EINVAL;
    unsigned start = (unsigned)(seed % count);
    for (unsigned i = 0; i < l->n; i++)
        l->servers[i] = ids[(start + i) % count];
    return 0;
}
