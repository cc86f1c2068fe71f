/* test_scrub_locate.c - the scrub's stripe logic (client/lib/eng_scrub.h):
 * causes from read results; clean stripes agree; one wrong unit among at
 * least k+2 read units is named, for every unit of every code with n-k >= 2
 * and with units unread around it; with k+1 read units, or two wrong units
 * where n-k >= 3, no unit is ever named; and the plan rebuilds exactly the
 * bad units (never an unreachable one), rewrites parity only for an
 * unlocated mismatch with every unit read, and leaves a stripe with too
 * many bad units alone. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "depfs.h"
#include "eng_scrub.h"
#include "io_fanout.h"
#include "tests/lib/rng.h"

#define LOC_LEN 256u

typedef struct stripe {
    codec *c;
    unsigned n, k;
    uint8_t orig[CODEC_MAX_UNITS][LOC_LEN];
    uint8_t work[CODEC_MAX_UNITS][LOC_LEN];
    uint8_t scr[CODEC_MAX_UNITS][LOC_LEN];
    uint8_t *units[CODEC_MAX_UNITS];
    uint8_t *scratch[CODEC_MAX_UNITS];
} stripe;

static void stripe_init(stripe *s, unsigned n, unsigned k)
{
    memset(s, 0, sizeof *s);
    ck_assert_int_eq(codec_create(n, k, CODEC_VERSION_CURRENT, &s->c), 0);
    s->n = n;
    s->k = k;
    uint8_t *data[CODEC_MAX_UNITS], *parity[CODEC_MAX_UNITS];
    for (unsigned u = 0; u < n; u++) {
        if (u < k) {
            rnd_fill(s->orig[u], LOC_LEN);
            data[u] = s->orig[u];
        } else {
            parity[u - k] = s->orig[u];
        }
        s->units[u] = s->work[u];
        s->scratch[u] = s->scr[u];
    }
    codec_encode(s->c, LOC_LEN, data, parity);
    memcpy(s->work, s->orig, sizeof s->work);
}

static void stripe_free(stripe *s)
{
    codec_free(s->c);
}

static uint32_t all_of(const stripe *s)
{
    return (1u << s->n) - 1;
}

/* Flip bytes of unit u: one byte, or a random range, never a no-op. */
static void corrupt(stripe *s, unsigned u)
{
    size_t off = rnd_below(LOC_LEN);
    size_t len = rnd_below(2) ? 1 : 1 + rnd_below(LOC_LEN - off);
    for (size_t i = 0; i < len; i++)
        s->work[u][off + i] ^= (uint8_t)(1 + rnd_below(255));
}

/* A random set of `count` units, none of them in `avoid`. */
static uint32_t random_units(const stripe *s, unsigned count, uint32_t avoid)
{
    uint32_t set = 0;
    while ((unsigned)__builtin_popcount(set) < count) {
        unsigned u = (unsigned)rnd_below(s->n);
        if (!((avoid >> u) & 1u))
            set |= 1u << u;
    }
    return set;
}

static const unsigned CODES[][2] = {{3, 1}, {4, 2}, {5, 4}, {6, 3}, {8, 4}, {8, 6}, {8, 7},
                                    {10, 8}, {12, 8}};
#define N_CODES (sizeof CODES / sizeof CODES[0])

START_TEST(test_cause_of_read_results)
{
    ck_assert_int_eq(dc_scrub_cause_of(0), DC_SCRUB_GOOD);
    ck_assert_int_eq(dc_scrub_cause_of(-EBADMSG), DEPFS_SCRUB_CHECKSUM);
    ck_assert_int_eq(dc_scrub_cause_of(-ENODATA), DEPFS_SCRUB_MISSING);
    ck_assert_int_eq(dc_scrub_cause_of(DC_ERR_DOWN), DEPFS_SCRUB_UNREACHABLE);
    ck_assert_int_eq(dc_scrub_cause_of(-EIO), DEPFS_SCRUB_IO_ERROR);
    ck_assert_int_eq(dc_scrub_cause_of(-EPROTO), DEPFS_SCRUB_IO_ERROR);
}
END_TEST

/* Clean stripes: consistent with more than k units read, unchecked with
 * exactly k, too few below. */
START_TEST(test_clean_stripes)
{
    static stripe s;
    for (unsigned i = 0; i < N_CODES; i++) {
        stripe_init(&s, CODES[i][0], CODES[i][1]);
        for (unsigned unread = 0; unread <= s.n - s.k + 1 && unread < s.n; unread++) {
            uint32_t good = all_of(&s) & ~random_units(&s, unread, 0);
            unsigned bad = 99;
            int v = dc_scrub_locate(s.c, LOC_LEN, s.units, good, s.scratch, &bad);
            int want = unread < s.n - s.k ? DC_SCRUB_CONSISTENT
                     : unread == s.n - s.k ? DC_SCRUB_UNCHECKED : DC_SCRUB_TOO_FEW;
            ck_assert_msg(v == want, "%u@%u, %u unread: verdict %d, want %d", s.n, s.k, unread, v,
                          want);
            ck_assert_uint_eq(bad, 99);
        }
        ck_assert(memcmp(s.work, s.orig, sizeof s.work) == 0); /* units left alone */
        stripe_free(&s);
    }
}
END_TEST

/* One wrong unit: named whenever at least k+2 units were read (n-k >= 2
 * and up to n-k-2 unread), never with k+1 read. */
START_TEST(test_one_wrong_unit_is_located)
{
    static stripe s;
    for (unsigned i = 0; i < N_CODES; i++) {
        stripe_init(&s, CODES[i][0], CODES[i][1]);
        for (unsigned u = 0; u < s.n; u++) {
            for (unsigned unread = 0; unread + 1 <= s.n - s.k; unread++) {
                memcpy(s.work, s.orig, sizeof s.work);
                corrupt(&s, u);
                uint32_t good = all_of(&s) & ~random_units(&s, unread, 1u << u);
                unsigned bad = 99;
                int v = dc_scrub_locate(s.c, LOC_LEN, s.units, good, s.scratch, &bad);
                unsigned read = s.n - unread;
                if (read >= s.k + 2) {
                    ck_assert_msg(v == DC_SCRUB_LOCATED && bad == u,
                                  "%u@%u unit %u wrong, %u unread: verdict %d unit %u", s.n, s.k,
                                  u, unread, v, bad);
                } else {
                    ck_assert_msg(v == DC_SCRUB_UNLOCATED,
                                  "%u@%u unit %u wrong, %u read: verdict %d, want unlocated",
                                  s.n, s.k, u, read, v);
                }
            }
        }
        stripe_free(&s);
    }
}
END_TEST

/* Two wrong units with n-k >= 3 (distance >= 4): no single unit explains
 * them, so none is named (a wrong name would "repair" a good unit). */
START_TEST(test_two_wrong_units_are_never_named)
{
    static stripe s;
    for (unsigned i = 0; i < N_CODES; i++) {
        if (CODES[i][0] - CODES[i][1] < 3)
            continue;
        stripe_init(&s, CODES[i][0], CODES[i][1]);
        for (unsigned round = 0; round < 200; round++) {
            memcpy(s.work, s.orig, sizeof s.work);
            uint32_t wrong = random_units(&s, 2, 0);
            for (unsigned u = 0; u < s.n; u++)
                if ((wrong >> u) & 1u)
                    corrupt(&s, u);
            unsigned bad = 99;
            int v = dc_scrub_locate(s.c, LOC_LEN, s.units, all_of(&s), s.scratch, &bad);
            ck_assert_msg(v == DC_SCRUB_UNLOCATED, "%u@%u units %#x wrong: verdict %d unit %u",
                          s.n, s.k, wrong, v, bad);
        }
        stripe_free(&s);
    }
}
END_TEST

/* Repair as eng_scrub.c does it: decode plan.rebuild from the units that
 * are neither bad nor rebuilt; every rebuilt unit must be the original. */
static void apply_plan(stripe *s, uint32_t bad, const dc_scrub_plan *p)
{
    bool present[CODEC_MAX_UNITS], want[CODEC_MAX_UNITS];
    for (unsigned u = 0; u < s->n; u++) {
        present[u] = !((bad >> u) & 1u) && !((p->rebuild >> u) & 1u);
        want[u] = (p->rebuild >> u) & 1u;
    }
    ck_assert_int_eq(codec_decode_want(s->c, LOC_LEN, s->units, present, want), 0);
    for (unsigned u = 0; u < s->n; u++)
        if (want[u])
            ck_assert_msg(memcmp(s->work[u], s->orig[u], LOC_LEN) == 0, "unit %u rebuilt wrong", u);
}

static void plan_of(stripe *s, uint32_t bad, uint32_t unreachable, dc_scrub_plan *p)
{
    ck_assert_int_eq(dc_scrub_plan_stripe(s->c, LOC_LEN, s->units, bad, unreachable, s->scratch, p),
                     0);
}

START_TEST(test_plans)
{
    static stripe s;
    dc_scrub_plan p;
    stripe_init(&s, 8, 6);
    /* a data unit, then a parity unit, wrong with every unit read */
    for (unsigned u = 2; u < 8; u += 5) {
        memcpy(s.work, s.orig, sizeof s.work);
        corrupt(&s, u);
        plan_of(&s, 0, 0, &p);
        ck_assert_int_eq(p.verdict, DC_SCRUB_LOCATED);
        ck_assert_uint_eq(p.located, u);
        ck_assert_uint_eq(p.rebuild, 1u << u);
        ck_assert(!p.rewrite_parity && !p.unrepairable);
        apply_plan(&s, 0, &p);
    }
    /* one unit unread (checksum, I/O error): rebuilt; the others agree */
    memcpy(s.work, s.orig, sizeof s.work);
    memset(s.work[3], 0, LOC_LEN);
    plan_of(&s, 1u << 3, 0, &p);
    ck_assert_int_eq(p.verdict, DC_SCRUB_CONSISTENT);
    ck_assert_uint_eq(p.rebuild, 1u << 3);
    apply_plan(&s, 1u << 3, &p);
    /* n-k unread: rebuilt unchecked */
    memset(s.work[1], 0, LOC_LEN);
    memset(s.work[6], 0, LOC_LEN);
    plan_of(&s, (1u << 1) | (1u << 6), 0, &p);
    ck_assert_int_eq(p.verdict, DC_SCRUB_UNCHECKED);
    ck_assert_uint_eq(p.rebuild, (1u << 1) | (1u << 6));
    apply_plan(&s, (1u << 1) | (1u << 6), &p);
    /* an unreachable unit is never rebuilt; the other bad one is */
    memset(s.work[1], 0, LOC_LEN);
    plan_of(&s, (1u << 1) | (1u << 4), 1u << 4, &p);
    ck_assert_uint_eq(p.rebuild, 1u << 1);
    apply_plan(&s, (1u << 1) | (1u << 4), &p);
    /* more than n-k bad: nothing */
    plan_of(&s, (1u << 0) | (1u << 4) | (1u << 7), 0, &p);
    ck_assert_int_eq(p.verdict, DC_SCRUB_TOO_FEW);
    ck_assert(p.unrepairable);
    ck_assert_uint_eq(p.rebuild, 0);
    /* a unit unread and another wrong: k+1 read disagree, nobody trusted */
    memcpy(s.work, s.orig, sizeof s.work);
    corrupt(&s, 5);
    plan_of(&s, 1u << 0, 0, &p);
    ck_assert_int_eq(p.verdict, DC_SCRUB_UNLOCATED);
    ck_assert(p.unrepairable && !p.rewrite_parity);
    ck_assert_uint_eq(p.rebuild, 0);
    stripe_free(&s);

    /* n-k == 1: a mismatch cannot be located; parity is rewritten */
    stripe_init(&s, 8, 7);
    corrupt(&s, 3);
    plan_of(&s, 0, 0, &p);
    ck_assert_int_eq(p.verdict, DC_SCRUB_UNLOCATED);
    ck_assert(p.rewrite_parity && !p.unrepairable);
    ck_assert_uint_eq(p.rebuild, 0);
    stripe_free(&s);
}
END_TEST

int main(void)
{
    seed_rng_default(0x9E3779B97F4A7C15ull);
    Suite *s = suite_create("scrub_locate");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cause_of_read_results);
    tcase_add_test(tc, test_clean_stripes);
    tcase_add_test(tc, test_one_wrong_unit_is_located);
    tcase_add_test(tc, test_two_wrong_units_are_never_named);
    tcase_add_test(tc, test_plans);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
