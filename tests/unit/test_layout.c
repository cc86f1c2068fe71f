/* test_layout.c - property tests of the stripe math over random layouts. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "layout.h"
#include "tests/lib/rng.h"

#define RANDOM_LAYOUTS 2000
#define OFFSETS_PER_LAYOUT 50

static layout random_layout(void)
{
    layout l;
    memset(&l, 0, sizeof(l));
    l.n = 1 + rnd_below(LAYOUT_MAX_N);
    l.k = 1 + rnd_below(l.n);
    /* mostly small units, sometimes the largest */
    l.su = rnd_below(8) == 0 ? LAYOUT_MAX_SU : 512u * (1 + rnd_below(256));
    l.version = 1;
    l.codec_version = CODEC_VERSION_CURRENT;
    uint32_t base = rnd_below(1000);
    for (unsigned i = 0; i < l.n; i++)
        l.servers[i] = base + 3 * i; /* distinct */
    return l;
}

/* A random offset: small, near a stripe boundary, or large. */
static uint64_t random_offset(const layout *l)
{
    uint64_t sb = layout_stripe_bytes(l);
    switch (rnd_below(3)) {
    case 0: return rnd_below(4 * (uint32_t)(sb > (1u << 28) ? (1u << 28) : sb));
    case 1: return (rnd() % 1000) * sb + rnd_below(3) - 1 + sb;
    default: return rnd() % (1ull << 50);
    }
}

START_TEST(test_validate)
{
    char why[128];
    layout l = random_layout();
    ck_assert_int_eq(layout_validate(&l, why, sizeof(why)), 0);

    layout b = l;
    b.n = 0;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "n (0)"));
    b = l;
    b.n = LAYOUT_MAX_N + 1;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    b = l;
    b.k = 0;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "k (0)"));
    b = l;
    b.k = b.n + 1;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "> n"));
    b = l;
    b.su = 1000;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "multiple of 512"));
    b.su = 0;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    b.su = LAYOUT_MAX_SU + 512;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    b = l;
    b.codec_version = 77;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "codec"));
    b = l;
    b.n = 4;
    b.k = 2;
    b.servers[0] = 5; b.servers[1] = 6; b.servers[2] = 7; b.servers[3] = 5;
    ck_assert_int_eq(layout_validate(&b, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "twice"));
    ck_assert_int_eq(layout_validate(&b, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(test_locate_roundtrip)
{
    for (int t = 0; t < RANDOM_LAYOUTS; t++) {
        layout l = random_layout();
        for (int o = 0; o < OFFSETS_PER_LAYOUT; o++) {
            uint64_t off = random_offset(&l);
            unit_addr a = layout_locate(&l, off);
            ck_assert_uint_lt(a.unit, l.k);
            ck_assert_uint_lt(a.off_in_unit, l.su);
            ck_assert_uint_eq(a.stripe, layout_stripe_of(&l, off));
            ck_assert_uint_eq(a.stripe * layout_stripe_bytes(&l) + (uint64_t)a.unit * l.su + a.off_in_unit, off);
        }
    }
    /* a fixed example: 8@6 with 64 KiB units */
    layout l = { .n = 8, .k = 6, .su = 65536, .codec_version = CODEC_VERSION_CURRENT };
    unit_addr a = layout_locate(&l, 6 * 65536 + 2 * 65536 + 7);
    ck_assert_uint_eq(a.stripe, 1);
    ck_assert_uint_eq(a.unit, 2);
    ck_assert_uint_eq(a.off_in_unit, 7);
}
END_TEST

START_TEST(test_pieces_tile_range)
{
    for (int t = 0; t < RANDOM_LAYOUTS; t++) {
        layout l = random_layout();
        uint64_t sb = layout_stripe_bytes(&l);
        uint64_t off = random_offset(&l);
        uint64_t len = rnd_below(6) == 0 ? 0 : 1 + rnd() % (5 * sb);
        uint64_t count = layout_piece_count(&l, off, len);
        if (len == 0) {
            ck_assert_uint_eq(count, 0);
            continue;
        }
        ck_assert_uint_ge(count, 1);
        ck_assert_uint_le(count, len / sb + 2);
        uint64_t next = off;
        for (uint64_t i = 0; i < count; i++) {
            stripe_piece p = layout_piece(&l, off, len, i);
            ck_assert_uint_eq(p.file_off, next);           /* in order, no gaps */
            ck_assert_uint_gt(p.len, 0);
            ck_assert_uint_eq(p.stripe, layout_stripe_of(&l, p.file_off));
            ck_assert_uint_eq(p.stripe, layout_stripe_of(&l, p.file_off + p.len - 1));
            ck_assert_uint_eq(p.off_in_stripe, p.file_off - p.stripe * sb);
            ck_assert_uint_le((uint64_t)p.off_in_stripe + p.len, sb);
            ck_assert(p.full == (p.len == sb));
            if (p.full)
                ck_assert_uint_eq(p.off_in_stripe, 0);
            if (i > 0 && i + 1 < count)
                ck_assert(p.full);                        /* middle pieces are whole */
            unit_addr a = layout_locate(&l, p.file_off);
            ck_assert_uint_eq((uint64_t)a.unit * l.su + a.off_in_unit, p.off_in_stripe);
            next += p.len;
        }
        ck_assert_uint_eq(next, off + len);                  /* exact cover */
    }
}
END_TEST

START_TEST(test_rotation)
{
    for (int t = 0; t < RANDOM_LAYOUTS / 4; t++) {
        layout l = random_layout();
        bool parity_seen[LAYOUT_MAX_N] = { false };
        bool data0_seen[LAYOUT_MAX_N] = { false };
        uint64_t first = rnd() % (1ull << 40);
        for (uint64_t s = first; s < first + l.n; s++) {
            bool pos_used[LAYOUT_MAX_N] = { false };
            for (unsigned u = 0; u < l.n; u++) {
                unsigned pos = layout_unit_pos(&l, s, u);
                ck_assert_uint_lt(pos, l.n);
                ck_assert(!pos_used[pos]);                    /* a permutation */
                pos_used[pos] = true;
                ck_assert_uint_eq(layout_pos_unit(&l, s, pos), u);
                ck_assert_uint_eq(layout_unit_server(&l, s, u), l.servers[pos]);
                if (u >= l.k)
                    parity_seen[pos] = true;
                if (u == 0)
                    data0_seen[pos] = true;
            }
        }
        for (unsigned pos = 0; pos < l.n; pos++) {
            ck_assert(data0_seen[pos]);
            if (l.n > l.k)
                ck_assert_msg(parity_seen[pos], "n=%u k=%u: position %u never holds parity",
                              l.n, l.k, pos);
        }
    }
    /* the documented rule: unit u of stripe s on servers[(u + s) % n] */
    layout l = { .n = 5, .k = 3, .su = 4096, .codec_version = CODEC_VERSION_CURRENT,
                 .servers = { 10, 11, 12, 13, 14 } };
    ck_assert_uint_eq(layout_unit_server(&l, 0, 0), 10);
    ck_assert_uint_eq(layout_unit_server(&l, 0, 4), 14);
    ck_assert_uint_eq(layout_unit_server(&l, 1, 4), 10);
    ck_assert_uint_eq(layout_unit_server(&l, 7, 3), 10);
    ck_assert_uint_eq(layout_pos_unit(&l, 7, 0), 3);
}
END_TEST

START_TEST(test_local_size)
{
    for (int t = 0; t < RANDOM_LAYOUTS; t++) {
        layout l = random_layout();
        unsigned pos = rnd_below(l.n);
        ck_assert_uint_eq(layout_local_size(&l, 0, pos), 0);
        uint64_t size = 1 + random_offset(&l);
        uint64_t local = layout_local_size(&l, size, pos);
        ck_assert_uint_eq(local % l.su, 0);
        /* the last file byte's unit (and every unit of that stripe) fits */
        unit_addr last = layout_locate(&l, size - 1);
        ck_assert_uint_eq(local, layout_local_offset(&l, last.stripe) + l.su);
        /* and nothing beyond: one byte less than a unit would drop data */
        ck_assert_uint_gt(local, layout_local_offset(&l, last.stripe) + last.off_in_unit);
    }
    layout l = { .n = 4, .k = 2, .su = 1024, .codec_version = CODEC_VERSION_CURRENT };
    ck_assert_uint_eq(layout_local_size(&l, 1, 0), 1024);
    ck_assert_uint_eq(layout_local_size(&l, 2048, 3), 1024);
    ck_assert_uint_eq(layout_local_size(&l, 2049, 3), 2048);
}
END_TEST

START_TEST(test_choose_servers)
{
    uint32_t ids[40];
    for (unsigned i = 0; i < 40; i++)
        ids[i] = 100 + i;
    layout l = { .n = 8, .k = 6 };
    ck_assert_int_eq(layout_choose_servers(&l, ids, 7, 1), -EINVAL);
    unsigned used[40] = { 0 };
    for (uint64_t seed = 0; seed < 400; seed++) {
        unsigned count = 8 + (unsigned)(seed % 33);
        ck_assert_int_eq(layout_choose_servers(&l, ids, count, seed), 0);
        l.su = LAYOUT_DEFAULT_SU;
        l.codec_version = CODEC_VERSION_CURRENT;
        ck_assert_int_eq(layout_validate(&l, NULL, 0), 0); /* distinct */
        ck_assert_uint_eq(l.servers[0], ids[seed % count]);
        for (unsigned i = 0; i < l.n; i++) {
            ck_assert_uint_eq(l.servers[i], ids[(seed % count + i) % count]);
            used[l.servers[i] - 100]++;
        }
    }
    for (unsigned i = 0; i < 40; i++)
        ck_assert_uint_gt(used[i], 0); /* files spread over every server */
}
END_TEST

int main(void)
{
    seed_rng_default(0x2545F4914F6CDD1Dull);
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_validate);
    tcase_add_test(tc, test_locate_roundtrip);
    tcase_add_test(tc, test_pieces_tile_range);
    tcase_add_test(tc, test_rotation);
    tcase_add_test(tc, test_local_size);
    tcase_add_test(tc, test_choose_servers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
