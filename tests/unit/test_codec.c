/* test_codec.c - the RS codec: every (n,k) up to 12, every erasure pattern,
 * delta updates, odd lengths, the on-disk matrix, and concurrent decodes. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "tests/lib/rng.h"

#define EXHAUSTIVE_MAX_N 12u
#define EXHAUSTIVE_LEN 96u
#define GARBAGE_BYTE 0xA5

/* n units of len bytes, data random, parity encoded. */
typedef struct stripe {
    unsigned n, k;
    size_t len;
    uint8_t *orig[CODEC_MAX_UNITS];
    uint8_t *work[CODEC_MAX_UNITS];
} stripe;

static void stripe_init(stripe *s, const codec *c, size_t len)
{
    s->n = codec_n(c);
    s->k = codec_k(c);
    s->len = len;
    for (unsigned u = 0; u < s->n; u++) {
        s->orig[u] = malloc(len ? len : 1);
        s->work[u] = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(s->orig[u]);
        ck_assert_ptr_nonnull(s->work[u]);
        if (u < s->k)
            rnd_fill(s->orig[u], len);
        else
            memset(s->orig[u], GARBAGE_BYTE, len);
    }
    codec_encode(c, len, s->orig, s->orig + s->k);
}

static void stripe_destroy(stripe *s)
{
    for (unsigned u = 0; u < s->n; u++) {
        free(s->orig[u]);
        free(s->work[u]);
    }
}

/* Erase the units in `missing`, decode, expect rc; on success all units match. */
static void check_pattern(const codec *c, stripe *s, uint32_t missing, int expect_rc)
{
    bool present[CODEC_MAX_UNITS];
    for (unsigned u = 0; u < s->n; u++) {
        present[u] = !((missing >> u) & 1u);
        if (present[u])
            memcpy(s->work[u], s->orig[u], s->len);
        else
            memset(s->work[u], GARBAGE_BYTE ^ (int)u, s->len);
    }
    int rc = codec_decode(c, s->len, s->work, present);
    ck_assert_msg(rc == expect_rc, "n=%u k=%u missing=%#x rc=%d want %d", s->n, s->k,
                  missing, rc, expect_rc);
    if (rc != 0)
        return;
    for (unsigned u = 0; u < s->n; u++)
        ck_assert_msg(memcmp(s->work[u], s->orig[u], s->len) == 0,
                      "n=%u k=%u missing=%#x: unit %u differs", s->n, s->k, missing, u);
}

START_TEST(test_create_rejects_bad_params)
{
    codec *c = (codec *)0x1;
    ck_assert_int_eq(codec_create(4, 0, CODEC_VERSION_CURRENT, &c), -EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(codec_create(4, 5, CODEC_VERSION_CURRENT, &c), -EINVAL);
    ck_assert_int_eq(codec_create(CODEC_MAX_UNITS + 1, 2, CODEC_VERSION_CURRENT, &c), -EINVAL);
    ck_assert_int_eq(codec_create(4, 2, 0, &c), -EINVAL);
    ck_assert_int_eq(codec_create(4, 2, 99, &c), -EINVAL);
    ck_assert_int_eq(codec_create(CODEC_MAX_UNITS, CODEC_MAX_UNITS - 4, CODEC_VERSION_CURRENT, &c), 0);
    ck_assert_uint_eq(codec_n(c), CODEC_MAX_UNITS);
    ck_assert_uint_eq(codec_k(c), CODEC_MAX_UNITS - 4);
    codec_free(c);
    codec_free(NULL);
}
END_TEST

/* The generator is on-disk format: pin a few coefficients of the Cauchy
 * matrix (a[i][j] = 1/(i xor j) in GF(2^8), polynomial 0x11d). */
START_TEST(test_matrix_is_pinned)
{
    codec *c;
    ck_assert_int_eq(codec_create(4, 2, CODEC_VERSION_CAUCHY1, &c), 0);
    uint8_t d0[1] = { 1 }, d1[1] = { 0 }, p0[1], p1[1];
    uint8_t *data[2] = { d0, d1 }, *parity[2] = { p0, p1 };
    codec_encode(c, 1, data, parity);
    ck_assert_uint_eq(p0[0], 0x8e); /* 1/2 */
    ck_assert_uint_eq(p1[0], 0xf4); /* 1/3 */
    d0[0] = 0;
    d1[0] = 1;
    codec_encode(c, 1, data, parity);
    ck_assert_uint_eq(p0[0], 0xf4); /* 1/(2^1) = 1/3 */
    ck_assert_uint_eq(p1[0], 0x8e); /* 1/(3^1) = 1/2 */
    codec_free(c);
}
END_TEST

/* Every (n,k), every erasure pattern: up to n-k erasures decode exactly,
 * more fail with -EIO. */
START_TEST(test_every_pattern)
{
    unsigned n = (unsigned)_i;
    for (unsigned k = 1; k <= n; k++) {
        codec *c;
        stripe s;
        ck_assert_int_eq(codec_create(n, k, CODEC_VERSION_CURRENT, &c), 0);
        stripe_init(&s, c, EXHAUSTIVE_LEN);
        for (uint32_t missing = 0; missing < (1u << n); missing++) {
            unsigned cnt = (unsigned)__builtin_popcount(missing);
            check_pattern(c, &s, missing, cnt <= n - k ? 0 : -EIO);
        }
        stripe_destroy(&s);
        codec_free(c);
    }
}
END_TEST

/* Decoding the same pattern twice (cache hit) gives the same answer. */
START_TEST(test_cached_pattern_repeat)
{
    codec *c;
    stripe s;
    ck_assert_int_eq(codec_create(10, 6, CODEC_VERSION_CURRENT, &c), 0);
    stripe_init(&s, c, 512);
    for (int round = 0; round < 3; round++) {
        check_pattern(c, &s, 0x3, 0);
        check_pattern(c, &s, 0x201, 0);
        check_pattern(c, &s, 0xF0, 0);
    }
    stripe_destroy(&s);
    codec_free(c);
}
END_TEST

START_TEST(test_odd_lengths)
{
    static const size_t lens[] = { 1, 2, 15, 31, 33, 63, 4097, 65537 };
    static const unsigned nk[][2] = { { 3, 2 }, { 8, 6 }, { 12, 4 }, { 5, 5 }, { 6, 1 }, { 32, 24 } };
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        for (size_t ci = 0; ci < sizeof(nk) / sizeof(nk[0]); ci++) {
            codec *c;
            stripe s;
            unsigned n = nk[ci][0], k = nk[ci][1];
            ck_assert_int_eq(codec_create(n, k, CODEC_VERSION_CURRENT, &c), 0);
            stripe_init(&s, c, lens[li]);
            for (int trial = 0; trial < 8; trial++) {
                /* random pattern of exactly n-k erasures (the worst case) */
                uint32_t missing = 0;
                while ((unsigned)__builtin_popcount(missing) < n - k)
                    missing |= 1u << rnd_below(n);
                check_pattern(c, &s, missing, 0);
            }
            stripe_destroy(&s);
            codec_free(c);
        }
    }
}
END_TEST

/* Delta update of a sub-range of one data unit == a fresh encode. */
START_TEST(test_update_matches_encode)
{
    const size_t len = 1000;
    for (unsigned n = 1; n <= EXHAUSTIVE_MAX_N; n++) {
        for (unsigned k = 1; k <= n; k++) {
            codec *c;
            stripe s;
            ck_assert_int_eq(codec_create(n, k, CODEC_VERSION_CURRENT, &c), 0);
            stripe_init(&s, c, len);
            for (int trial = 0; trial < 4; trial++) {
                unsigned d = (unsigned)rnd_below(k);
                size_t off = rnd_below(len);
                size_t sub = 1 + rnd_below(len - off);
                uint8_t delta[1000], *par[CODEC_MAX_UNITS], *fresh[CODEC_MAX_UNITS];
                rnd_fill(delta, sub);
                /* new = old ^ delta */
                for (size_t i = 0; i < sub; i++)
                    s.orig[d][off + i] ^= delta[i];
                for (unsigned p = 0; p < n - k; p++) {
                    par[p] = s.orig[k + p] + off;
                    fresh[p] = s.work[p];
                }
                codec_update(c, sub, d, delta, par);
                codec_encode(c, len, s.orig, fresh);
                for (unsigned p = 0; p < n - k; p++)
                    ck_assert_msg(memcmp(fresh[p], s.orig[k + p], len) == 0,
                                  "n=%u k=%u d=%u off=%zu len=%zu parity %u", n, k, d, off, sub, p);
            }
            stripe_destroy(&s);
            codec_free(c);
        }
    }
}
END_TEST

/* Many threads hammering more patterns than the cache holds. */
#define THREADS 6
#define THREAD_ROUNDS 400
/* each thread its own stream: the shared rnd() is not thread-safe */
struct thread_arg { const codec *c; stripe s; int failures; rng_stream rng; };

static void *decode_thread(void *p)
{
    struct thread_arg *a = p;
    bool present[CODEC_MAX_UNITS];
    for (int r = 0; r < THREAD_ROUNDS; r++) {
        uint32_t missing = 0;
        unsigned want = 1 + rng_next(&a->rng) % (a->s.n - a->s.k);
        while ((unsigned)__builtin_popcount(missing) < want)
            missing |= 1u << rng_next(&a->rng) % a->s.n;
        for (unsigned u = 0; u < a->s.n; u++) {
            present[u] = !((missing >> u) & 1u);
            if (present[u])
                memcpy(a->s.work[u], a->s.orig[u], a->s.len);
            else
                memset(a->s.work[u], 0, a->s.len);
        }
        if (codec_decode(a->c, a->s.len, a->s.work, present) != 0)
            a->failures++;
        for (unsigned u = 0; u < a->s.n; u++)
            if (memcmp(a->s.work[u], a->s.orig[u], a->s.len) != 0)
                a->failures++;
    }
    return NULL;
}

START_TEST(test_concurrent_decode)
{
    codec *c;
    pthread_t th[THREADS];
    struct thread_arg args[THREADS];
    ck_assert_int_eq(codec_create(12, 8, CODEC_VERSION_CURRENT, &c), 0);
    for (int i = 0; i < THREADS; i++) {
        args[i].c = c;
        args[i].failures = 0;
        args[i].rng = rng_split();
        stripe_init(&args[i].s, c, 256);
    }
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, decode_thread, &args[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].failures, 0);
        stripe_destroy(&args[i].s);
    }
    codec_free(c);
}
END_TEST

int main(void)
{
    seed_rng_default(0x9E3779B97F4A7C15ull);
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_create_rejects_bad_params);
    tcase_add_test(tc, test_matrix_is_pinned);
    tcase_add_loop_test(tc, test_every_pattern, 1, EXHAUSTIVE_MAX_N + 1);
    tcase_add_test(tc, test_cached_pattern_repeat);
    tcase_add_test(tc, test_odd_lengths);
    tcase_add_test(tc, test_update_matches_encode);
    tcase_add_test(tc, test_concurrent_decode);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
