/* test_codec_want.c - codec_decode_want: rebuilding only the wanted missing
 * units (what a degraded read needs), for every erasure pattern and wanted
 * subset of small codes; unwanted missing buffers stay untouched (or NULL),
 * and the decode-table cache keeps (present, wanted) pairs apart. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "tests/lib/rng.h"

#define WANT_MAX_N 8u
#define WANT_LEN 80u
#define UNTOUCHED_BYTE 0x5A

typedef struct units {
    unsigned n, k;
    uint8_t orig[CODEC_MAX_UNITS][WANT_LEN];
    uint8_t work[CODEC_MAX_UNITS][WANT_LEN];
    uint8_t *ptr[CODEC_MAX_UNITS];
} units;

static void units_init(units *s, const codec *c)
{
    uint8_t *data[CODEC_MAX_UNITS], *parity[CODEC_MAX_UNITS];
    s->n = codec_n(c);
    s->k = codec_k(c);
    for (unsigned u = 0; u < s->n; u++) {
        rnd_fill(s->orig[u], WANT_LEN);
        if (u < s->k)
            data[u] = s->orig[u];
        else
            parity[u - s->k] = s->orig[u];
    }
    codec_encode(c, WANT_LEN, data, parity);
}

/* Decode with `missing` erased and `wanted` asked for: wanted units match
 * the originals, other missing units keep UNTOUCHED_BYTE (or are NULL). */
static void check_want(const codec *c, units *s, uint32_t missing, uint32_t wanted, bool nulls)
{
    bool present[CODEC_MAX_UNITS], want[CODEC_MAX_UNITS];
    uint8_t untouched[WANT_LEN];
    memset(untouched, UNTOUCHED_BYTE, sizeof untouched);
    for (unsigned u = 0; u < s->n; u++) {
        present[u] = !((missing >> u) & 1u);
        want[u] = (wanted >> u) & 1u;
        if (present[u])
            memcpy(s->work[u], s->orig[u], WANT_LEN);
        else
            memset(s->work[u], UNTOUCHED_BYTE, WANT_LEN);
        s->ptr[u] = nulls && !present[u] && !want[u] ? NULL : s->work[u];
    }
    ck_assert_int_eq(codec_decode_want(c, WANT_LEN, s->ptr, present, want), 0);
    for (unsigned u = 0; u < s->n; u++) {
        if (present[u] || want[u]) {
            ck_assert_msg(memcmp(s->work[u], s->orig[u], WANT_LEN) == 0,
                          "n=%u k=%u missing=%#x wanted=%#x: unit %u differs", s->n, s->k,
                          missing, wanted, u);
            continue;
        }
        ck_assert_msg(memcmp(s->work[u], untouched, WANT_LEN) == 0,
                      "n=%u k=%u missing=%#x wanted=%#x: unwanted unit %u written", s->n, s->k,
                      missing, wanted, u);
    }
}

/* Every (k, n <= WANT_MAX_N), every pattern of up to n-k erasures, every
 * subset of the erased units wanted (twice: the second pass hits the cache). */
START_TEST(test_every_wanted_subset)
{
    static units s;
    for (unsigned n = 2; n <= WANT_MAX_N; n++) {
        for (unsigned k = 1; k < n; k++) {
            codec *c = NULL;
            ck_assert_int_eq(codec_create(n, k, CODEC_VERSION_CURRENT, &c), 0);
            units_init(&s, c);
            for (unsigned pass = 0; pass < 2; pass++) {
                for (uint32_t missing = 1; missing < (1u << n); missing++) {
                    if ((unsigned)__builtin_popcount(missing) > n - k)
                        continue;
                    for (uint32_t wanted = missing;; wanted = (wanted - 1) & missing) {
                        check_want(c, &s, missing, wanted, pass == 1);
                        if (wanted == 0)
                            break;
                    }
                }
            }
            codec_free(c);
        }
    }
}
END_TEST

START_TEST(test_want_null_is_decode_all_and_too_few_is_eio)
{
    static units s;
    codec *c = NULL;
    ck_assert_int_eq(codec_create(8, 6, CODEC_VERSION_CURRENT, &c), 0);
    units_init(&s, c);
    bool present[CODEC_MAX_UNITS];
    for (unsigned u = 0; u < s.n; u++) {
        present[u] = u != 2 && u != 5;
        memcpy(s.work[u], s.orig[u], WANT_LEN);
        if (!present[u])
            memset(s.work[u], UNTOUCHED_BYTE, WANT_LEN);
        s.ptr[u] = s.work[u];
    }
    ck_assert_int_eq(codec_decode_want(c, WANT_LEN, s.ptr, present, NULL), 0);
    for (unsigned u = 0; u < s.n; u++)
        ck_assert_int_eq(memcmp(s.work[u], s.orig[u], WANT_LEN), 0);
    present[0] = false;
    bool want[CODEC_MAX_UNITS] = {[0] = true};
    ck_assert_int_eq(codec_decode_want(c, WANT_LEN, s.ptr, present, want), -EIO);
    codec_free(c);
}
END_TEST

int main(void)
{
    seed_rng_default(0x2545F4914F6CDD1Dull);
    Suite *s = suite_create("codec_want");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_wanted_subset);
    tcase_add_test(tc, test_want_null_is_decode_all_and_too_few_is_eio);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
