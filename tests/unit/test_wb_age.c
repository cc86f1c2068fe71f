/* test_wb_age.c - when write-behind sends a scatter set before it is full
 * (client/lib/eng_wb_age.h), on a clock the test drives: a new writer's set
 * goes out once DC_WB_FIRST_AGE_MS old, never earlier, never an empty set,
 * never beside a flight in the air; a steady writer (a set out within
 * DC_WB_QUIET_MS) keeps filling its sets; a slow one is sent again before
 * the rebuild pace's hold would run out. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "eng_wb_age.h"

#define T0 100000u    /* some time after the clock's start */
#define NEVER 0u      /* no write-behind of the inode went out yet */
#define SOME 16u      /* extents in the set */

START_TEST(new_writer_flies_once_the_set_is_old_enough)
{
    ck_assert(!dc_wb_fly_early(T0, T0, NEVER, SOME, false));
    ck_assert(!dc_wb_fly_early(T0 + DC_WB_FIRST_AGE_MS - 1, T0, NEVER, SOME, false));
    ck_assert(dc_wb_fly_early(T0 + DC_WB_FIRST_AGE_MS, T0, NEVER, SOME, false));
    /* within the pace's busy window: the servers see it while it is still
     * the same burst of writes */
    ck_assert_uint_le(DC_WB_FIRST_AGE_MS, DC_PACE_BUSY_MS);
}
END_TEST

START_TEST(never_empty_never_beside_a_flight)
{
    ck_assert(!dc_wb_fly_early(T0 + DC_WB_QUIET_MS, T0, NEVER, 0, false));
    ck_assert(!dc_wb_fly_early(T0 + DC_WB_QUIET_MS, T0, NEVER, SOME, true));
}
END_TEST

START_TEST(steady_writer_keeps_filling)
{
    uint64_t out = T0 + 1; /* a full set just went out */
    uint64_t first = T0 + 2;
    ck_assert(!dc_wb_fly_early(first + DC_WB_FIRST_AGE_MS, first, out, SOME, false));
    ck_assert(!dc_wb_fly_early(out + DC_WB_QUIET_MS - 1, first, out, SOME, false));
}
END_TEST

START_TEST(slow_writer_seen_within_the_hold)
{
    uint64_t out = T0;
    uint64_t first = T0 + 1;
    uint64_t at = out + DC_WB_QUIET_MS;
    ck_assert(dc_wb_fly_early(at, first, out, SOME, false));
    ck_assert_uint_lt(at - out, DC_PACE_HOLD_MS);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wb_age");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, new_writer_flies_once_the_set_is_old_enough);
    tcase_add_test(tc, never_empty_never_beside_a_flight);
    tcase_add_test(tc, steady_writer_keeps_filling);
    tcase_add_test(tc, slow_writer_seen_within_the_hold);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
