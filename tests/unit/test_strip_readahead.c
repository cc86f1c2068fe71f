/* test_strip_readahead.c - the I/O server's read-ahead planning
 * (ioserver/strip_readahead.c): a fault-free reader gets its data units
 * read ahead and never a parity unit, over random layouts; a reader of
 * every unit gets one contiguous range; windows double up to their cap;
 * random reads, reads close together but never where another ended, and
 * random reads around the head of a sequential stream read nothing ahead;
 * readers of different regions of one
 * file keep their own streams; no plan while half a window is ahead. */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ioserver/strip_readahead.h"
#include "layout.h"
#include "tests/lib/rng.h"

#define RANDOM_LAYOUTS 300
#define READS_PER_STREAM 64
#define FAR_APART (1ull << 40) /* random reads this far apart continue nothing */

static ios_data_units random_units(void)
{
    ios_data_units u;
    u.n = 1 + rnd_below(LAYOUT_MAX_N);
    u.k = 1 + rnd_below(u.n);
    u.pos = rnd_below(u.n);
    u.su = rnd_below(4) == 0 ? LAYOUT_MIN_SU : LAYOUT_MIN_SU * (1 + rnd_below(256));
    return u;
}

static bool is_data(const ios_data_units *u, uint64_t stripe)
{
    const layout l = { .n = u->n, .k = u->k, .su = u->su };
    return layout_pos_unit(&l, stripe, u->pos) < u->k;
}

/* The next data unit of u at or after stripe s (u has k >= 1: within n). */
static uint64_t next_data(const ios_data_units *u, uint64_t s)
{
    while (!is_data(u, s))
        s++;
    return s;
}

/* A fault-free reader reads its data units from the file's start, one
 * unit a read: whatever is planned is data units only, in order, never
 * planned twice, and the data units between the reader and the furthest
 * plan are all planned (none skipped). */
START_TEST(data_reader_reads_ahead_data_units_only)
{
    for (int t = 0; t < RANDOM_LAYOUTS; t++) {
        ios_data_units u = random_units();
        ios_ra_file f = { 0 };
        ios_extent out[IOS_RA_MAX_RANGES];
        uint64_t planned_to = 0, s = 0, planned_units = 0;
        for (int i = 0; i < READS_PER_STREAM; i++) {
            s = next_data(&u, s);
            size_t n = ios_ra_plan(&f, &u, s * u.su, (s + 1) * u.su, out);
            ck_assert_uint_le(n, IOS_RA_MAX_RANGES);
            for (size_t j = 0; j < n; j++) {
                ck_assert_uint_gt(out[j].length, 0);
                ck_assert_uint_ge(out[j].offset, planned_to); /* in order, once */
                for (uint64_t a = planned_to / u.su; a < out[j].offset / u.su; a++)
                    ck_assert_msg(!is_data(&u, a) || a <= s,
                                  "%u@%u pos %u su %u: data unit %llu skipped", u.n, u.k,
                                  u.pos, u.su, (unsigned long long)a);
                for (uint64_t b = out[j].offset; b < out[j].offset + out[j].length; b += u.su)
                    ck_assert_msg(is_data(&u, b / u.su),
                                  "%u@%u pos %u: parity unit %llu read ahead", u.n, u.k, u.pos,
                                  (unsigned long long)(b / u.su));
                planned_to = out[j].offset + out[j].length;
                planned_units += out[j].length / u.su;
            }
            s++;
        }
        ck_assert_uint_gt(planned_units, 0);
    }
}
END_TEST

/* A reader of every unit (a degraded read, a rebuild) gets one contiguous
 * range each plan, each starting where the last ended. */
START_TEST(every_unit_reader_reads_ahead_contiguously)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 128u << 10;
    uint64_t planned_to = 0;
    unsigned plans = 0;
    for (uint64_t at = 0; at < 64 * piece; at += piece) {
        size_t n = ios_ra_plan(&f, NULL, at, at + piece, out);
        ck_assert_uint_le(n, 1);
        if (n == 0)
            continue;
        ck_assert_uint_eq(out[0].offset, planned_to == 0 ? at + piece : planned_to);
        ck_assert_uint_le(out[0].length, IOS_RA_MAX_BYTES);
        planned_to = out[0].offset + out[0].length;
        plans++;
    }
    ck_assert_uint_gt(plans, 1);
    ck_assert_uint_gt(planned_to, 64 * piece);
}
END_TEST

/* Windows start at IOS_RA_MIN_BYTES (or twice the first read), double with
 * each read and stop at IOS_RA_MAX_BYTES; a tiny stripe unit caps a data
 * reader's window so that one plan's ranges always fit. */
START_TEST(window_doubles_to_its_cap)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 4096;
    ios_ra_plan(&f, NULL, 0, piece, out);
    ck_assert_uint_eq(f.s[0].window, IOS_RA_MIN_BYTES);
    uint64_t last = f.s[0].window;
    for (uint64_t at = piece; at < 64 * piece; at += piece) {
        ios_ra_plan(&f, NULL, at, at + piece, out);
        ck_assert_uint_eq(f.s[0].window, last * 2 > IOS_RA_MAX_BYTES ? IOS_RA_MAX_BYTES : last * 2);
        last = f.s[0].window;
    }
    ck_assert_uint_eq(last, IOS_RA_MAX_BYTES);

    /* 32@1 with 512-byte units: a data unit every 32, the window capped */
    ios_data_units u = { .n = LAYOUT_MAX_N, .k = 1, .pos = 0, .su = LAYOUT_MIN_SU };
    f = (ios_ra_file){ 0 };
    for (uint64_t s = 0; s < 64 * LAYOUT_MAX_N; s += LAYOUT_MAX_N) {
        size_t n = ios_ra_plan(&f, &u, s * u.su, (s + 1) * u.su, out);
        ck_assert_uint_le(n, IOS_RA_MAX_RANGES);
    }
    ck_assert_uint_le(f.s[0].window, (uint64_t)(IOS_RA_MAX_RANGES - 1) * u.n * u.su);
}
END_TEST

/* Reads far apart, none at the file's start, read nothing ahead. */
START_TEST(random_reads_read_nothing_ahead)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    ios_data_units u = { .n = 8, .k = 6, .pos = 3, .su = 65536 };
    for (uint64_t i = 1; i <= 100; i++) {
        uint64_t at = i * FAR_APART + rnd_below(1u << 20) * 4096ull;
        ck_assert_uint_eq(ios_ra_plan(&f, i % 2 ? &u : NULL, at, at + 4096, out), 0);
    }
}
END_TEST

/* Reads close together but none where another ended (a random reader of
 * a small region) read nothing ahead: only a read where a stream ended
 * makes it sequential. */
START_TEST(near_but_not_sequential_reads_read_nothing_ahead)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 4096;
    const unsigned order[] = { 3, 7, 1, 5, 9, 12, 10, 14, 2, 6, 11, 15, 4, 8, 13, 16 };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        uint64_t at = 2 * order[i] * piece; /* never where a read ended */
        ck_assert_uint_eq(ios_ra_plan(&f, NULL, at, at + piece, out), 0);
    }
}
END_TEST

/* Random reads within the window of a sequential stream (a random reader
 * after a sequential one, in one file), none where one ended nor within
 * IOS_RA_REORDER lengths of the stream's last read of where it has got
 * to: none continues it, and none reads anything ahead. */
START_TEST(random_reads_near_a_stream_read_nothing_ahead)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 64u << 10, small = 4096;
    for (uint64_t at = 0; at < 16 * piece; at += piece)
        ios_ra_plan(&f, NULL, at, at + piece, out);
    uint64_t head = 16 * piece;
    unsigned plans = 0;
    for (uint64_t i = 1; i <= 32; i++) { /* within its window, none where one ended */
        uint64_t at = head + ((i * 37) % 63 + 1) * (IOS_RA_MAX_BYTES / 64) + small;
        plans += ios_ra_plan(&f, NULL, at, at + small, out) > 0;
    }
    ck_assert_uint_eq(plans, 0);
}
END_TEST

/* Two readers of different regions of one file, taking turns (MPI ranks
 * with a region each): both streams grow and both read ahead. */
START_TEST(interleaved_readers_keep_their_streams)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 256u << 10, region_b = FAR_APART;
    uint64_t ahead_a = 0, ahead_b = 0;
    for (uint64_t at = 0; at < 32 * piece; at += piece) {
        size_t n = ios_ra_plan(&f, NULL, at, at + piece, out);
        if (n)
            ahead_a = out[n - 1].offset + out[n - 1].length;
        n = ios_ra_plan(&f, NULL, region_b + at, region_b + at + piece, out);
        if (n)
            ahead_b = out[n - 1].offset + out[n - 1].length;
    }
    ck_assert_uint_gt(ahead_a, 32 * piece);
    ck_assert_uint_lt(ahead_a, region_b);
    ck_assert_uint_gt(ahead_b, region_b + 32 * piece);
}
END_TEST

/* A stream one every-unit read continued reads every unit ahead from then
 * on: its readers want the parity units too. */
START_TEST(an_every_unit_read_widens_the_stream)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    ios_data_units u = { .n = 8, .k = 6, .pos = 0, .su = 65536 };
    /* stripes 1 and 2 are parity at position 0: the plan starts at 3 */
    ck_assert_uint_ge(ios_ra_plan(&f, &u, 0, u.su, out), 1);
    ck_assert_uint_eq(out[0].offset, 3 * u.su);
    ck_assert(f.s[0].has_units);
    uint64_t at = f.s[0].next;
    ios_ra_plan(&f, NULL, at, at + u.su, out);
    ck_assert(!f.s[0].has_units);
    size_t n = 0;
    for (at += u.su; n == 0 && at < 1024ull * u.su; at += u.su)
        n = ios_ra_plan(&f, &u, at, at + u.su, out);
    ck_assert_uint_eq(n, 1); /* one contiguous range, parity units and all */
    bool parity = false;
    for (uint64_t b = out[0].offset; b < out[0].offset + out[0].length; b += u.su)
        parity |= !is_data(&u, b / u.su);
    ck_assert(parity);
}
END_TEST

/* After a plan, reads that leave more than half the window ahead plan
 * nothing (one hint per half window, not one per read). */
START_TEST(no_plan_while_half_the_window_is_ahead)
{
    ios_ra_file f = { 0 };
    ios_extent out[IOS_RA_MAX_RANGES];
    const uint64_t piece = 4096;
    unsigned plans = 0, reads = 0;
    for (uint64_t at = 0; at < 4 * IOS_RA_MAX_BYTES; at += piece, reads++)
        plans += ios_ra_plan(&f, NULL, at, at + piece, out) > 0;
    ck_assert_uint_gt(plans, 0);
    ck_assert_uint_lt(plans * 16, reads);
}
END_TEST

int main(void)
{
    seed_rng();
    Suite *s = suite_create("strip_readahead");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, data_reader_reads_ahead_data_units_only);
    tcase_add_test(tc, every_unit_reader_reads_ahead_contiguously);
    tcase_add_test(tc, window_doubles_to_its_cap);
    tcase_add_test(tc, random_reads_read_nothing_ahead);
    tcase_add_test(tc, near_but_not_sequential_reads_read_nothing_ahead);
    tcase_add_test(tc, random_reads_near_a_stream_read_nothing_ahead);
    tcase_add_test(tc, interleaved_readers_keep_their_streams);
    tcase_add_test(tc, an_every_unit_read_widens_the_stream);
    tcase_add_test(tc, no_plan_while_half_the_window_is_ahead);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
