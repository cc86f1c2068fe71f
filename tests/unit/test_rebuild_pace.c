/* test_rebuild_pace.c - the rebuild's QoS rule (client/lib/core_pace.h),
 * on a clock the test drives: with no limits nothing ever waits; idle, the
 * long-run rate is rebuild_rate; a server that served a client within
 * DC_PACE_BUSY_MS makes it busy, and busy it keeps to rebuild_busy_rate
 * (never to nothing: a rebuild under constant load still moves at that
 * rate) for DC_PACE_HOLD_MS after the last sign of clients, then goes back
 * to full speed; the lower limit wins while busy; busy_rate 0 never
 * yields; clients arriving find no burst saved up while they were away. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "core_pace.h"

#define MIB (1024u * 1024u)
#define BATCH (4u * MIB)       /* what one batch rebuilds */
#define NO_CLIENTS UINT32_MAX  /* no server said anything */
#define CLIENT_NOW 0u          /* a server served a client just now */
#define RUN_MS 20000u          /* a long run, against the bucket's burst */

/* Runs batches back to back for RUN_MS of driven time, each reported with
 * idle_ms, sleeping what the pace says; returns the bytes/s achieved. */
static double run(dc_pace *p, uint64_t *now, uint32_t idle_ms)
{
    uint64_t start = *now, bytes = 0;
    while (*now - start < RUN_MS) {
        uint64_t sleep = dc_pace_take(p, *now, BATCH, idle_ms);
        bytes += BATCH;
        *now += sleep + 1; /* a batch takes a millisecond here */
    }
    return (double)bytes * 1000.0 / (double)(*now - start);
}

START_TEST(unlimited_never_waits)
{
    dc_pace p;
    dc_pace_init(&p, 0, 0);
    uint64_t now = 1000;
    for (unsigned i = 0; i < 1000; i++)
        ck_assert_uint_eq(dc_pace_take(&p, now++, BATCH, CLIENT_NOW), 0);
    ck_assert_uint_eq(p.slept_ms, 0);
}
END_TEST

START_TEST(idle_keeps_rebuild_rate)
{
    dc_pace p;
    dc_pace_init(&p, 100u * MIB, 8u * MIB);
    uint64_t now = 1000;
    double rate = run(&p, &now, NO_CLIENTS);
    ck_assert_msg(rate > 0.95 * 100 * MIB && rate < 1.05 * 100 * MIB, "rate %.0f", rate);
    ck_assert(!dc_pace_busy(&p, now));
    ck_assert_uint_eq(p.busy_bytes, 0);
}
END_TEST

START_TEST(busy_yields_to_the_busy_rate_then_recovers)
{
    dc_pace p;
    dc_pace_init(&p, 0, 8u * MIB);
    uint64_t now = 1000;
    /* clients busy the whole time: the busy rate, not less */
    double rate = run(&p, &now, CLIENT_NOW);
    ck_assert_msg(rate > 0.95 * 8 * MIB && rate < 1.05 * 8 * MIB, "busy rate %.0f", rate);
    ck_assert(dc_pace_busy(&p, now));
    ck_assert_uint_gt(p.busy_bytes, 0);
    /* the last sign of a client: busy until the hold runs out, then
     * unlimited again for batches that see none */
    (void)dc_pace_take(&p, now, BATCH, CLIENT_NOW);
    ck_assert(dc_pace_busy(&p, now + DC_PACE_HOLD_MS - 1));
    now += DC_PACE_HOLD_MS;
    ck_assert(!dc_pace_busy(&p, now));
    for (unsigned i = 0; i < 100; i++)
        ck_assert_uint_eq(dc_pace_take(&p, now++, BATCH, DC_PACE_BUSY_MS), 0);
    ck_assert_uint_gt(p.idle_bytes, 0);
}
END_TEST

START_TEST(lower_limit_wins_while_busy)
{
    dc_pace p;
    dc_pace_init(&p, 4u * MIB, 64u * MIB);
    uint64_t now = 1000;
    double rate = run(&p, &now, CLIENT_NOW);
    ck_assert_msg(rate < 1.05 * 4 * MIB, "rate %.0f", rate);
}
END_TEST

START_TEST(busy_rate_zero_never_yields)
{
    dc_pace p;
    dc_pace_init(&p, 0, 0);
    uint64_t now = 1000;
    for (unsigned i = 0; i < 100; i++)
        ck_assert_uint_eq(dc_pace_take(&p, now++, BATCH, CLIENT_NOW), 0);
    ck_assert(dc_pace_busy(&p, now - 1)); /* seen, not obeyed */
}
END_TEST

/* The first batch that sees clients must already be paid for at the busy
 * rate: what the bucket saved while idle (or a fresh bucket's burst after
 * running unlimited) is not spent on top of them. */
static void first_busy_batch_waits(uint64_t idle_rate, uint64_t busy_rate)
{
    dc_pace p;
    dc_pace_init(&p, idle_rate, busy_rate);
    uint64_t now = 1000;
    (void)run(&p, &now, NO_CLIENTS);
    now += RUN_MS; /* a long idle pause: the bucket fills up */
    ck_assert_uint_eq(dc_pace_take(&p, now, BATCH, NO_CLIENTS), 0);
    now += RUN_MS;
    uint64_t want_ms = (uint64_t)BATCH * 1000u / busy_rate;
    uint64_t sleep_ms = dc_pace_take(&p, now, BATCH, CLIENT_NOW);
    ck_assert_msg(sleep_ms + 1 >= want_ms, "slept %llu ms, the busy rate wants %llu",
                  (unsigned long long)sleep_ms, (unsigned long long)want_ms);
    /* and from then on the busy rate, not more */
    double rate = run(&p, &now, CLIENT_NOW);
    ck_assert_msg(rate < 1.05 * busy_rate, "busy rate %.0f", rate);
}

START_TEST(clients_arriving_get_no_saved_burst)
{
    first_busy_batch_waits(0, 32u * MIB);         /* after running unlimited */
    first_busy_batch_waits(256u * MIB, 32u * MIB); /* after a limited idle run */
}
END_TEST

START_TEST(busy_rate_zero_keeps_the_idle_bucket)
{
    dc_pace p;
    dc_pace_init(&p, 64u * MIB, 0);
    uint64_t now = 1000;
    (void)dc_pace_take(&p, now, BATCH, NO_CLIENTS);
    now += RUN_MS; /* full again: 16 MiB */
    ck_assert_uint_eq(dc_pace_take(&p, now, BATCH, CLIENT_NOW), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rebuild_pace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, unlimited_never_waits);
    tcase_add_test(tc, idle_keeps_rebuild_rate);
    tcase_add_test(tc, busy_yields_to_the_busy_rate_then_recovers);
    tcase_add_test(tc, lower_limit_wins_while_busy);
    tcase_add_test(tc, busy_rate_zero_never_yields);
    tcase_add_test(tc, clients_arriving_get_no_saved_burst);
    tcase_add_test(tc, busy_rate_zero_keeps_the_idle_bucket);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
