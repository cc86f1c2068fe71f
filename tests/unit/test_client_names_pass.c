/* test_client_names_pass.c - libdepfs's table of the callers a names
 * refusal lets go on (client/lib/core_names_pass.c): a pair noted is
 * found for that caller only, its epoch only ever raised, until it is
 * forgotten (or no longer above the epoch a request shows); past
 * DC_NAMES_PASS_MAX pairs the least recently used goes, and a pair looked
 * at counts as used; inode 0 is never kept. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "core_names_pass.h"

static dc_names_pass p;

static void setup(void) { dc_names_pass_init(&p); }
static void teardown(void) { dc_names_pass_destroy(&p); }

START_TEST(test_per_caller_and_epoch)
{
    uint64_t e = 0;
    ck_assert(!dc_names_pass_epoch(&p, 7, 1, 0, &e));
    dc_names_pass_note(&p, 7, 1, 50);
    ck_assert(dc_names_pass_epoch(&p, 7, 1, 0, &e));
    ck_assert_uint_eq(e, 50);
    ck_assert(!dc_names_pass_epoch(&p, 7, 2, 0, &e)); /* another caller */
    ck_assert(!dc_names_pass_epoch(&p, 8, 1, 0, &e)); /* another inode */
    dc_names_pass_note(&p, 7, 1, 40);              /* never lowered */
    ck_assert(dc_names_pass_epoch(&p, 7, 1, 0, &e));
    ck_assert_uint_eq(e, 50);
    dc_names_pass_note(&p, 7, 1, 60);
    ck_assert(dc_names_pass_epoch(&p, 7, 1, 0, &e));
    ck_assert_uint_eq(e, 60);
    dc_names_pass_note(&p, 0, 1, 60);
    ck_assert(!dc_names_pass_epoch(&p, 0, 1, 0, &e));
    ck_assert_uint_eq(atomic_load(&p.count), 1);
    dc_names_pass_forget(&p, 7, 2); /* not that caller's: nothing */
    ck_assert(dc_names_pass_epoch(&p, 7, 1, 0, &e));
    dc_names_pass_forget(&p, 7, 1);
    ck_assert(!dc_names_pass_epoch(&p, 7, 1, 0, &e));
    ck_assert_uint_eq(atomic_load(&p.count), 0);
    /* a pair not above the epoch shown is of no more use: forgotten */
    dc_names_pass_note(&p, 9, 1, 70);
    ck_assert(dc_names_pass_epoch(&p, 9, 1, 69, &e));
    ck_assert_uint_eq(e, 70);
    ck_assert(!dc_names_pass_epoch(&p, 9, 1, 70, &e));
    ck_assert_uint_eq(atomic_load(&p.count), 0);
    ck_assert(!dc_names_pass_epoch(&p, 9, 1, 0, &e));
}
END_TEST

START_TEST(test_bound_least_recently_used)
{
    uint64_t e = 0;
    for (uint64_t i = 1; i <= DC_NAMES_PASS_MAX; i++)
        dc_names_pass_note(&p, 100 + i, i, i);
    ck_assert_uint_eq(atomic_load(&p.count), DC_NAMES_PASS_MAX);
    ck_assert(dc_names_pass_epoch(&p, 101, 1, 0, &e)); /* the oldest, used again */
    dc_names_pass_note(&p, 999, 999, 1);            /* takes the second oldest's place */
    ck_assert_uint_eq(atomic_load(&p.count), DC_NAMES_PASS_MAX);
    ck_assert(dc_names_pass_epoch(&p, 101, 1, 0, &e));
    ck_assert(!dc_names_pass_epoch(&p, 102, 2, 0, &e));
    ck_assert(dc_names_pass_epoch(&p, 999, 999, 0, &e));
    for (uint64_t i = 3; i <= DC_NAMES_PASS_MAX; i++)
        ck_assert(dc_names_pass_epoch(&p, 100 + i, i, 0, &e));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_names_pass");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_per_caller_and_epoch);
    tcase_add_test(tc, test_bound_least_recently_used);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
