/* eng_scrub_locate.c - which unit of a stripe is wrong, and what the scrub
 * does about it (eng_scrub.h): pure logic over one stripe's bytes.
 *
 * Napkin math: a clean stripe costs one decode of n-k units from k (the
 * same work as re-encoding the parity). Locating a mismatch tries each of
 * the g read units as the culprit: g decodes of at most n-k units, so for
 * 8@6 with 64 KiB units about 8 x 128 KiB of GF work per bad stripe; bad
 * stripes are rare, so this is not worth a syndrome table. */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include "depfs.h"
#include "eng_scrub.h"
#include "io_fanout.h"

int dc_scrub_cause_of(int result)
{
    switch (result) {
    case 0: return DC_SCRUB_GOOD;
    case -EBADMSG: return DEPFS_SCRUB_CHECKSUM;
    case -ENODATA: return DEPFS_SCRUB_MISSING;
    case DC_ERR_DOWN: return DEPFS_SCRUB_UNREACHABLE;
    default: return DEPFS_SCRUB_IO_ERROR;
    }
}

static unsigned dc_scrub_popcount(uint32_t v)
{
    unsigned c = 0;
    for (; v; v &= v - 1)
        c++;
    return c;
}

/* 1 when the units in `set` agree: its first k units rebuild the others
 * into scratch, which must equal the stored bytes; 0 when they do not;
 * negative errno on a codec failure. */
static int dc_scrub_agree(const codec *cd, size_t len, uint8_t *const *units, uint32_t set,
                          uint8_t *const *scratch)
{
    unsigned n = codec_n(cd), k = codec_k(cd), taken = 0;
    uint8_t *v[CODEC_MAX_UNITS];
    bool present[CODEC_MAX_UNITS], want[CODEC_MAX_UNITS];
    assert(dc_scrub_popcount(set) >= k);
    for (unsigned u = 0; u < n; u++) {
        bool in = (set >> u) & 1u;
        present[u] = in && taken < k;
        want[u] = in && !present[u];
        v[u] = present[u] ? units[u] : want[u] ? scratch[u] : NULL;
        taken += present[u];
    }
    int rc = codec_decode_want(cd, len, v, present, want);
    if (rc < 0)
        return rc;
    for (unsigned u = 0; u < n; u++)
        if (want[u] && memcmp(scratch[u], units[u], len) != 0)
            return 0;
    return 1;
}

int dc_scrub_locate(const codec *cd, size_t len, uint8_t *const *units, uint32_t good,
                    uint8_t *const *scratch, unsigned *bad)
{
    unsigned n = codec_n(cd), k = codec_k(cd);
    assert(n <= CODEC_MAX_UNITS && (n == 32 || (good >> n) == 0));
    unsigned g = dc_scrub_popcount(good);
    if (g < k)
        return DC_SCRUB_TOO_FEW;
    if (g == k)
        return DC_SCRUB_UNCHECKED;
    int rc = dc_scrub_agree(cd, len, units, good, scratch);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return DC_SCRUB_CONSISTENT;
    if (g < k + 2)
        return DC_SCRUB_UNLOCATED;
    unsigned found = 0, culprit = 0;
    for (unsigned u = 0; u < n; u++) {
        if (!((good >> u) & 1u))
            continue;
        rc = dc_scrub_agree(cd, len, units, good & ~(1u << u), scratch);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            found++;
            culprit = u;
        }
    }
    /* distance >= 3 makes a single culprit unique; two mean several units
     * are wrong in a way no single one explains */
    if (found != 1)
        return DC_SCRUB_UNLOCATED;
    *bad = culprit;
    return DC_SCRUB_LOCATED;
}

int dc_scrub_plan_stripe(const codec *cd, size_t len, uint8_t *const *units, uint32_t bad,
                         uint32_t unreachable, uint8_t *const *scratch, dc_scrub_plan *plan)
{
    unsigned n = codec_n(cd), k = codec_k(cd);
    uint32_t all = n == 32 ? UINT32_MAX : (1u << n) - 1;
    assert((bad & ~all) == 0 && (unreachable & ~bad) == 0);
    memset(plan, 0, sizeof *plan);
    int v = dc_scrub_locate(cd, len, units, all & ~bad, scratch, &plan->located);
    if (v < 0)
        return v;
    plan->verdict = (dc_scrub_verdict)v;
    switch (plan->verdict) {
    case DC_SCRUB_TOO_FEW:
        plan->unrepairable = true;
        break;
    case DC_SCRUB_CONSISTENT:
    case DC_SCRUB_UNCHECKED:
        plan->rebuild = bad & ~unreachable;
        break;
    case DC_SCRUB_LOCATED:
        assert(dc_scrub_popcount(bad) + 2 <= n - k);
        plan->rebuild = (bad & ~unreachable) | (1u << plan->located);
        break;
    case DC_SCRUB_UNLOCATED:
        /* every unit read: the data units are what the servers hold (and,
         * with checksums, what the writer sent); the parity is recomputed
         * from them. With a unit unread nothing is trusted enough. */
        if (bad == 0)
            plan->rewrite_parity = true;
        else
            plan->unrepairable = true;
        break;
    }
    return 0;
}
