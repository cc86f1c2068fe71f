/* test_ioserver_locks.c - the ioserver stripe-lock table (ioserver/locks.c):
 * overlap rules, NACK leaves nothing, owner-only unlock, splits, stale
 * listing by age, counters, the table bound, and concurrent use. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "ioserver/locks.h"
#include "ioserver/unstored.h"

#define FILE_A 0x1234u
#define FILE_B 0x5678u
#define T0_MS 1000u

static const ios_lock_owner C1_OP1 = { .client = 1, .op = 1 };
static const ios_lock_owner C1_OP2 = { .client = 1, .op = 2 };
static const ios_lock_owner C2_OP1 = { .client = 2, .op = 1 };

static ios_locks *tbl;

static void setup(void) { ck_assert_int_eq(ios_locks_create(0, &tbl), 0); }
static void teardown(void) { ios_locks_free(tbl); tbl = NULL; }

static uint64_t held(void)
{
    ios_lock_stats s;
    ios_locks_stats(tbl, &s);
    return s.held;
}

START_TEST(adjacent_ranges_do_not_conflict)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 4, 4, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 8, 1, C1_OP2, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_uint_eq(held(), 3);
}
END_TEST

START_TEST(overlapping_ranges_conflict)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 10, 5, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 14, 1, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 11, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 11, 2, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 100, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    /* the same stripes of another file are independent */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_B, 10, 5, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
}
END_TEST

START_TEST(same_owner_relock_is_idempotent_and_merges)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS + 5), 0);
    ck_assert_uint_eq(held(), 1);
    /* extend: overlapping and adjacent ranges merge into one entry */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 2, 6, C1_OP1, IOS_LOCK_WRITE, T0_MS + 6), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 8, 2, C1_OP1, IOS_LOCK_WRITE, T0_MS + 7), 0);
    ck_assert_uint_eq(held(), 1);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 10, C1_OP1));
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 0, 11, C1_OP1));
    /* the merged entry keeps the oldest time */
    ios_lock_entry e[4];
    size_t total = 0;
    ck_assert_uint_eq(ios_locks_stale(tbl, T0_MS + 10, 0, e, 4, &total), 1);
    ck_assert_uint_eq(e[0].first, 0);
    ck_assert_uint_eq(e[0].count, 10);
    ck_assert_uint_eq(e[0].taken_ms, T0_MS);
    /* a disjoint range of the same owner is a second entry */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 20, 1, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_uint_eq(held(), 2);
    /* bridging the gap merges all three */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 9, 12, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_uint_eq(held(), 1);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 21, C1_OP1));
}
END_TEST

START_TEST(different_op_of_same_client_conflicts)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 3, 1, C1_OP2, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 3, 1, C1_OP2));
}
END_TEST

START_TEST(nack_leaves_nothing_behind)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 5, 1, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    /* C2 asks for a range that is free except for stripe 5 */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 10, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert_uint_eq(held(), 1);
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 0, 1, C2_OP1));
    /* a third owner can take the free stripes: nothing of C2 remained */
    ios_lock_owner c3 = { .client = 3, .op = 9 };
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 5, c3, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 6, 4, c3, IOS_LOCK_WRITE, T0_MS), 0);
    /* the NACK on a file with no entry left no node behind either */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 5, 1, C1_OP1, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 10, c3, T0_MS), 0);
    ck_assert_uint_eq(held(), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 10, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
}
END_TEST

START_TEST(unlock_releases_only_owner_entries)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 2, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 5, 2, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    /* C1 unlocks a range spanning both: only its own entry goes */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 10, C1_OP1, T0_MS + 3), 0);
    ck_assert_uint_eq(held(), 1);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 5, 2, C2_OP1));
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 2, C1_OP2, IOS_LOCK_WRITE, T0_MS), 0);
}
END_TEST

START_TEST(wrong_owner_unlock_refused)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, C2_OP1, T0_MS), -EPERM);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 1, 1, C1_OP2, T0_MS), -EPERM);
    ck_assert_uint_eq(held(), 1);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 4, C1_OP1));
    /* unlocking what nobody holds is fine (a retried WRITE+UNLOCK) */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 10, 4, C2_OP1, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_B, 0, 4, C2_OP1, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 0, C1_OP1, T0_MS), -EINVAL);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, UINT64_MAX, 2, C1_OP1, IOS_LOCK_WRITE, T0_MS), -EINVAL);
}
END_TEST

START_TEST(partial_unlock_splits)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 10, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 4, 2, C1_OP1, T0_MS), 0);
    ck_assert_uint_eq(held(), 2);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 4, C1_OP1));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 6, 4, C1_OP1));
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 4, 1, C1_OP1));
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 4, 2, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 3, 2, C2_OP1, IOS_LOCK_WRITE, T0_MS), -EAGAIN);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 1, C1_OP1, T0_MS), 0);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 1, 3, C1_OP1));
    ck_assert_uint_eq(held(), 3);
}
END_TEST

START_TEST(stale_listing_by_age)
{
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 1, C1_OP1, IOS_LOCK_WRITE, 1000), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 1, 1, C2_OP1, IOS_LOCK_WRITE, 4000), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_B, 7, 3, C1_OP2, IOS_LOCK_WRITE, 6000), 0);
    ios_lock_entry e[8];
    size_t total = 0;
    /* at 6000 with a 5000 ms lease only the first is stale */
    ck_assert_uint_eq(ios_locks_stale(tbl, 6000, 5000, e, 8, &total), 1);
    ck_assert_uint_eq(total, 1);
    ck_assert_uint_eq(e[0].file_id, FILE_A);
    ck_assert_uint_eq(e[0].owner.client, 1);
    ck_assert_uint_eq(e[0].owner.op, 1);
    ck_assert_uint_eq(e[0].taken_ms, 1000);
    ck_assert_uint_eq(ios_locks_stale(tbl, 9000, 5000, e, 8, &total), 2);
    ck_assert_uint_eq(ios_locks_stale(tbl, 20000, 5000, e, 8, &total), 3);
    /* the copy is bounded, the total is not */
    ck_assert_uint_eq(ios_locks_stale(tbl, 20000, 5000, e, 2, &total), 2);
    ck_assert_uint_eq(total, 3);
    ck_assert_uint_eq(ios_locks_stale(tbl, 500, 0, e, 8, &total), 0);
    /* released entries are not stale */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 2, C1_OP1, 20000), 0);
    ck_assert_uint_eq(ios_locks_stale(tbl, 20000, 5000, e, 8, &total), 2);
}
END_TEST

START_TEST(counters)
{
    ios_lock_stats s;
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 2, C1_OP1, IOS_LOCK_WRITE, 100), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 1, 2, C2_OP1, IOS_LOCK_WRITE, 100), -EAGAIN);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 1, 2, C2_OP1, IOS_LOCK_WRITE, 100), -EAGAIN);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_B, 1, 2, C2_OP1, IOS_LOCK_WRITE, 200), 0);
    ios_locks_stats(tbl, &s);
    ck_assert_uint_eq(s.granted, 2);
    ck_assert_uint_eq(s.nacked, 2);
    ck_assert_uint_eq(s.held, 2);
    ck_assert_uint_eq(s.hold_ms_total, 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 2, C1_OP1, 350), 0);
    ck_assert_uint_eq(ios_locks_drop_file(tbl, FILE_B, 300), 1);
    ios_locks_stats(tbl, &s);
    ck_assert_uint_eq(s.held, 0);
    ck_assert_uint_eq(s.hold_ms_total, 250 + 100);
}
END_TEST

START_TEST(table_bound)
{
    ios_locks *small;
    ck_assert_int_eq(ios_locks_create(3, &small), 0);
    for (uint64_t i = 0; i < 3; i++)
        ck_assert_int_eq(ios_locks_try(small, FILE_A, i * 10, 1, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(small, FILE_B, 0, 1, C2_OP1, IOS_LOCK_WRITE, T0_MS), -ENOLCK);
    /* merging into an existing entry needs no new slot */
    ck_assert_int_eq(ios_locks_try(small, FILE_A, 0, 5, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    /* a split would need one: refused and nothing changed */
    ck_assert_int_eq(ios_locks_release(small, FILE_A, 2, 1, C1_OP1, T0_MS), -ENOLCK);
    ck_assert(ios_locks_held_by(small, FILE_A, 0, 5, C1_OP1));
    ck_assert_int_eq(ios_locks_release(small, FILE_A, 0, 100, C1_OP1, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(small, FILE_B, 0, 1, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ios_locks_free(small);
}
END_TEST

/* Many threads fight over the same stripes: at any time at most one owner
 * may hold a stripe. Each thread counts itself inside its critical section. */
#define RACE_THREADS 8
#define RACE_ROUNDS 20000
static int race_inside[4];
static int race_violations;

static void *race_worker(void *arg)
{
    uint64_t me = (uint64_t)(uintptr_t)arg;
    ios_lock_owner o = { .client = me, .op = 7 };
    for (int i = 0; i < RACE_ROUNDS; i++) {
        uint64_t stripe = (uint64_t)(i + (int)me) % 4;
        if (ios_locks_try(tbl, FILE_A, stripe, 1, o, IOS_LOCK_WRITE, T0_MS) != 0)
            continue;
        if (__atomic_add_fetch(&race_inside[stripe], 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&race_violations, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&race_inside[stripe], 1, __ATOMIC_SEQ_CST);
        ck_assert_int_eq(ios_locks_release(tbl, FILE_A, stripe, 1, o, T0_MS), 0);
    }
    return NULL;
}

/* Two orphans of different owners overlapping our range: both lose the
 * overlapping stripes to the repair at once; a young lock is never taken. */
START_TEST(take_over_only_stale_locks_of_any_owner)
{
    const ios_lock_owner a = { 1, 1 }, b = { 2, 1 }, rec = { 9, 1 }, young = { 3, 1 };
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 10, a, IOS_LOCK_WRITE, 100), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 12, 8, b, IOS_LOCK_WRITE, 200), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 30, 5, young, IOS_LOCK_WRITE, 5900), 0);
    ios_lock_entry taken[4];
    size_t n = 99;
    /* the young lock blocks: nothing changes */
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 5, 30, rec, IOS_LOCK_WRITE, 6000, 5000, taken, 4, &n), -EAGAIN);
    ck_assert_uint_eq(n, 0);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 10, a));
    /* stripes 5..19: a loses 5..9, b loses 12..19 */
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 5, 15, rec, IOS_LOCK_WRITE, 6000, 5000, taken, 4, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 5, 15, rec));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 5, a));
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 5, 1, a));
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 12, 1, b));
    bool seen_a = false, seen_b = false;
    for (size_t i = 0; i < n; i++) {
        if (taken[i].owner.client == 1) {
            seen_a = true;
            ck_assert_uint_eq(taken[i].first, 5);
            ck_assert_uint_eq(taken[i].count, 5);
        } else {
            seen_b = true;
            ck_assert_uint_eq(taken[i].first, 12);
            ck_assert_uint_eq(taken[i].count, 8);
        }
    }
    ck_assert(seen_a && seen_b);
    /* nothing stale in the way: an ordinary lock */
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 100, 2, rec, IOS_LOCK_WRITE, 6000, 5000, taken, 4, &n), 0);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* A take-over inside a longer orphan splits it; the orphan keeps the rest. */
START_TEST(take_over_splits_a_longer_orphan)
{
    const ios_lock_owner a = { 1, 1 }, rec = { 9, 1 };
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 100, a, IOS_LOCK_WRITE, 0), 0);
    ios_lock_entry taken[2];
    size_t n;
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 40, 10, rec, IOS_LOCK_WRITE, 9000, 5000, taken, 2, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 40, a));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 50, 50, a));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 40, 10, rec));
}
END_TEST

typedef struct jrec {
    unsigned calls;
    uint64_t file, client, first, end;
    bool held, writes;
    bool fail; /* the next calls fail */
    bool writes_of[16]; /* the last call's writes, per client id < 16 */
} jrec;

static int jfn(void *arg, uint64_t file_id, ios_lock_owner owner, bool held, uint64_t first,
               uint64_t end, bool writes)
{
    jrec *j = arg;
    if (j->fail)
        return -EIO; /* the state store refuses: nothing recorded */
    j->calls++;
    j->file = file_id;
    j->client = owner.client;
    j->held = held;
    j->first = first;
    j->end = end;
    j->writes = writes;
    if (owner.client < 16)
        j->writes_of[owner.client] = writes;
    return 0;
}

/* The one stale entry of FILE_A (age >= 0): its mode. */
static bool stale_writes(uint64_t now_ms)
{
    ios_lock_entry e[2];
    size_t total = 0;
    size_t n = ios_locks_stale(tbl, now_ms, 0, e, 2, &total);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(total, 1);
    return e[0].writes;
}

/* A lock taken to read stays a reading one until a write arrives under it
 * (journaled); merging with a writing lock of the owner makes it write; a
 * take-over keeps what was in doubt in doubt. */
START_TEST(lock_modes)
{
    jrec j = {0};
    const ios_lock_owner a = { 1, 1 }, rec = { 9, 9 };
    ios_locks_set_journal(tbl, jfn, &j);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, a, IOS_LOCK_READ, T0_MS), 0);
    ck_assert(j.held && !j.writes);
    ck_assert(!stale_writes(T0_MS));
    unsigned calls = j.calls;
    ios_locks_mark_written(tbl, FILE_A, 8, 1, a); /* not under the lock: nothing */
    ios_locks_mark_written(tbl, FILE_A, 2, 1, (ios_lock_owner){ 2, 2 }); /* not the owner */
    ck_assert_uint_eq(j.calls, calls);
    ck_assert(!stale_writes(T0_MS));
    ios_locks_mark_written(tbl, FILE_A, 2, 1, a);
    ck_assert_uint_eq(j.calls, calls + 1);
    ck_assert(j.held && j.writes && j.first == 0 && j.end == 4);
    ck_assert(stale_writes(T0_MS));
    ios_locks_mark_written(tbl, FILE_A, 2, 1, a); /* already: not journaled again */
    ck_assert_uint_eq(j.calls, calls + 1);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, a, T0_MS), 0);

    /* a reader's entry merged with the owner's writing one writes */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 2, a, IOS_LOCK_READ, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 2, 2, a, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert(j.writes);
    ck_assert(stale_writes(T0_MS));
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, a, T0_MS), 0);

    /* taking over a reader's orphan: reported as such, ours reads */
    ios_lock_entry taken[2];
    size_t n = 0;
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, a, IOS_LOCK_READ, T0_MS), 0);
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 0, 4, rec, IOS_LOCK_READ, T0_MS + 6000,
                                         5000, taken, 2, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!taken[0].writes);
    ck_assert(!stale_writes(T0_MS + 6000));
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, rec, T0_MS), 0);

    /* taking over a writer's orphan to read: ours stays in doubt */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, a, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 0, 4, rec, IOS_LOCK_READ, T0_MS + 6000,
                                         5000, taken, 2, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(taken[0].writes);
    ck_assert(stale_writes(T0_MS + 6000));
    ck_assert(j.writes_of[rec.client]); /* the taker's intent: in doubt */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, rec, T0_MS), 0);

    /* restored from the journal with its mode */
    ck_assert_int_eq(ios_locks_restore(tbl, FILE_A, 0, 4, a, false, T0_MS), 0);
    ck_assert(!stale_writes(T0_MS));
}
END_TEST

/* An intent the journal cannot store: the lock is not granted (a crash
 * would forget it), a take-over does not happen, and a write under a
 * reading lock is refused before anything is stored. */
START_TEST(no_lock_without_its_intent)
{
    jrec j = {0};
    const ios_lock_owner a = { 1, 1 }, rec = { 9, 9 };
    ios_locks_set_journal(tbl, jfn, &j);
    j.fail = true;
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, a, IOS_LOCK_WRITE, T0_MS), -EIO);
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 0, 1, a));
    j.fail = false;
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 4, a, IOS_LOCK_READ, T0_MS), 0);
    j.fail = true;
    ck_assert_int_eq(ios_locks_mark_written(tbl, FILE_A, 1, 1, a), -EIO);
    ios_lock_entry taken[4];
    size_t n_taken = 99;
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 0, 4, rec, IOS_LOCK_WRITE, T0_MS + 10000,
                                         0, taken, 4, &n_taken), -EIO);
    ck_assert_uint_eq(n_taken, 0);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 4, a));
    j.fail = false;
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 0, 4, a, T0_MS), 0);
}
END_TEST

/* The journal sees each owner's span after every change. */
START_TEST(journal_follows_the_owner_span)
{
    jrec j = {0};
    const ios_lock_owner a = { 1, 1 };
    ios_locks_set_journal(tbl, jfn, &j);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 10, 5, a, IOS_LOCK_WRITE, 0), 0);
    ck_assert(j.held && j.first == 10 && j.end == 15);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 20, 5, a, IOS_LOCK_WRITE, 0), 0);
    ck_assert(j.held && j.first == 10 && j.end == 25);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 10, 5, a, 0), 0);
    ck_assert(j.held && j.first == 20 && j.end == 25);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 20, 5, a, 0), 0);
    ck_assert(!j.held);
    unsigned before = j.calls;
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 1, (ios_lock_owner){ 2, 2 }, IOS_LOCK_WRITE, 0), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 0, 1, a, IOS_LOCK_WRITE, 0), -EAGAIN); /* a NACK: no entry */
    ck_assert_uint_eq(j.calls, before + 1);
    ck_assert_uint_eq(ios_locks_drop_file(tbl, FILE_A, 0), 1);
    ck_assert(!j.held && j.client == 2);
    ck_assert_int_eq(ios_locks_restore(tbl, FILE_A, 3, 4, a, true, 0), 0);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 3, 4, a));
    /* intents are spans: another owner's restored span may cover part of
     * it; each keeps what the other does not hold */
    const ios_lock_owner b = { 7, 7 };
    ck_assert_int_eq(ios_locks_restore(tbl, FILE_A, 0, 20, b, true, 0), 0);
    ck_assert(ios_locks_held_by(tbl, FILE_A, 0, 3, b));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 7, 13, b));
    ck_assert(!ios_locks_held_by(tbl, FILE_A, 3, 1, b));
    ck_assert(ios_locks_held_by(tbl, FILE_A, 3, 4, a));
}
END_TEST

START_TEST(concurrent_mutual_exclusion)
{
    pthread_t th[RACE_THREADS];
    for (uintptr_t i = 0; i < RACE_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, race_worker, (void *)(i + 1)), 0);
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(race_violations, 0);
    ck_assert_uint_eq(held(), 0);
    ios_lock_stats s;
    ios_locks_stats(tbl, &s);
    ck_assert_uint_eq(s.granted + s.nacked, (uint64_t)RACE_THREADS * RACE_ROUNDS);
}
END_TEST

/* A failed store under a lock keeps the server out of service exactly as
 * long as that lock's owner holds a stripe of the range (unstored.h). */
START_TEST(failed_store_pending_while_its_lock_is_held)
{
    ios_unstored *u;
    ck_assert_int_eq(ios_unstored_create(&u), 0);
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 10, 4, C1_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 20, 1, C2_OP1, IOS_LOCK_WRITE, T0_MS), 0);
    ios_unstored_note(u, FILE_A, 10, 4, C1_OP1);
    ios_unstored_note(u, FILE_A, 10, 4, C1_OP1); /* the same failure twice: one note */
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 1);
    /* a partial release keeps it pending; the last stripe going ends it */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 10, 3, C1_OP1, T0_MS), 0);
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 1);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 13, 1, C1_OP1, T0_MS), 0);
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 0);
    /* taken over by the orphan repair: the writer's note ends too */
    ck_assert_int_eq(ios_locks_try(tbl, FILE_A, 30, 2, C1_OP2, IOS_LOCK_WRITE, T0_MS), 0);
    ios_unstored_note(u, FILE_A, 30, 2, C1_OP2);
    ios_lock_entry taken[4];
    size_t n_taken = 0;
    ck_assert_int_eq(ios_locks_take_over(tbl, FILE_A, 30, 2, C2_OP1, IOS_LOCK_WRITE, T0_MS + 10000, 5000, taken, 4, &n_taken), 0);
    ck_assert_uint_eq(n_taken, 1);
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 0);
    /* more notes than kept: pending until no lock is held at all */
    for (unsigned i = 0; i <= IOS_UNSTORED_MAX; i++)
        ios_unstored_note(u, FILE_B, i, 1, C1_OP1);
    ck_assert_uint_ge(ios_unstored_pending(u, tbl), 1); /* FILE_A locks of C2 still held */
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 20, 1, C2_OP1, T0_MS), 0);
    ck_assert_int_eq(ios_locks_release(tbl, FILE_A, 30, 2, C2_OP1, T0_MS), 0);
    ck_assert_uint_eq(ios_unstored_pending(u, tbl), 0);
    ios_unstored_free(u);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ioserver_locks");
    TCase *tc = tcase_create("locks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, adjacent_ranges_do_not_conflict);
    tcase_add_test(tc, overlapping_ranges_conflict);
    tcase_add_test(tc, same_owner_relock_is_idempotent_and_merges);
    tcase_add_test(tc, different_op_of_same_client_conflicts);
    tcase_add_test(tc, nack_leaves_nothing_behind);
    tcase_add_test(tc, unlock_releases_only_owner_entries);
    tcase_add_test(tc, wrong_owner_unlock_refused);
    tcase_add_test(tc, partial_unlock_splits);
    tcase_add_test(tc, stale_listing_by_age);
    tcase_add_test(tc, counters);
    tcase_add_test(tc, table_bound);
    tcase_add_test(tc, concurrent_mutual_exclusion);
    tcase_add_test(tc, take_over_only_stale_locks_of_any_owner);
    tcase_add_test(tc, take_over_splits_a_longer_orphan);
    tcase_add_test(tc, journal_follows_the_owner_span);
    tcase_add_test(tc, no_lock_without_its_intent);
    tcase_add_test(tc, lock_modes);
    tcase_add_test(tc, failed_store_pending_while_its_lock_is_held);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
