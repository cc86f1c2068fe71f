/* holds.c - the MDS's table of holds on files (holds.h): a hash of
 * (file, client) -> until, chained, bounded; expired entries are dropped
 * as their bucket is walked, and all at once when the table is full. */
#include "holds.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "ino_hash.h"
#include "log.h"

#define HOLDS_BUCKETS (1u << 14)
#define HOLDS_FULL_LOG_PERIOD_MS 60000u /* "table full" at most once a minute */

typedef struct hold {
    struct hold *next;
    uint64_t ino, client, until_s;
    uint64_t gen; /* of the latest open (mds_holds_note with gen); 0: reloaded */
    bool writer; /* the client opened ino for writing (or said nothing of its access) */
} hold;

struct mds_holds {
    pthread_mutex_t m;
    unsigned max, count;
    uint64_t grace_s;
    uint64_t start_floor_s;    /* holds.h: the previous run's */
    uint64_t overflow_floor_s; /* holds.h: holds a full table did not keep */
    mds_holds_journal journal; /* .put NULL: none */
    uint64_t last_gen;         /* the latest generation given */
    hold *buckets[HOLDS_BUCKETS];
};

_Static_assert((HOLDS_BUCKETS & (HOLDS_BUCKETS - 1)) == 0, "HOLDS_BUCKETS is a power of two");

static unsigned bucket_of(uint64_t ino)
{
    return (unsigned)(ino_hash(ino) >> 40) & (HOLDS_BUCKETS - 1u);
}

bool mds_hold_live(uint64_t until_s, uint64_t grace_s, uint64_t now_s)
{
    return until_s != 0 && (until_s >= now_s || now_s - until_s <= grace_s);
}

static bool live(const mds_holds *h, uint64_t until_s, uint64_t now_s)
{
    return mds_hold_live(until_s, h->grace_s, now_s);
}

int mds_holds_new(unsigned max_entries, uint64_t grace_s, uint64_t start_floor_s, mds_holds **out)
{
    assert(max_entries > 0);
    mds_holds *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    pthread_mutex_init(&h->m, NULL);
    h->max = max_entries;
    h->grace_s = grace_s;
    h->start_floor_s = start_floor_s;
    h->last_gen = (uint64_t)clock_real_ns();
    *out = h;
    return 0;
}

void mds_holds_set_journal(mds_holds *h, const mds_holds_journal *j)
{
    assert(!j || (j->put && j->put_floor && j->drop));
    pthread_mutex_lock(&h->m);
    h->journal = j ? *j : (mds_holds_journal){ 0 };
    pthread_mutex_unlock(&h->m);
}

/* The journal's word on a hold about to be kept (under h->m): 0 without one. */
static int journal_put(mds_holds *h, uint64_t ino, uint64_t client, uint64_t until_s, bool writer)
{
    return h->journal.put ? h->journal.put(h->journal.arg, ino, client, until_s, writer) : 0;
}

void mds_holds_free(mds_holds *h)
{
    if (!h)
        return;
    for (unsigned b = 0; b < HOLDS_BUCKETS; b++) {
        hold *e = h->buckets[b];
        while (e) {
            hold *next = e->next;
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&h->m);
    free(h);
}

/* Walks bucket b dropping expired holds; returns the entry of (ino,
 * client) if any, and in *until the latest end of a live hold of ino (0:
 * none) (under h->m). */
static hold *walk_bucket(mds_holds *h, unsigned b, uint64_t ino, uint64_t client, uint64_t now_s,
                         uint64_t *until)
{
    hold **pp = &h->buckets[b], *found = NULL;
    *until = 0;
    while (*pp) {
        hold *e = *pp;
        if (!live(h, e->until_s, now_s)) {
            *pp = e->next;
            if (h->journal.drop) /* a client that never released: bounded records */
                h->journal.drop(h->journal.arg, e->ino, e->client);
            free(e);
            assert(h->count > 0);
            h->count--;
            continue;
        }
        if (e->ino == ino) {
            if (*until < e->until_s)
                *until = e->until_s;
            if (e->client == client)
                found = e;
        }
        pp = &e->next;
    }
    return found;
}

/* Drops every expired hold (a full table; under h->m). */
static void sweep(mds_holds *h, uint64_t now_s)
{
    uint64_t until;
    for (unsigned b = 0; b < HOLDS_BUCKETS; b++)
        walk_bucket(h, b, 0, 0, now_s, &until);
}

static dlog_limit full_log = DLOG_LIMIT_INIT(1, HOLDS_FULL_LOG_PERIOD_MS);

/* A full table (or no memory): every file is held until until_s instead
 * (under h->m). */
static int raise_overflow(mds_holds *h, uint64_t until_s)
{
    if (h->overflow_floor_s >= until_s)
        return 0;
    uint64_t floor_s = until_s > h->start_floor_s ? until_s : h->start_floor_s;
    int rc = h->journal.put_floor ? h->journal.put_floor(h->journal.arg, floor_s) : 0;
    if (rc < 0)
        return rc;
    h->overflow_floor_s = until_s;
    dlog_limited(&full_log, DLOG_WARN, "holds table full (%u): no unlinked file is purged "
                 "before %llu", h->count, (unsigned long long)h->overflow_floor_s);
    return 0;
}

int mds_holds_note(mds_holds *h, uint64_t ino, uint64_t client, uint64_t until_s, bool only_if_held,
                   uint64_t recorded_until_s, uint64_t now_s, uint64_t *gen)
{
    int rc = 0;
    uint64_t held_until;
    unsigned b = bucket_of(ino);
    pthread_mutex_lock(&h->m);
    hold *e = walk_bucket(h, b, ino, client, now_s, &held_until);
    if (only_if_held && held_until == 0 && !live(h, h->overflow_floor_s, now_s) &&
        !live(h, recorded_until_s, now_s)) {
        rc = -ENOENT;
        goto out;
    }
    if (e) {
        if (e->until_s < until_s) {
            rc = journal_put(h, ino, client, until_s, e->writer);
            if (rc == 0)
                e->until_s = until_s;
        }
        goto out;
    }
    if (h->count >= h->max)
        sweep(h, now_s);
    e = h->count < h->max ? malloc(sizeof(*e)) : NULL;
    if (!e) {
        rc = raise_overflow(h, until_s);
        goto out;
    }
    rc = journal_put(h, ino, client, until_s, false);
    if (rc < 0) {
        free(e);
        goto out;
    }
    *e = (hold){ .next = h->buckets[b], .ino = ino, .client = client, .until_s = until_s };
    h->buckets[b] = e;
    h->count++;
out:
    if (rc == 0 && gen != NULL) {
        *gen = ++h->last_gen; /* a full table's floor keeps no entry to carry it */
        if (e)
            e->gen = *gen;
    }
    pthread_mutex_unlock(&h->m);
    return rc;
}

void mds_holds_release(mds_holds *h, uint64_t ino, uint64_t client, uint64_t gen)
{
    pthread_mutex_lock(&h->m);
    for (hold **pp = &h->buckets[bucket_of(ino)]; *pp; pp = &(*pp)->next) {
        hold *e = *pp;
        if (e->ino == ino && e->client == client) {
            if (e->gen > gen)
                break; /* a later open holds it */
            *pp = e->next;
            free(e);
            assert(h->count > 0);
            h->count--;
            if (h->journal.drop)
                h->journal.drop(h->journal.arg, ino, client);
            break;
        }
    }
    pthread_mutex_unlock(&h->m);
}

int mds_holds_mark_writer(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s)
{
    uint64_t until;
    int rc = 0;
    pthread_mutex_lock(&h->m);
    hold *e = walk_bucket(h, bucket_of(ino), ino, client, now_s, &until);
    if (e && !e->writer) {
        rc = journal_put(h, ino, client, e->until_s, true);
        if (rc == 0)
            e->writer = true;
    }
    pthread_mutex_unlock(&h->m);
    return rc;
}

bool mds_holds_client_holds(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s)
{
    uint64_t until;
    pthread_mutex_lock(&h->m);
    bool found = walk_bucket(h, bucket_of(ino), ino, client, now_s, &until) != NULL;
    pthread_mutex_unlock(&h->m);
    return found;
}

bool mds_holds_other_writer(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s)
{
    uint64_t until;
    bool found = false;
    pthread_mutex_lock(&h->m);
    unsigned b = bucket_of(ino);
    walk_bucket(h, b, ino, client, now_s, &until); /* drops what expired */
    for (const hold *e = h->buckets[b]; e && !found; e = e->next)
        found = e->ino == ino && e->client != client && e->writer;
    found = found || live(h, h->overflow_floor_s, now_s) || live(h, h->start_floor_s, now_s);
    pthread_mutex_unlock(&h->m);
    return found;
}

/* The latest end of a live hold of ino or floor (with_start: the start
 * floor too); 0: none. */
static uint64_t until_of(mds_holds *h, uint64_t ino, uint64_t now_s, bool with_start)
{
    uint64_t until;
    pthread_mutex_lock(&h->m);
    walk_bucket(h, bucket_of(ino), ino, 0, now_s, &until);
    if (live(h, h->overflow_floor_s, now_s) && until < h->overflow_floor_s)
        until = h->overflow_floor_s;
    if (with_start && live(h, h->start_floor_s, now_s) && until < h->start_floor_s)
        until = h->start_floor_s;
    pthread_mutex_unlock(&h->m);
    return until;
}

uint64_t mds_holds_until(mds_holds *h, uint64_t ino, uint64_t now_s)
{
    return until_of(h, ino, now_s, true);
}

bool mds_holds_held(mds_holds *h, uint64_t ino, uint64_t now_s)
{
    return until_of(h, ino, now_s, true) != 0;
}

bool mds_holds_held_since_start(mds_holds *h, uint64_t ino, uint64_t now_s)
{
    return until_of(h, ino, now_s, false) != 0;
}

/* Under h->m: the later of the live floors (0: none). */
static uint64_t floor_locked(const mds_holds *h, uint64_t now_s)
{
    uint64_t until = 0;
    if (live(h, h->start_floor_s, now_s))
        until = h->start_floor_s;
    if (live(h, h->overflow_floor_s, now_s) && h->overflow_floor_s > until)
        until = h->overflow_floor_s;
    return until;
}

uint64_t mds_holds_floor(mds_holds *h, uint64_t now_s)
{
    pthread_mutex_lock(&h->m);
    uint64_t until = floor_locked(h, now_s);
    pthread_mutex_unlock(&h->m);
    return until ? until + h->grace_s : 0;
}

uint64_t mds_holds_until_max(mds_holds *h, uint64_t now_s)
{
    pthread_mutex_lock(&h->m);
    uint64_t until = floor_locked(h, now_s);
    for (unsigned b = 0; b < HOLDS_BUCKETS; b++)
        for (const hold *e = h->buckets[b]; e; e = e->next)
            if (live(h, e->until_s, now_s) && e->until_s > until)
                until = e->until_s;
    pthread_mutex_unlock(&h->m);
    return until;
}

unsigned mds_holds_count(mds_holds *h)
{
    pthread_mutex_lock(&h->m);
    unsigned n = h->count;
    pthread_mutex_unlock(&h->m);
    return n;
}
