/* test_dcache.c - the read engine's degraded stripe cache
 * (client/lib/eng_dcache.c): when a handle decoding stripes in order
 * fetches the next ones with its own. One read at a time, it does (the
 * request count was the cost); with another read of the handle filling
 * meanwhile (the kernel's parallel read-ahead requests through FUSE) it
 * does not, or it would take the stripes those requests are about to fetch
 * and make them wait for it. Another handle's fills do not count. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "eng_read.h"

#define SU (64u << 10)
#define N 8u
#define K 6u
#define STRIPES 100u
#define BAD 0x7u /* positions 0-2 down: every stripe of 8@6 loses a data unit */

static layout lay;
static dc_dcache dc;
static uint64_t size;
/* two handles: only their addresses matter to the cache */
static int fh_a_obj, fh_b_obj;
#define FH_A ((const depfs_fh_t *)&fh_a_obj)
#define FH_B ((const depfs_fh_t *)&fh_b_obj)

static void setup(void)
{
    memset(&lay, 0, sizeof lay);
    lay.n = N;
    lay.k = K;
    lay.su = SU;
    for (unsigned i = 0; i < N; i++)
        lay.servers[i] = i + 1;
    size = (uint64_t)STRIPES * layout_stripe_bytes(&lay);
    memset(&dc, 0, sizeof dc);
    dc_dcache_init(&dc, &lay);
}

static void teardown(void)
{
    dc_dcache_destroy(&dc);
}

/* A read of fh claims stripe s to fill (its piece: the whole stripe). */
static void claim(const depfs_fh_t *fh, uint64_t s, dc_rstripe *rs, dc_dstripe *d)
{
    memset(rs, 0, sizeof *rs);
    memset(d, 0, sizeof *d);
    rs->pc.stripe = s;
    rs->pc.file_off = s * layout_stripe_bytes(&lay);
    d->rs = rs;
    ck_assert_int_eq(dc_dcache_acquire(&dc, &lay, fh, d, false), DC_D_FILL);
}

/* The stripes fh's round ending at `last` (own FILL slots) fetches ahead,
 * published at once as filled. */
static unsigned ahead_of(const depfs_fh_t *fh, dc_dstripe *last, unsigned own, uint64_t *first)
{
    dc_dstripe next[DC_DCACHE_AHEAD];
    dc_rstripe ahead[DC_DCACHE_AHEAD];
    unsigned n = dc_dcache_ahead(&dc, &lay, fh, size, BAD, last, own, next, ahead);
    ck_assert_uint_le(n, DC_DCACHE_AHEAD);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_int_eq(next[i].mode, DC_D_FILL);
        ck_assert_uint_eq(next[i].rs->pc.stripe, last->rs->pc.stripe + 1 + i);
        dc_dcache_publish(&dc, &next[i], true);
    }
    *first = n > 0 ? last->rs->pc.stripe + 1 : 0;
    return n;
}

START_TEST(test_one_read_at_a_time_fetches_ahead)
{
    dc_rstripe r0, r1, rb;
    dc_dstripe d0, d1, db;
    uint64_t first;
    claim(FH_A, 0, &r0, &d0);
    ck_assert_uint_eq(ahead_of(FH_A, &d0, 1, &first), 0); /* not yet in order */
    dc_dcache_publish(&dc, &d0, true);
    /* another handle's fill in flight is not this handle's parallelism */
    claim(FH_B, 50, &rb, &db);
    claim(FH_A, 1, &r1, &d1);
    ck_assert_uint_eq(ahead_of(FH_A, &d1, 1, &first), DC_DCACHE_AHEAD);
    ck_assert_uint_eq(first, 2);
    dc_dcache_publish(&dc, &d1, true);
    dc_dcache_publish(&dc, &db, true);
}
END_TEST

START_TEST(test_parallel_reads_fetch_no_ahead)
{
    dc_rstripe r0, r1, r2;
    dc_dstripe d0, d1, d2;
    uint64_t first;
    /* the kernel's first request fills stripe 0 and is still fetching ... */
    claim(FH_A, 0, &r0, &d0);
    ck_assert_uint_eq(ahead_of(FH_A, &d0, 1, &first), 0);
    /* ... when the next one, in order, claims stripes 1 and 2 */
    claim(FH_A, 1, &r1, &d1);
    claim(FH_A, 2, &r2, &d2);
    ck_assert_uint_eq(ahead_of(FH_A, &d2, 2, &first), 0);
    dc_dcache_publish(&dc, &d0, true);
    dc_dcache_publish(&dc, &d1, true);
    dc_dcache_publish(&dc, &d2, true);
    /* alone again, in order: it fetches ahead once more */
    dc_rstripe r3;
    dc_dstripe d3;
    claim(FH_A, 3, &r3, &d3);
    ck_assert_uint_eq(ahead_of(FH_A, &d3, 1, &first), DC_DCACHE_AHEAD);
    ck_assert_uint_eq(first, 4);
    dc_dcache_publish(&dc, &d3, true);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dcache");
    TCase *tc = tcase_create("ahead");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_one_read_at_a_time_fetches_ahead);
    tcase_add_test(tc, test_parallel_reads_fetch_no_ahead);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
