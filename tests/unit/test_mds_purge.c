/* test_mds_purge.c - the MDS's purge queue and holds: the holds table
 * (mds/holds.c) on its own with times passed in, the queue in the
 * namespace store (mds/namespace.c drop_link, mds/ns_purge.c) on a real
 * LevelDB in a temp dir, and the handlers that tie them together
 * (MDS_OPEN/CREATE notes, MDS_RELEASE, MDS_PURGE_LIST/DONE) through
 * mds_process, as the daemon calls it. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "auth.h"
#include "depfs.pb-c.h"
#include "kvstore.h"
#include "log.h"
#include "mds/cluster.h"
#include "mds/handlers.h"
#include "mds/holds.h"
#include "mds/holds_journal.h"
#include "mds/namespace.h"
#include "tests/lib/mds_handlers.h"
#include "tests/lib/mds_store.h"
#include "wire_check.h"

#define N_SERVERS 6u
#define DEF_N 4u
#define DEF_K 2u
#define DEF_SU 65536u
#define ROOT MDS_ROOT_INO
#define GRACE_S 30u
#define T0 1000000u        /* a wall-clock second for the holds table */
#define TTL 600u
#define FEW_HOLDS 4u       /* a table this small overflows in a test */
#define MANY_FILES 300u    /* more than one scan or list holds */
#define LIST_MAX 8u

static tms_store store; /* tests/lib/mds_store.h */
static mds_ns *ns;       /* store.ns while open */
static char why[MDS_WHY_MAX];

static void store_open(void)
{
    tms_open(&store);
    ns = store.ns;
}

static void store_close(void)
{
    tms_close(&store);
    ns = NULL;
}

static void setup(void)
{
    tms_setup(&store, N_SERVERS, DEF_N, DEF_K, DEF_SU);
    ns = store.ns;
}

static void teardown(void)
{
    tms_teardown(&store);
    ns = NULL;
}

static uint64_t new_file(const char *name, uint64_t size)
{
    mds_new nw = { .parent = ROOT, .name = name, .mode = 0644 };
    mds_inode in;
    ck_assert_int_eq(mds_ns_create(ns, &nw, O_EXCL, &in, why), 0);
    if (size)
        ck_assert_int_eq(mds_ns_extend(ns, NULL, in.ino, size, false, 0, NULL, &in, why), 0);
    return in.ino;
}

static void unlink_name(const char *name)
{
    mds_removed rm;
    ck_assert_int_eq(mds_ns_unlink(ns, NULL, ROOT, name, &rm, why), 0);
}

/* Drops ino from the queue as the drainer does; how many went (0 or 1). */
static unsigned drop(uint64_t ino)
{
    unsigned dropped = 7;
    ck_assert_int_eq(mds_ns_purge_done(ns, &ino, 1, NULL, NULL, &dropped, why), 0);
    ck_assert_uint_le(dropped, 1);
    return dropped;
}

static void queue_stats(uint64_t *files, uint64_t *bytes)
{
    mds_ns_purge_stats(ns, files, bytes);
}

/* Collects a scan: inodes and their recorded hold ends. */
typedef struct scan_col {
    unsigned n, stop_after;
    uint64_t inos[MANY_FILES + 1], held[MANY_FILES + 1];
} scan_col;

static int collect(void *arg, const mds_inode *in, uint64_t held_until_s)
{
    scan_col *c = arg;
    ck_assert_uint_eq(in->nlink, 0);
    ck_assert(S_ISREG(in->mode));
    ck_assert_uint_lt(c->n, MANY_FILES + 1);
    c->inos[c->n] = in->ino;
    c->held[c->n++] = held_until_s;
    return c->stop_after && c->n >= c->stop_after ? 1 : 0;
}

/* ------------------------------------------------------------ holds table */

/* A release carries the newest generation its client was given for the
 * file: an open of it since (a reopen racing the last close) keeps the
 * hold; generations only grow, also across a new table (a restart); a
 * hold the journal reloaded (generation 0) goes at any release. */
START_TEST(test_holds_generations)
{
    mds_holds *h;
    uint64_t g1 = 0, g2 = 0, g3 = 0;
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, 0, &h), 0);
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, &g1), 0);
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, &g2), 0);
    ck_assert_uint_gt(g2, g1);
    mds_holds_release(h, 5, 1, g1); /* the close of the first open: late */
    ck_assert(mds_holds_held(h, 5, T0));
    mds_holds_release(h, 5, 2, g2); /* another client's: not its hold */
    ck_assert(mds_holds_held(h, 5, T0));
    mds_holds_release(h, 5, 1, g2);
    ck_assert(!mds_holds_held(h, 5, T0));
    ck_assert_int_eq(mds_holds_note(h, 6, 1, T0 + TTL, false, 0, T0, NULL), 0); /* reloaded */
    mds_holds_release(h, 6, 1, g1);
    ck_assert(!mds_holds_held(h, 6, T0));
    ck_assert_int_eq(mds_holds_note(h, 7, 1, T0 + TTL, false, 0, T0, &g3), 0);
    mds_holds_release(h, 7, 1, MDS_HOLD_GEN_ANY); /* a client from before generations */
    ck_assert(!mds_holds_held(h, 7, T0));
    ck_assert_uint_eq(mds_holds_count(h), 0);
    mds_holds_free(h);
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, 0, &h), 0); /* a restart */
    uint64_t g4 = 0;
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, &g4), 0);
    ck_assert_uint_gt(g4, g3);
    mds_holds_release(h, 5, 1, g3); /* from before the restart: the reopen since holds */
    ck_assert(mds_holds_held(h, 5, T0));
    mds_holds_free(h);
}
END_TEST

START_TEST(test_holds_table)
{
    mds_holds *h;
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, 0, &h), 0);
    ck_assert(!mds_holds_held(h, 5, T0));
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert_int_eq(mds_holds_note(h, 5, 2, T0 + 10, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(mds_holds_until(h, 5, T0), T0 + TTL);
    ck_assert(!mds_holds_held(h, 6, T0)); /* per file */
    /* a release drops that client's hold only */
    mds_holds_release(h, 5, 1, MDS_HOLD_GEN_ANY);
    ck_assert_uint_eq(mds_holds_until(h, 5, T0), T0 + 10);
    mds_holds_release(h, 5, 2, MDS_HOLD_GEN_ANY);
    ck_assert(!mds_holds_held(h, 5, T0));
    ck_assert_uint_eq(mds_holds_count(h), 0);
    /* a hold lives grace_s past its end (the I/O servers' skew) */
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert(mds_holds_held(h, 5, T0 + TTL + GRACE_S));
    ck_assert(!mds_holds_held(h, 5, T0 + TTL + GRACE_S + 1));
    ck_assert_uint_eq(mds_holds_count(h), 0); /* and then goes */
    /* renewals only extend */
    ck_assert_int_eq(mds_holds_note(h, 7, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert_int_eq(mds_holds_note(h, 7, 1, T0 + 5, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(mds_holds_until(h, 7, T0), T0 + TTL);
    ck_assert_uint_eq(mds_holds_count(h), 1);
    /* only_if_held: a file nobody holds any more takes no new hold */
    ck_assert_int_eq(mds_holds_note(h, 8, 3, T0 + TTL, true, 0, T0, NULL), -ENOENT);
    ck_assert(!mds_holds_held(h, 8, T0));
    ck_assert_int_eq(mds_holds_note(h, 7, 3, T0 + 2 * TTL, true, 0, T0, NULL), 0); /* 7 is held: joins */
    ck_assert_uint_eq(mds_holds_until_max(h, T0), T0 + 2 * TTL);
    /* expired holds go as their bucket is walked */
    ck_assert(!mds_holds_held(h, 7, T0 + 3 * TTL));
    ck_assert_uint_eq(mds_holds_count(h), 0);
    mds_holds_free(h);
}
END_TEST

START_TEST(test_holds_floors)
{
    mds_holds *h;
    /* a start floor holds every file until it ends */
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, T0 + TTL, &h), 0);
    ck_assert(mds_holds_held(h, 42, T0));
    ck_assert_uint_eq(mds_holds_until(h, 42, T0), T0 + TTL);
    ck_assert_uint_eq(mds_holds_floor(h, T0), T0 + TTL + GRACE_S); /* what depfs status shows */
    ck_assert(mds_holds_held(h, 42, T0 + TTL + GRACE_S));
    ck_assert_uint_eq(mds_holds_floor(h, T0 + TTL + GRACE_S + 1), 0);
    /* but not asked again of a file queued before it (its entry recorded
     * the holds of then): an unlinked file no recorded hold keeps takes no
     * new one, one whose entry keeps it does */
    ck_assert(!mds_holds_held_since_start(h, 42, T0));
    ck_assert_int_eq(mds_holds_note(h, 42, 1, T0 + 5, true, 0, T0, NULL), -ENOENT);
    ck_assert_int_eq(mds_holds_note(h, 42, 1, T0 + 5, true, T0 + 1, T0, NULL), 0);
    ck_assert(mds_holds_held_since_start(h, 42, T0));
    ck_assert(!mds_holds_held(h, 42, T0 + TTL + GRACE_S + 1));
    mds_holds_free(h);

    /* a full table keeps no hold alone but raises the floor: safe */
    ck_assert_int_eq(mds_holds_new(FEW_HOLDS, GRACE_S, 0, &h), 0);
    ck_assert_uint_eq(mds_holds_floor(h, T0), 0);
    for (unsigned i = 0; i < FEW_HOLDS; i++)
        ck_assert_int_eq(mds_holds_note(h, 100 + i, 1, T0 + 10, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(mds_holds_count(h), FEW_HOLDS);
    ck_assert(!mds_holds_held(h, 200, T0));
    ck_assert_int_eq(mds_holds_note(h, 200, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(mds_holds_count(h), FEW_HOLDS);
    ck_assert(mds_holds_held(h, 200, T0 + TTL)); /* by the floor */
    ck_assert(mds_holds_held(h, 999, T0 + TTL)); /* and so is every file */
    ck_assert_uint_eq(mds_holds_floor(h, T0), T0 + TTL + GRACE_S);
    ck_assert(mds_holds_held_since_start(h, 999, T0 + TTL));
    ck_assert_int_eq(mds_holds_note(h, 999, 2, T0 + TTL, true, 0, T0, NULL), 0); /* may be held: may join */
    /* expired entries make room again */
    ck_assert_int_eq(mds_holds_note(h, 300, 1, T0 + 3 * TTL, false, 0, T0 + 2 * TTL, NULL), 0);
    ck_assert_uint_eq(mds_holds_count(h), 1);
    mds_holds_free(h);
}
END_TEST

/* A journal for the table alone: what it was told; fail makes puts fail. */
typedef struct fake_journal {
    unsigned puts, floors, drops;
    uint64_t last_until, last_floor;
    bool last_writer, fail;
} fake_journal;

static int fj_put(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    fake_journal *j = arg;
    (void)ino;
    (void)client;
    if (j->fail)
        return -EIO;
    j->puts++;
    j->last_until = until_s;
    j->last_writer = writer;
    return 0;
}

static int fj_put_floor(void *arg, uint64_t until_s)
{
    fake_journal *j = arg;
    if (j->fail)
        return -EIO;
    j->floors++;
    j->last_floor = until_s;
    return 0;
}

static void fj_drop(void *arg, uint64_t ino, uint64_t client)
{
    (void)ino;
    (void)client;
    ((fake_journal *)arg)->drops++;
}

START_TEST(test_holds_journal_calls)
{
    mds_holds *h;
    fake_journal j = { 0 };
    ck_assert_int_eq(mds_holds_new(FEW_HOLDS, GRACE_S, T0 + 5, &h), 0);
    mds_holds_set_journal(h, &(mds_holds_journal){ .put = fj_put, .put_floor = fj_put_floor,
                                                   .drop = fj_drop, .arg = &j });
    /* a new hold, a longer one and a writer's mark are journalled first */
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(j.puts, 1);
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + 10, false, 0, T0, NULL), 0); /* shorter: nothing */
    ck_assert_uint_eq(j.puts, 1);
    ck_assert_int_eq(mds_holds_mark_writer(h, 5, 1, T0), 0);
    ck_assert(j.last_writer);
    ck_assert_uint_eq(j.last_until, T0 + TTL);
    ck_assert_int_eq(mds_holds_mark_writer(h, 5, 1, T0), 0); /* already: nothing */
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + 2 * TTL, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(j.puts, 3);
    ck_assert(j.last_writer); /* the mark stays in the record */
    /* a journal that fails fails the note, and the table keeps nothing new */
    j.fail = true;
    ck_assert_int_eq(mds_holds_note(h, 6, 1, T0 + TTL, false, 0, T0, NULL), -EIO);
    ck_assert(!mds_holds_held_since_start(h, 6, T0));
    ck_assert_int_eq(mds_holds_note(h, 5, 1, T0 + 3 * TTL, false, 0, T0, NULL), -EIO);
    ck_assert_uint_eq(mds_holds_until(h, 5, T0), T0 + 2 * TTL);
    ck_assert_int_eq(mds_holds_note(h, 7, 2, T0 + TTL, false, 0, T0, NULL), -EIO);
    j.fail = false;
    ck_assert_int_eq(mds_holds_note(h, 7, 2, T0 + TTL, false, 0, T0, NULL), 0);
    j.fail = true;
    ck_assert_int_eq(mds_holds_mark_writer(h, 7, 2, T0), -EIO);
    ck_assert(!mds_holds_other_writer(h, 7, 1, T0 + 5 + GRACE_S + 1)); /* not marked */
    j.fail = false;
    /* a release is dropped from the journal */
    mds_holds_release(h, 7, 2, MDS_HOLD_GEN_ANY);
    ck_assert_uint_eq(j.drops, 1);
    mds_holds_release(h, 7, 2, MDS_HOLD_GEN_ANY); /* none left: nothing */
    ck_assert_uint_eq(j.drops, 1);
    /* an expired hold leaves the journal as it leaves the table */
    ck_assert_int_eq(mds_holds_note(h, 8, 2, T0 + 1, false, 0, T0, NULL), 0);
    ck_assert(!mds_holds_held_since_start(h, 8, T0 + 2 + GRACE_S));
    ck_assert_uint_eq(j.drops, 2);
    /* a full table journals its floor, the later of it and the start's */
    for (unsigned i = 0; i < FEW_HOLDS; i++)
        mds_holds_note(h, 100 + i, 1, T0 + 1, false, 0, T0, NULL);
    ck_assert_uint_eq(j.floors, 1);
    ck_assert_uint_eq(j.last_floor, T0 + 5);
    j.fail = true;
    ck_assert_int_eq(mds_holds_note(h, 200, 1, T0 + TTL, false, 0, T0, NULL), -EIO);
    ck_assert_uint_eq(mds_holds_floor(h, T0), T0 + 5 + GRACE_S); /* not raised */
    j.fail = false;
    ck_assert_int_eq(mds_holds_note(h, 200, 1, T0 + TTL, false, 0, T0, NULL), 0);
    ck_assert_uint_eq(j.last_floor, T0 + TTL);
    mds_holds_free(h);
}
END_TEST

/* ----------------------------------------------------- queue in the store */

START_TEST(test_queue_unlink_rename_link)
{
    mds_inode in;
    mds_removed rm;
    uint64_t files, bytes, qf, qb;
    uint64_t a = new_file("a", 100);
    uint64_t b = new_file("b", 1000);
    /* a hard link's unlink queues nothing */
    ck_assert_int_eq(mds_ns_link(ns, NULL, a, ROOT, "a2", &in, why), 0);
    unlink_name("a2");
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qf, 0);
    /* rename over b: b is queued like an unlink */
    ck_assert_int_eq(mds_ns_rename(ns, NULL, ROOT, "a", ROOT, "b", 0, &rm, NULL, why), 0);
    ck_assert_uint_eq(rm.ino, b);
    ck_assert(rm.queued);
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qf, 1);
    ck_assert_uint_eq(qb, 1000);
    /* reachable by inode number: attributes, setattr (fchmod, ftruncate), extend */
    in = (mds_inode){ 0 };
    ck_assert_int_eq(mds_ns_getattr(ns, b, &in, why), 0);
    ck_assert_uint_eq(in.nlink, 0);
    mds_setattr_in sa = { .mode = 0600, .size = 400 };
    ck_assert_int_eq(mds_ns_setattr(ns, NULL, b, DEPFS_SET_MODE | DEPFS_SET_SIZE, &sa, &in, why), 0);
    ck_assert_uint_eq(in.mode & 07777, 0600);
    ck_assert_uint_eq(in.size, 400);
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qb, 400); /* the queue's bytes follow the file */
    ck_assert_int_eq(mds_ns_extend(ns, NULL, b, 700, false, 0, NULL, &in, why), 0);
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qb, 700);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(files, 3); /* root, a (as b), the queued one */
    ck_assert_uint_eq(bytes, 800);
    /* not by name */
    ck_assert_int_eq(mds_ns_lookup(ns, NULL, ROOT, "b", &in, why), 0);
    ck_assert_uint_eq(in.ino, a);
    /* dropped: gone with its counts; twice is ENOENT */
    ck_assert_uint_eq(drop(b), 1);
    ck_assert_int_eq(mds_ns_getattr(ns, b, &in, why), -ENOENT);
    ck_assert_uint_eq(drop(b), 0); /* a retried pass: nothing left to drop */
    ck_assert_uint_eq(drop(a), 0); /* linked: not queued, untouched */
    ck_assert_int_eq(mds_ns_getattr(ns, a, &in, why), 0);
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qf, 0);
    ck_assert_uint_eq(qb, 0);
    mds_ns_statfs(ns, &files, &bytes);
    ck_assert_uint_eq(files, 2);
    ck_assert_uint_eq(bytes, 100);
}
END_TEST

START_TEST(test_queue_scan_and_persist)
{
    static scan_col c;
    char name[32];
    uint64_t last, qf, qb;
    bool eof;
    for (unsigned i = 0; i < MANY_FILES; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        new_file(name, i);
    }
    for (unsigned i = 0; i < MANY_FILES; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        unlink_name(name);
    }
    /* the queue is durable: a reopened store has it all */
    store_close();
    store_open();
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qf, MANY_FILES);
    ck_assert_uint_eq(qb, (uint64_t)MANY_FILES * (MANY_FILES - 1) / 2);
    /* bounded scans with a cursor see each entry once, in order */
    uint64_t cursor = 0;
    unsigned rounds = 0;
    memset(&c, 0, sizeof(c));
    do {
        ck_assert_int_eq(mds_ns_purge_scan(ns, cursor, 7, collect, &c, &last, &eof, why), 0);
        cursor = last;
        ck_assert_uint_lt(++rounds, MANY_FILES);
    } while (!eof);
    ck_assert_uint_eq(c.n, MANY_FILES);
    for (unsigned i = 1; i < c.n; i++)
        ck_assert_uint_lt(c.inos[i - 1], c.inos[i]);
    /* the callback stops a scan: not eof, cursor at the last one seen */
    scan_col c2 = { .stop_after = 3 };
    ck_assert_int_eq(mds_ns_purge_scan(ns, 0, MDS_PURGE_SCAN_MAX, collect, &c2, &last, &eof, why), 0);
    ck_assert(!eof);
    ck_assert_uint_eq(c2.n, 3);
    ck_assert_uint_eq(last, c.inos[2]);
    /* dropped in batches of at most WIRE_PURGE_LIST_MAX, one commit each;
     * a larger batch is refused whole */
    unsigned dropped = 0, total = 0;
    ck_assert_uint_gt(c.n, WIRE_PURGE_LIST_MAX);
    ck_assert_int_eq(mds_ns_purge_done(ns, c.inos, WIRE_PURGE_LIST_MAX + 1, NULL, NULL, &dropped, why),
                     -E2BIG);
    ck_assert_uint_eq(dropped, 0);
    for (unsigned i = 0; i < c.n; i += WIRE_PURGE_LIST_MAX) {
        size_t n = c.n - i < WIRE_PURGE_LIST_MAX ? c.n - i : WIRE_PURGE_LIST_MAX;
        ck_assert_int_eq(mds_ns_purge_done(ns, c.inos + i, n, NULL, NULL, &dropped, why), 0);
        ck_assert_uint_eq(dropped, n);
        total += dropped;
    }
    ck_assert_uint_eq(total, MANY_FILES);
    queue_stats(&qf, &qb);
    ck_assert_uint_eq(qf, 0);
    ck_assert_uint_eq(qb, 0);
}
END_TEST

START_TEST(test_queue_records_holds)
{
    mds_holds *h;
    mds_holds_prev prev;
    scan_col c = { 0 };
    uint64_t last;
    bool eof;
    uint64_t now = (uint64_t)time(NULL);
    /* a new namespace: no hold was ever given, none journalled */
    ck_assert_int_eq(mds_ns_holds_begin(ns, "boot-a", &prev, why), 0);
    ck_assert(prev.clean && !prev.journalled);
    ck_assert_uint_eq(prev.until_s, 0);
    /* a run that journals: taken away, a crash after this start is not a
     * clean stop; its boot and floor are recorded */
    ck_assert_int_eq(mds_ns_holds_commit_start(ns, "boot-a", now + 5, why), 0);
    ck_assert_int_eq(mds_ns_holds_begin(ns, "boot-a", &prev, why), 0);
    ck_assert(!prev.clean && prev.journalled && prev.same_boot);
    ck_assert_uint_eq(prev.floor_s, now + 5);
    ck_assert_int_eq(mds_ns_holds_begin(ns, "boot-b", &prev, why), 0);
    ck_assert(prev.journalled && !prev.same_boot);
    ck_assert_int_eq(mds_ns_holds_begin(ns, "", &prev, why), 0);
    ck_assert(!prev.same_boot); /* an unknown boot is never the same */
    ck_assert_int_eq(mds_ns_put_holds_until(ns, now + TTL, why), 0);
    store_close();
    store_open();
    ck_assert_int_eq(mds_ns_holds_begin(ns, "boot-b", &prev, why), 0);
    ck_assert(prev.clean && prev.journalled && !prev.same_boot);
    ck_assert_uint_eq(prev.until_s, now + TTL);

    /* the entry records the file's holds when its last link goes */
    ck_assert_int_eq(mds_holds_new(MDS_HOLDS_MAX, GRACE_S, 0, &h), 0);
    mds_ns_set_holds(ns, h);
    uint64_t f = new_file("held", 10);
    uint64_t g = new_file("free", 10);
    ck_assert_int_eq(mds_holds_note(h, f, 1, now + TTL, false, 0, now, NULL), 0);
    unlink_name("held");
    unlink_name("free");
    ck_assert_int_eq(mds_ns_purge_scan(ns, 0, 0, collect, &c, &last, &eof, why), 0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_uint_eq(c.inos[0], f);
    ck_assert_uint_eq(c.held[0], now + TTL);
    ck_assert_uint_eq(c.inos[1], g);
    ck_assert_uint_eq(c.held[1], 0);
    /* raised by a renewal, not lowered without asking */
    ck_assert_int_eq(mds_ns_purge_hold(ns, f, now + 2 * TTL, false, why), 0);
    ck_assert_int_eq(mds_ns_purge_hold(ns, f, now, false, why), 0);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_purge_scan(ns, 0, 0, collect, &c, &last, &eof, why), 0);
    ck_assert_uint_eq(c.held[0], now + 2 * TTL);
    /* lowered when the last hold went; kept over a restart */
    ck_assert_int_eq(mds_ns_purge_hold(ns, f, 0, true, why), 0);
    mds_ns_set_holds(ns, NULL);
    mds_holds_free(h);
    store_close();
    store_open();
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(mds_ns_purge_scan(ns, 0, 0, collect, &c, &last, &eof, why), 0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_uint_eq(c.held[0], 0);
    ck_assert_int_eq(mds_ns_purge_hold(ns, 12345, now, false, why), -ENOENT);
}
END_TEST

/* ---------------------------------------------------------------- handlers */

static tmh hh; /* tests/lib/mds_handlers.h */

static void handlers_up(uint64_t floor_s)
{
    tmh_up(&hh, &store, 2, floor_s);
}

static void handlers_down(void)
{
    tmh_down(&hh);
}

static int req(Depfs__MdsOp op, Depfs__MdsRequest *q, mds_result **out)
{
    return tmh_req(&hh, op, q, out);
}

static int create_as(uint64_t client, const char *name, uint64_t *ino)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.has_client_id = q.has_parent = q.has_mode = q.has_flags = true;
    q.client_id = client;
    q.parent = ROOT;
    q.name = (char *)name;
    q.mode = 0644;
    q.flags = O_RDWR;
    int err = req(DEPFS__MDS_OP__MDS_CREATE, &q, &r);
    if (err == 0)
        *ino = mds_result_reply(r)->attr->ino;
    mds_result_free(r);
    return err;
}

static int by_ino(Depfs__MdsOp op, uint64_t client, uint64_t ino, bool renew_hold)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = q.has_ino = true;
    q.client_id = client;
    q.ino = ino;
    if (op == DEPFS__MDS_OP__MDS_OPEN && !renew_hold) {
        q.has_flags = true;
        q.flags = O_RDONLY;
    }
    q.has_renew_hold = q.renew_hold = renew_hold;
    return req(op, &q, NULL);
}

/* MDS_PURGE_DONE of ino: how many entries the MDS dropped (0 or 1). */
static unsigned done(uint64_t ino)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.n_purge_inos = 1;
    q.purge_inos = &ino;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_PURGE_DONE, &q, &r), 0);
    ck_assert(mds_result_reply(r)->has_purge_dropped);
    unsigned n = mds_result_reply(r)->purge_dropped;
    mds_result_free(r);
    ck_assert_uint_le(n, 1);
    return n;
}

/* MDS_PURGE_LIST from 0: how many listed; the first's ino in *first. */
static unsigned list(uint64_t *first)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.has_cookie = q.has_max_entries = true;
    q.max_entries = LIST_MAX;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_PURGE_LIST, &q, &r), 0);
    const Depfs__MdsReply *rep = mds_result_reply(r);
    ck_assert(rep->has_purge_cursor && rep->has_eof);
    ck_assert_uint_le(rep->n_purge, LIST_MAX);
    unsigned n = (unsigned)rep->n_purge;
    if (n) {
        *first = rep->purge[0]->ino;
        ck_assert_ptr_nonnull(rep->purge[0]->layout);
        ck_assert_uint_eq(rep->purge[0]->layout->n_servers, rep->purge[0]->layout->n);
    }
    mds_result_free(r);
    return n;
}

START_TEST(test_handlers_hold_and_purge)
{
    uint64_t f, g, first = 0;
    handlers_up(0);
    /* an open file unlinked: held, not listed; fstat/fchmod by inode work */
    ck_assert_int_eq(create_as(7, "f", &f), 0);
    unlink_name("f");
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_GETATTR, 7, f, false), 0);
    /* another client's handle renews its hold while it is held */
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_OPEN, 8, f, true), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, f, false), 0);
    ck_assert_uint_eq(list(&first), 0); /* 8 still holds it */
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 8, f, false), 0);
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(first, f);
    /* purgeable: no new handle may take it (its strip files may be going) */
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_OPEN, 9, f, false), ENOENT);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_OPEN, 9, f, true), ENOENT);
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(done(f), 1);
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_uint_eq(done(f), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_GETATTR, 7, f, false), ENOENT);
    /* a closed file (released) goes at once when unlinked */
    ck_assert_int_eq(create_as(7, "g", &g), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, g, false), 0);
    unlink_name("g");
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(first, g);
    /* statfs shows the queue */
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_STATFS, &q, &r), 0);
    ck_assert(mds_result_reply(r)->has_purge_files);
    ck_assert_uint_eq(mds_result_reply(r)->purge_files, 1);
    mds_result_free(r);
    /* without ino / client id: refused */
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL), EINVAL);
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_PURGE_DONE, &q, NULL), EINVAL);
    handlers_down();
}
END_TEST

/* MDS_OPEN of ino for client (a reader's open): its reply's hold_gen. */
static uint64_t open_gen(uint64_t client, uint64_t ino)
{
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    mds_result *r;
    q.has_client_id = q.has_ino = q.has_flags = true;
    q.client_id = client;
    q.ino = ino;
    q.flags = O_RDONLY;
    ck_assert_int_eq(req(DEPFS__MDS_OP__MDS_OPEN, &q, &r), 0);
    ck_assert(mds_result_reply(r)->has_hold_gen);
    uint64_t gen = mds_result_reply(r)->hold_gen;
    mds_result_free(r);
    return gen;
}

/* One MDS_RELEASE of client giving back the holds of inos[i] at gens[i]. */
static int release_batch(uint64_t client, const uint64_t *inos, const uint64_t *gens, size_t n)
{
    Depfs__HoldRelease items[4], *ptrs[4];
    ck_assert_uint_le(n, 4);
    Depfs__MdsRequest q = DEPFS__MDS_REQUEST__INIT;
    q.has_client_id = true;
    q.client_id = client;
    for (size_t i = 0; i < n; i++) {
        depfs__hold_release__init(&items[i]);
        items[i].ino = inos[i];
        items[i].has_hold_gen = true;
        items[i].hold_gen = gens[i];
        ptrs[i] = &items[i];
    }
    q.n_releases = n;
    q.releases = ptrs;
    return req(DEPFS__MDS_OP__MDS_RELEASE, &q, NULL);
}

/* Opens answer a newer hold generation each time; a batch gives several
 * holds back at once, each only if no later open of it made a newer one
 * (a reopen racing the last close keeps the file). */
START_TEST(test_handlers_release_batch)
{
    uint64_t f, g, first = 0;
    handlers_up(0);
    ck_assert_int_eq(create_as(7, "f", &f), 0);
    ck_assert_int_eq(create_as(7, "g", &g), 0);
    uint64_t f1 = open_gen(7, f), g1 = open_gen(7, g);
    uint64_t f2 = open_gen(7, f); /* f opened again before its release */
    ck_assert_uint_gt(f2, f1);
    unlink_name("f");
    unlink_name("g");
    ck_assert_uint_eq(list(&first), 0);
    uint64_t inos[] = { f, g }, late[] = { f1, g1 };
    ck_assert_int_eq(release_batch(7, inos, late, 2), 0);
    ck_assert_uint_eq(list(&first), 1); /* g went; f's reopen holds it */
    ck_assert_uint_eq(first, g);
    uint64_t newest[] = { f2 };
    ck_assert_int_eq(release_batch(7, inos, newest, 1), 0);
    ck_assert_uint_eq(list(&first), 2);
    handlers_down();
}
END_TEST

START_TEST(test_handlers_restart_floor)
{
    uint64_t f, first = 0;
    uint64_t now = (uint64_t)time(NULL);
    /* after a crash nothing unlinked is purged before the floor ends,
     * also once released: holds given before the start are unknown */
    handlers_up(now + TTL);
    ck_assert_int_eq(create_as(7, "f", &f), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, f, false), 0);
    unlink_name("f");
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_uint_eq(done(f), 0); /* held: kept */
    /* the entry recorded the floor: a restart keeps it held */
    handlers_down();
    store_close();
    store_open();
    handlers_up(0);
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_uint_eq(done(f), 0);
    handlers_down();
    /* a file queued before a crash whose holds had all gone is purged at
     * once after it, whatever the new start floor: its entry says so */
    uint64_t g;
    handlers_up(0);
    ck_assert_int_eq(create_as(7, "g", &g), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, g, false), 0);
    unlink_name("g");
    handlers_down();
    store_close();
    store_open();
    handlers_up(now + TTL);
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(first, g);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_OPEN, 8, g, true), ENOENT); /* not held */
    ck_assert_uint_eq(done(g), 1);
    handlers_down();
}
END_TEST

/* The daemon's holds table over restarts (mds/holds_journal.h): a crash
 * of the MDS process under the same kernel boot forgets no hold, so no
 * floor is raised and a file no handle holds goes at once; another boot
 * (the machine crashed) raises it. */
static void note_loaded(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    ck_assert_uint_eq(client, 1);
    ck_assert(writer);
    ck_assert_uint_gt(until_s, 0);
    *(uint64_t *)arg = ino;
}

static void handlers_up_boot(const char *boot_id)
{
    tmh_up_journal(&hh, &store, 2, boot_id);
}

static void crash_and_restart(const char *boot_id)
{
    handlers_down(); /* no clean stop record: a crash */
    store_close();
    store_open();
    handlers_up_boot(boot_id);
}

START_TEST(test_handlers_journal_restart)
{
    uint64_t f, g, w, x, first = 0, loaded_ino = 0;
    uint64_t now = (uint64_t)time(NULL);
    handlers_up_boot("boot-a");
    ck_assert_uint_eq(mds_holds_floor(hh.ctx.holds, now), 0); /* a new namespace */
    ck_assert_int_eq(create_as(7, "f", &f), 0); /* held open by 7 */
    ck_assert_int_eq(create_as(7, "g", &g), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, g, false), 0); /* closed */
    ck_assert_int_eq(create_as(8, "w", &w), 0); /* open for writing by 8 */

    crash_and_restart("boot-a");
    ck_assert_uint_eq(mds_holds_floor(hh.ctx.holds, now), 0);
    ck_assert_uint_eq(mds_holds_count(hh.ctx.holds), 2); /* f by 7, w by 8 */
    /* unlinked after the crash: the closed file goes at once, the open
     * one stays until its handle closes */
    unlink_name("g");
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(first, g);
    ck_assert_uint_eq(done(g), 1);
    unlink_name("f");
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_uint_eq(done(f), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, f, false), 0);
    ck_assert_uint_eq(list(&first), 1);
    ck_assert_uint_eq(done(f), 1);
    /* the writer's hold is known as a writer's (a migrate's swap waits) */
    ck_assert(mds_holds_other_writer(hh.ctx.holds, w, 9, now));
    ck_assert(!mds_holds_other_writer(hh.ctx.holds, w, 8, now));
    /* released holds stay released over a crash */
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 8, w, false), 0);
    crash_and_restart("boot-a");
    ck_assert_uint_eq(mds_holds_count(hh.ctx.holds), 0);

    /* the machine crashed (another boot): holds may be lost, every file
     * waits a capability's life */
    ck_assert_int_eq(create_as(7, "x", &x), 0);
    ck_assert_int_eq(by_ino(DEPFS__MDS_OP__MDS_RELEASE, 7, x, false), 0);
    crash_and_restart("boot-b");
    ck_assert_uint_ge(mds_holds_floor(hh.ctx.holds, now), now + TTL);
    unlink_name("x");
    ck_assert_uint_eq(list(&first), 0);
    ck_assert_uint_eq(done(x), 0);
    /* and that floor outlives a clean stop and another crash of this run */
    uint64_t floor_b = mds_holds_floor(hh.ctx.holds, now);
    crash_and_restart("boot-b");
    ck_assert_uint_eq(mds_holds_floor(hh.ctx.holds, now), floor_b);
    handlers_down();
    ck_assert_int_eq(mds_ns_put_holds_until(ns, now, why), 0);
    store_close();
    store_open();
    handlers_up_boot("boot-c");
    ck_assert_uint_eq(mds_holds_floor(hh.ctx.holds, now), floor_b);
    handlers_down();

    /* records of expired holds are dropped at a start, live ones loaded */
    ck_assert_int_eq(mds_ns_hold_put(ns, 77, 1, now - 10 * TTL, false), 0);
    ck_assert_int_eq(mds_ns_hold_put(ns, 78, 1, now + TTL, true), 0);
    unsigned loaded, dropped;
    ck_assert_int_eq(mds_ns_holds_load(ns, now, GRACE_S, note_loaded, &loaded_ino, &loaded, &dropped,
                                       why), 0);
    ck_assert_uint_eq(loaded, 1);
    ck_assert_uint_eq(dropped, 1);
    ck_assert_uint_eq(loaded_ino, 78);
    ck_assert_int_eq(mds_ns_holds_load(ns, now, GRACE_S, note_loaded, &loaded_ino, &loaded, &dropped,
                                       why), 0);
    ck_assert_uint_eq(dropped, 0);
}
END_TEST

/* More journalled holds than the table keeps: the one that does not fit
 * raises the overflow floor at the start, and the floor record keeps it
 * for the start after (a crash of this run must not forget it). */
START_TEST(test_holds_journal_overflow)
{
    mds_holds *h;
    mds_holds_prev prev;
    uint64_t now = (uint64_t)time(NULL);
    for (uint64_t i = 0; i <= MDS_HOLDS_MAX; i++)
        ck_assert_int_eq(mds_ns_hold_put(ns, 1000 + i, 1, now + TTL, false), 0);
    ck_assert_int_eq(mds_holds_open(ns, "boot-a", now, &h, why), 0);
    ck_assert_uint_eq(mds_holds_count(h), MDS_HOLDS_MAX);
    ck_assert_uint_eq(mds_holds_floor(h, now), now + TTL + AUTH_CAP_SKEW_S);
    mds_holds_free(h);
    ck_assert_int_eq(mds_ns_holds_begin(ns, "boot-a", &prev, why), 0);
    ck_assert(prev.journalled && prev.same_boot);
    ck_assert_uint_eq(prev.floor_s, now + TTL);
}
END_TEST

static Suite *purge_suite(void)
{
    Suite *s = suite_create("mds_purge");
    TCase *tc = tcase_create("holds");
    tcase_add_test(tc, test_holds_table);
    tcase_add_test(tc, test_holds_generations);
    tcase_add_test(tc, test_holds_floors);
    tcase_add_test(tc, test_holds_journal_calls);
    suite_add_tcase(s, tc);
    tc = tcase_create("queue");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_queue_unlink_rename_link);
    tcase_add_test(tc, test_queue_scan_and_persist);
    tcase_add_test(tc, test_queue_records_holds);
    tcase_add_test(tc, test_handlers_hold_and_purge);
    tcase_add_test(tc, test_handlers_release_batch);
    tcase_add_test(tc, test_handlers_restart_floor);
    tcase_add_test(tc, test_handlers_journal_restart);
    tcase_add_test(tc, test_holds_journal_overflow);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    dlog_init("test_mds_purge", DLOG_ERR);
    SRunner *sr = srunner_create(purge_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
