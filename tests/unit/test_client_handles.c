/* test_client_handles.c - libdepfs's table of inode handle tags
 * (client/lib/core_handles.c): tags learned from replies (Attr, dir_attr,
 * tagged Dirents only) and put on requests (each inode-number field
 * present, never the root's); the bound on entries nobody holds (a clock
 * with a second chance for used ones), while those the FUSE kernel holds
 * (lookup counts, given back by forget) and those open here stay whatever
 * comes; forget's counts (clamped, an untagged entry with nothing left
 * goes); and many threads at once. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core_handles.h"
#include "depfs.pb-c.h"

#define ROOT 1u
#define SMALL 100u          /* unpinned entries the tests keep */
#define MANY 20000u         /* entries learned to churn a SMALL table */
#define SLACK DC_HANDLES_SCAN /* what an insertion may leave above the bound */
#define HELD 10u
#define BASE 1000000u       /* inode numbers of the churn */
#define THREADS 4u
#define OPS 50000u
#define THREAD_INOS 5000u

static dc_handles h;

static uint64_t tag_for(uint64_t ino)
{
    return ino * 0x100000001b3ull ^ 0xabcdef;
}

static void setup(void)
{
    ck_assert_int_eq(dc_handles_init(&h, SMALL), 0);
}

static void teardown(void)
{
    dc_handles_destroy(&h);
}

static bool known(uint64_t ino)
{
    uint64_t tag = 0;
    bool found = dc_handles_get(&h, ino, &tag);
    ck_assert(!found || tag == tag_for(ino));
    return found;
}

static void churn(uint64_t first, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        dc_handles_learn(&h, first + i, tag_for(first + i));
}

static uint32_t unpinned(void)
{
    uint32_t count, pinned;
    dc_handles_counts(&h, &count, &pinned);
    return count - pinned;
}

START_TEST(test_requests_and_replies)
{
    Depfs__Attr a = DEPFS__ATTR__INIT, d = DEPFS__ATTR__INIT;
    Depfs__Dirent e1 = DEPFS__DIRENT__INIT, e2 = DEPFS__DIRENT__INIT;
    Depfs__Dirent *ents[] = { &e1, &e2 };
    Depfs__MdsReply rep = DEPFS__MDS_REPLY__INIT;
    a.ino = 5, a.has_tag = true, a.tag = tag_for(5);
    d.ino = 6, d.has_tag = true, d.tag = tag_for(6);
    e1.ino = 7, e1.has_tag = true, e1.tag = tag_for(7);
    e2.ino = 8; /* listed without a tag: no search permission */
    rep.attr = &a;
    rep.dir_attr = &d;
    rep.n_entries = 2;
    rep.entries = ents;
    dc_handles_learn_reply(&h, &rep);
    ck_assert(known(5) && known(6) && known(7));
    ck_assert(!known(8));

    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_ino = q.has_parent = q.has_new_parent = q.has_migrate_ino = true;
    q.ino = 5, q.parent = 6, q.new_parent = ROOT, q.migrate_ino = 8;
    dc_handles_tag_request(&h, &q, ROOT);
    ck_assert(q.has_ino_tag && q.ino_tag == tag_for(5));
    ck_assert(q.has_parent_tag && q.parent_tag == tag_for(6));
    ck_assert(!q.has_new_parent_tag); /* the root needs none */
    ck_assert(!q.has_migrate_ino_tag); /* unknown: sent without (refused for users) */
    Depfs__MdsRequest via = DEPFS__MDS_REQUEST__INIT;
    via.has_names_via = true; /* the directory an open came through */
    via.names_via = 7;
    dc_handles_tag_request(&h, &via, ROOT);
    ck_assert(via.has_names_via_tag && via.names_via_tag == tag_for(7));
    Depfs__MdsRequest none = DEPFS__MDS_REQUEST__INIT;
    none.ino = 5; /* not present: no tag */
    dc_handles_tag_request(&h, &none, ROOT);
    ck_assert(!none.has_ino_tag);
    /* the holds of a release batch, each with its own tag, in place */
    Depfs__HoldRelease r6 = DEPFS__HOLD_RELEASE__INIT, r8 = DEPFS__HOLD_RELEASE__INIT;
    Depfs__HoldRelease *items[] = { &r6, &r8 };
    Depfs__MdsRequest rel = DEPFS__MDS_REQUEST__INIT;
    r6.ino = 6, r8.ino = 8;
    rel.n_releases = 2;
    rel.releases = items;
    dc_handles_tag_request(&h, &rel, ROOT);
    ck_assert(r6.has_ino_tag && r6.ino_tag == tag_for(6));
    ck_assert(!r8.has_ino_tag); /* unknown */
}
END_TEST

START_TEST(test_bound_and_second_chance)
{
    churn(BASE, SMALL);
    ck_assert_uint_eq(unpinned(), SMALL);
    for (unsigned i = 0; i < MANY; i++) {
        dc_handles_learn(&h, BASE + SMALL + i, tag_for(BASE + SMALL + i));
        ck_assert_uint_le(unpinned(), SMALL + SLACK);
        if (i % (SMALL / 4) == 0)
            ck_assert(known(BASE)); /* used again and again: kept */
    }
    ck_assert(known(BASE));
    ck_assert(!known(BASE + 1)); /* left alone: gone */
    ck_assert(known(BASE + SMALL + MANY - 1)); /* the newest stay */
}
END_TEST

START_TEST(test_held_and_open_stay)
{
    for (unsigned i = 0; i < HELD; i++) {
        dc_handles_learn(&h, i + 2, tag_for(i + 2));
        dc_handles_hold(&h, i + 2, NULL, NULL, 1 + i); /* the kernel's lookups */
        dc_handles_learn(&h, i + 100, tag_for(i + 100));
        dc_handles_pin(&h, i + 100);        /* open here */
    }
    churn(BASE, MANY);
    for (unsigned i = 0; i < HELD; i++)
        ck_assert(known(i + 2) && known(i + 100));
    uint32_t count, pinned, nlookup;
    uint16_t opens;
    dc_handles_counts(&h, &count, &pinned);
    ck_assert_uint_eq(pinned, 2 * HELD);
    ck_assert(dc_handles_entry(&h, 2 + 3, &nlookup, &opens));
    ck_assert_uint_eq(nlookup, 4);
    ck_assert_uint_eq(opens, 0);

    /* forget some: still held; all (and more): evictable */
    dc_handles_forget(&h, 5, 3);
    ck_assert(dc_handles_entry(&h, 5, &nlookup, &opens) && nlookup == 1);
    churn(BASE + MANY, MANY);
    ck_assert(known(5));
    dc_handles_forget(&h, 5, 7);
    ck_assert(dc_handles_entry(&h, 5, &nlookup, &opens) && nlookup == 0);
    dc_handles_unpin(&h, 100);
    dc_handles_counts(&h, &count, &pinned);
    ck_assert_uint_eq(pinned, 2 * HELD - 2);
    churn(BASE + 2 * MANY, MANY);
    ck_assert(!known(5));
    ck_assert(!known(100));
    ck_assert(known(6) && known(101));
    /* a forget of an inode never held changes nothing */
    dc_handles_forget(&h, 999, 1);
    dc_handles_counts(&h, &count, &pinned);
    ck_assert_uint_eq(pinned, 2 * HELD - 2);
}
END_TEST

START_TEST(test_untagged_pins)
{
    uint32_t nlookup, count, pinned;
    uint16_t opens;
    /* held before its tag came (a mount without tags, or a reply raced) */
    dc_handles_hold(&h, 42, NULL, NULL, 2);
    ck_assert(!known(42));
    dc_handles_learn(&h, 42, tag_for(42));
    ck_assert(known(42));
    /* held with the tag its reply gave: known, whatever the clock did */
    uint64_t tag44 = tag_for(44);
    dc_handles_hold(&h, 44, &tag44, NULL, 1);
    ck_assert(known(44));
    dc_handles_forget(&h, 44, 1);
    /* pinned, never tagged: gone when the last pin goes */
    dc_handles_pin(&h, 43);
    dc_handles_pin(&h, 43);
    dc_handles_unpin(&h, 43);
    ck_assert(dc_handles_entry(&h, 43, &nlookup, &opens) && opens == 1);
    dc_handles_unpin(&h, 43);
    ck_assert(!dc_handles_entry(&h, 43, &nlookup, &opens));
    dc_handles_counts(&h, &count, &pinned);
    ck_assert_uint_eq(count, 2); /* 42 held, 44 kept (tagged) though no longer held */
    ck_assert_uint_eq(pinned, 1);
}
END_TEST

/* The name generation the kernel's latest lookup of an inode gave, while
 * the kernel holds it. */
/* What a reply that gives name generation g alone says. */
static const dc_names_seen *gen_seen(uint64_t g)
{
    static dc_names_seen s;
    s = (dc_names_seen){ .has_name_gen = true, .name_gen = g };
    return &s;
}

static bool name_gen_of(uint64_t ino, uint64_t *g)
{
    dc_names_seen s;
    *g = 0;
    if (!dc_handles_names(&h, ino, &s) || !s.has_name_gen)
        return false;
    *g = s.name_gen;
    return true;
}

START_TEST(test_name_gen_of_held)
{
    uint64_t g = 0;
    ck_assert(!name_gen_of(50, &g));
    ck_assert(!dc_handles_hold(&h, 50, NULL, gen_seen(5), 1));
    ck_assert(name_gen_of(50, &g) && g == 5);
    ck_assert(!dc_handles_hold(&h, 50, NULL, gen_seen(5), 1)); /* the same names */
    /* looked up again after a rename: the kernel's older names of it may
     * be stale (the caller drops them) */
    ck_assert(dc_handles_hold(&h, 50, NULL, gen_seen(7), 1));
    ck_assert(name_gen_of(50, &g) && g == 7);
    ck_assert(!dc_handles_hold(&h, 50, NULL, NULL, 1)); /* a reply without one keeps it */
    ck_assert(name_gen_of(50, &g) && g == 7);
    dc_handles_note_names(&h, 50, gen_seen(8)); /* the kernel's own rename moved it */
    ck_assert(name_gen_of(50, &g) && g == 8);
    dc_handles_note_names(&h, 51, gen_seen(3)); /* not held: nothing to keep */
    ck_assert(!name_gen_of(51, &g));
    /* the names epoch: only ever raised; the directory of the last name */
    dc_names_seen s = { .has_epoch = true, .epoch = 20, .via = 9 }, got;
    ck_assert(!dc_handles_hold(&h, 50, NULL, &s, 1));
    s = (dc_names_seen){ .has_epoch = true, .epoch = 10, .via = 11 };
    dc_handles_note_names(&h, 50, &s);
    ck_assert(dc_handles_names(&h, 50, &got));
    ck_assert(got.has_epoch && got.epoch == 20 && got.via == 11 && got.name_gen == 8);
    s = (dc_names_seen){ .has_epoch = true, .epoch = 30 }; /* no directory said: the last stays */
    dc_handles_note_names(&h, 50, &s);
    ck_assert(dc_handles_names(&h, 50, &got) && got.epoch == 30 && got.via == 11);
    dc_handles_pin(&h, 50);
    dc_handles_forget(&h, 50, 5);               /* the kernel no longer holds it */
    ck_assert(!name_gen_of(50, &g));
    ck_assert(!dc_handles_names(&h, 50, &got));
    dc_handles_unpin(&h, 50);
}
END_TEST

/* -------------------------------------------------------------- threads */

static void *hammer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    uint64_t first = BASE + (uint64_t)(uintptr_t)arg * THREAD_INOS;
    for (unsigned i = 0; i < OPS; i++) {
        uint64_t ino = first + (uint64_t)(rand_r(&seed) % THREAD_INOS), tag;
        switch (rand_r(&seed) % 4) {
        case 0: dc_handles_learn(&h, ino, tag_for(ino)); break;
        case 1:
            if (dc_handles_get(&h, ino, &tag) && tag != tag_for(ino))
                return (void *)1;
            break;
        case 2: dc_handles_hold(&h, ino, &(uint64_t){ tag_for(ino) }, NULL, 1); break;
        default: dc_handles_forget(&h, ino, 1); break;
        }
    }
    /* give everything back: only the bound is left */
    for (uint64_t ino = first; ino < first + THREAD_INOS; ino++)
        dc_handles_forget(&h, ino, UINT64_MAX);
    return NULL;
}

START_TEST(test_threads)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, (void *)i), 0);
    for (unsigned i = 0; i < THREADS; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        ck_assert_ptr_null(ret);
    }
    uint32_t count, pinned;
    dc_handles_counts(&h, &count, &pinned);
    ck_assert_uint_eq(pinned, 0);
    /* what the forgets left above the bound goes as new entries come */
    churn(2 * BASE, THREADS * THREAD_INOS + 2 * MANY);
    ck_assert_uint_le(unpinned(), SMALL + SLACK);
}
END_TEST

static Suite *handles_suite(void)
{
    Suite *s = suite_create("client_handles");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_requests_and_replies);
    tcase_add_test(tc, test_bound_and_second_chance);
    tcase_add_test(tc, test_held_and_open_stay);
    tcase_add_test(tc, test_untagged_pins);
    tcase_add_test(tc, test_name_gen_of_held);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(handles_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
