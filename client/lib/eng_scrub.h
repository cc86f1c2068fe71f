/* eng_scrub.h - private to the scrub engine (eng_scrub.c) and its stripe
 * logic (eng_scrub_locate.c): what is wrong with one stripe and what to do
 * about it, from the bytes of its n units and which of them could be read.
 * Pure functions over memory (no I/O), tested in tests/unit/test_scrub_locate.c.
 *
 * Unit masks: bit u = unit u of the stripe (0..k-1 data, k..n-1 parity),
 * n <= CODEC_MAX_UNITS == 32. */
#ifndef DEPFS_CLIENT_ENG_SCRUB_H
#define DEPFS_CLIENT_ENG_SCRUB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "codec.h"

/* Why a unit is bad (a finding's cause, depfs.h DEPFS_SCRUB_*). */
#define DC_SCRUB_GOOD 0
/* The cause of a unit whose read ended with `result` (0, -errno or
 * DC_ERR_DOWN): EBADMSG checksum, ENODATA missing, DC_ERR_DOWN unreachable,
 * anything else the server answered an I/O error. */
int dc_scrub_cause_of(int result);

/* What the units that were read say about each other. */
typedef enum dc_scrub_verdict {
    DC_SCRUB_CONSISTENT, /* more than k read, and they agree */
    DC_SCRUB_UNCHECKED,  /* exactly k read: nothing to compare them with */
    DC_SCRUB_LOCATED,    /* they disagree, and exactly one unit explains it */
    DC_SCRUB_UNLOCATED,  /* they disagree, and no single unit explains it
                          * (or too few were read to tell which) */
    DC_SCRUB_TOO_FEW,    /* fewer than k read: nothing can be said or done */
} dc_scrub_verdict;

/* units[0..n-1]: the stripe's units, len bytes each; good: the units that
 * were read fine. scratch[0..n-1]: n buffers of len bytes the check decodes
 * into (their contents are undefined afterwards). A single wrong unit u is
 * located when at least k+2 units were read: decoding u from the others
 * makes every read unit agree, and no other unit does that (the code
 * punctured to the read units has distance >= 3). With k+1 read units a
 * disagreement cannot be located. *bad gets the unit with LOCATED.
 * Negative errno when the codec fails. */
int dc_scrub_locate(const codec *cd, size_t len, uint8_t *const *units, uint32_t good,
                    uint8_t *const *scratch, unsigned *bad);

/* What to do with one stripe. */
typedef struct dc_scrub_plan {
    dc_scrub_verdict verdict;
    unsigned located;     /* with DC_SCRUB_LOCATED: the wrong unit */
    uint32_t rebuild;     /* units to decode from the good ones and write back */
    bool rewrite_parity;  /* an unlocated mismatch with every unit read (and,
                           * once servers check checksums, checksum-good):
                           * parity from the data, a suspected bug */
    bool unrepairable;    /* more than n-k units bad, or an unlocated
                           * mismatch among fewer than n units: nothing done */
} dc_scrub_plan;

/* Plan for one stripe: bad = units that could not be read (any cause),
 * unreachable (a subset of bad) = units whose server is down, which are
 * never rebuilt here (depfs-recovery rebuilds a returning server). Units
 * are never recomputed from a unit in bad or from the located one. */
int dc_scrub_plan_stripe(const codec *cd, size_t len, uint8_t *const *units, uint32_t bad,
                         uint32_t unreachable, uint8_t *const *scratch, dc_scrub_plan *plan);

#endif
