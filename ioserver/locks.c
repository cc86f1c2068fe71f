/* locks.c - the ioserver's stripe-lock table (see locks.h for the rules).
 *
 * Sharded hash by file id: LOCK_SHARDS mutexes, each guarding its buckets of
 * per-file nodes; a node holds that file's entries in a small array. An
 * owner's entries of one file are kept disjoint and non-adjacent (try merges
 * them), so coverage checks walk them without double counting. */
#include "locks.h"

#include "invariant.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LOCK_SHARDS 64u
#define LOCK_BUCKETS_PER_SHARD 256u
#define LOCK_ARRAY_MIN_CAP 4u

typedef struct lock_range {
    uint64_t first, end; /* stripes [first, end) */
    ios_lock_owner owner;
    uint64_t taken_ms;
    bool writes;         /* locks.h: a writing lock (in doubt if orphaned) */
} lock_range;

typedef struct file_node {
    uint64_t file_id;
    struct file_node *next;
    size_t n, cap;
    lock_range *v;
} file_node;

typedef struct lock_shard {
    pthread_mutex_t mu;
    file_node *buckets[LOCK_BUCKETS_PER_SHARD];
} lock_shard;

struct ios_locks {
    size_t max_entries;
    ios_lock_journal_fn journal; /* may be NULL */
    void *journal_arg;
    atomic_size_t n_entries;
    atomic_uint_fast64_t granted, nacked, hold_ms_total, retried;
    lock_shard shards[LOCK_SHARDS];
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static lock_shard *shard_of(ios_locks *t, uint64_t file_id, file_node ***bucket)
{
    uint64_t h = mix64(file_id);
    lock_shard *s = &t->shards[h % LOCK_SHARDS];
    *bucket = &s->buckets[(h / LOCK_SHARDS) % LOCK_BUCKETS_PER_SHARD];
    return s;
}

static file_node *node_find(file_node **bucket, uint64_t file_id)
{
    for (file_node *f = *bucket; f; f = f->next)
        if (f->file_id == file_id)
            return f;
    return NULL;
}

static void node_unlink_free(file_node **bucket, file_node *f)
{
    assert(f->n == 0);
    for (file_node **pp = bucket; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    free(f->v);
    free(f);
}

static int node_reserve(file_node *f, size_t extra)
{
    if (f->n + extra <= f->cap)
        return 0;
    size_t cap = f->cap ? f->cap * 2 : LOCK_ARRAY_MIN_CAP;
    while (cap < f->n + extra)
        cap *= 2;
    lock_range *v = realloc(f->v, cap * sizeof(*v));
    if (!v)
        return -ENOMEM;
    f->v = v;
    f->cap = cap;
    return 0;
}

static bool same_owner(ios_lock_owner a, ios_lock_owner b)
{
    return a.client == b.client && a.op == b.op;
}

static bool overlaps(const lock_range *r, uint64_t first, uint64_t end)
{
    return r->first < end && first < r->end;
}

/* Reserve `extra` entries against the table bound. */
static int entries_reserve(ios_locks *t, size_t extra)
{
    if (extra == 0)
        return 0;
    size_t old = atomic_fetch_add(&t->n_entries, extra);
    if (old + extra > t->max_entries) {
        atomic_fetch_sub(&t->n_entries, extra);
        return -ENOLCK;
    }
    return 0;
}

static int range_check(uint64_t first, uint64_t count)
{
    if (count == 0 || first + count < first)
        return -EINVAL;
    return 0;
}

/* The table's invariant for one file (locks.h): every entry holds at least
 * one stripe; an owner's entries are disjoint and not adjacent (try merges
 * them); entries of different owners never overlap. Checked after every
 * change, under the shard mutex. */
static void node_verify(const file_node *f)
{
    INVARIANT(f->n <= f->cap, "file %llx: %zu entries, room for %zu", (unsigned long long)f->file_id,
          f->n, f->cap);
    for (size_t i = 0; i < f->n; i++) {
        const lock_range *a = &f->v[i];
        INVARIANT(a->first < a->end, "file %llx entry %zu: stripes [%llu,%llu)",
              (unsigned long long)f->file_id, i, (unsigned long long)a->first,
              (unsigned long long)a->end);
        for (size_t j = i + 1; j < f->n; j++) {
            const lock_range *b = &f->v[j];
            bool mine = same_owner(a->owner, b->owner);
            bool touch = mine ? a->first <= b->end && b->first <= a->end
                              : a->first < b->end && b->first < a->end;
            INVARIANT(!touch, "file %llx: entries [%llu,%llu) of %llu/%llu and [%llu,%llu) of "
                  "%llu/%llu %s", (unsigned long long)f->file_id,
                  (unsigned long long)a->first, (unsigned long long)a->end,
                  (unsigned long long)a->owner.client, (unsigned long long)a->owner.op,
                  (unsigned long long)b->first, (unsigned long long)b->end,
                  (unsigned long long)b->owner.client, (unsigned long long)b->owner.op,
                  mine ? "of one owner touch" : "of two owners overlap");
        }
    }
}

/* Tells the journal what `owner` holds in the file now (f may be NULL:
 * nothing), plus [first, end) (writes) that it is about to be granted
 * (end 0: none). Caller holds the shard mutex. 0 or -EIO. */
static int journal_owner_plus(ios_locks *t, const file_node *f, uint64_t file_id,
                              ios_lock_owner owner, uint64_t first, uint64_t end, bool writes)
{
    if (!t->journal)
        return 0;
    for (size_t i = 0; f && i < f->n; i++) {
        const lock_range *r = &f->v[i];
        if (!same_owner(r->owner, owner))
            continue;
        if (r->first < first)
            first = r->first;
        if (r->end > end)
            end = r->end;
        writes = writes || r->writes;
    }
    return t->journal(t->journal_arg, file_id, owner, end > 0, end > 0 ? first : 0, end, writes) < 0
               ? -EIO : 0;
}

static int journal_owner(ios_locks *t, const file_node *f, uint64_t file_id,
                         ios_lock_owner owner)
{
    return journal_owner_plus(t, f, file_id, owner, UINT64_MAX, 0, false);
}

void ios_locks_set_journal(ios_locks *t, ios_lock_journal_fn fn, void *arg)
{
    t->journal = fn;
    t->journal_arg = arg;
}

int ios_locks_create(size_t max_entries, ios_locks **out)
{
    ios_locks *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->max_entries = max_entries ? max_entries : IOS_LOCKS_DEFAULT_MAX_ENTRIES;
    atomic_init(&t->n_entries, 0);
    atomic_init(&t->granted, 0);
    atomic_init(&t->nacked, 0);
    atomic_init(&t->hold_ms_total, 0);
    atomic_init(&t->retried, 0);
    for (unsigned i = 0; i < LOCK_SHARDS; i++)
        pthread_mutex_init(&t->shards[i].mu, NULL);
    *out = t;
    return 0;
}

void ios_locks_free(ios_locks *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < LOCK_SHARDS; i++) {
        lock_shard *s = &t->shards[i];
        for (unsigned b = 0; b < LOCK_BUCKETS_PER_SHARD; b++) {
            file_node *f = s->buckets[b];
            while (f) {
                file_node *next = f->next;
                free(f->v);
                free(f);
                f = next;
            }
        }
        pthread_mutex_destroy(&s->mu);
    }
    free(t);
}

/* Merge the owner's entries overlapping or adjacent to [first,end) with it
 * into one entry (writing if any part writes). Caller checked there is no
 * conflict. */
static int node_grant(ios_locks *t, file_node *f, uint64_t first, uint64_t end,
                      ios_lock_owner owner, bool writes, uint64_t now_ms)
{
    size_t merged = 0;
    uint64_t taken_ms = now_ms;
    for (size_t i = 0; i < f->n; i++) {
        const lock_range *r = &f->v[i];
        if (!same_owner(r->owner, owner) || r->first > end || r->end < first)
            continue;
        merged++;
        if (r->first < first)
            first = r->first;
        if (r->end > end)
            end = r->end;
        if (r->taken_ms < taken_ms)
            taken_ms = r->taken_ms;
        writes = writes || r->writes;
    }
    if (merged == 0) {
        int rc = entries_reserve(t, 1);
        if (rc)
            return rc;
        rc = node_reserve(f, 1);
        if (rc) {
            atomic_fetch_sub(&t->n_entries, 1);
            return rc;
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < f->n; i++) {
        const lock_range *r = &f->v[i];
        bool absorbed = same_owner(r->owner, owner) && r->first >= first && r->end <= end;
        if (!absorbed)
            f->v[w++] = *r;
    }
    assert(f->n - w == merged);
    f->n = w;
    f->v[f->n++] = (lock_range){
        .first = first, .end = end, .owner = owner, .taken_ms = taken_ms, .writes = writes };
    if (merged > 1)
        atomic_fetch_sub(&t->n_entries, merged - 1);
    return 0;
}

int ios_locks_try(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                  ios_lock_owner owner, ios_lock_mode mode, uint64_t now_ms)
{
    int rc = range_check(first, count);
    if (rc)
        return rc;
    uint64_t end = first + count;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);
    bool created = false;

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    if (f) {
        for (size_t i = 0; i < f->n; i++) {
            if (overlaps(&f->v[i], first, end) && !same_owner(f->v[i].owner, owner)) {
                rc = -EAGAIN;
                goto out;
            }
        }
    } else {
        f = calloc(1, sizeof(*f));
        if (!f) {
            rc = -ENOMEM;
            goto out;
        }
        f->file_id = file_id;
        f->next = *bucket;
        *bucket = f;
        created = true;
    }
    /* the intent first: a lock a crash would forget is never granted */
    rc = journal_owner_plus(t, f, file_id, owner, first, end, mode == IOS_LOCK_WRITE);
    if (rc == 0) {
        rc = node_grant(t, f, first, end, owner, mode == IOS_LOCK_WRITE, now_ms);
        if (rc)
            (void)journal_owner(t, f, file_id, owner); /* back to what it holds */
    }
    node_verify(f);
out:
    if (rc && created)
        node_unlink_free(bucket, f);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
        atomic_fetch_add(&t->granted, 1);
    else if (rc == -EAGAIN)
        atomic_fetch_add(&t->nacked, 1);
    return rc;
}

/* Removes [first,end) from the owner's entries; splits need `splits` spare
 * slots, already reserved by the caller. */
static void node_cut(ios_locks *t, file_node *f, uint64_t first, uint64_t end,
                     ios_lock_owner owner, uint64_t now_ms)
{
    size_t n = f->n; /* pieces appended by splits are outside the range */
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        lock_range r = f->v[i];
        if (!same_owner(r.owner, owner) || !overlaps(&r, first, end)) {
            f->v[w++] = r;
            continue;
        }
        bool left = r.first < first, right = r.end > end;
        if (!left && !right) {
            uint64_t held_ms = now_ms > r.taken_ms ? now_ms - r.taken_ms : 0;
            atomic_fetch_add(&t->hold_ms_total, held_ms);
            atomic_fetch_sub(&t->n_entries, 1);
            continue;
        }
        if (left && right) {
            lock_range tail = r;
            tail.first = end;
            assert(f->n < f->cap);
            f->v[f->n++] = tail;
        }
        if (left)
            r.end = first;
        else
            r.first = end;
        assert(r.first < r.end);
        f->v[w++] = r;
    }
    /* move the split tails down behind the kept entries */
    for (size_t i = n; i < f->n; i++)
        f->v[w++] = f->v[i];
    f->n = w;
}

int ios_locks_release(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner, uint64_t now_ms)
{
    int rc = range_check(first, count);
    if (rc)
        return rc;
    uint64_t end = first + count;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    if (!f)
        goto out;
    size_t mine = 0, others = 0, splits = 0;
    for (size_t i = 0; i < f->n; i++) {
        const lock_range *r = &f->v[i];
        if (!overlaps(r, first, end))
            continue;
        if (!same_owner(r->owner, owner)) {
            others++;
            continue;
        }
        mine++;
        if (r->first < first && r->end > end)
            splits++;
    }
    if (mine == 0) {
        rc = others ? -EPERM : 0;
        goto out;
    }
    rc = entries_reserve(t, splits);
    if (rc)
        goto out;
    rc = node_reserve(f, splits);
    if (rc) {
        atomic_fetch_sub(&t->n_entries, splits);
        goto out;
    }
    node_cut(t, f, first, end, owner, now_ms);
    (void)journal_owner(t, f, file_id, owner); /* a failure keeps an intent: released later */
    node_verify(f);
    if (f->n == 0)
        node_unlink_free(bucket, f);
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Another owner's entry overlapping [first, end): its age decides. */
static int take_over_check(const file_node *f, uint64_t first, uint64_t end,
                           ios_lock_owner owner, uint64_t now_ms, uint64_t min_age_ms,
                           size_t max_taken, size_t *conflicts, size_t *splits)
{
    *conflicts = *splits = 0;
    for (size_t i = 0; f && i < f->n; i++) {
        const lock_range *r = &f->v[i];
        if (!overlaps(r, first, end) || same_owner(r->owner, owner))
            continue;
        if (now_ms < r->taken_ms || now_ms - r->taken_ms < min_age_ms)
            return -EAGAIN;
        (*conflicts)++;
        if (r->first < first && r->end > end)
            (*splits)++;
    }
    return *conflicts > max_taken ? -ENOLCK : 0;
}

int ios_locks_take_over(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                        ios_lock_owner owner, ios_lock_mode mode, uint64_t now_ms,
                        uint64_t min_age_ms, ios_lock_entry *taken, size_t max_taken,
                        size_t *n_taken)
{
    *n_taken = 0;
    int rc = range_check(first, count);
    if (rc)
        return rc;
    uint64_t end = first + count;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);
    size_t conflicts, splits;

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    rc = take_over_check(f, first, end, owner, now_ms, min_age_ms, max_taken, &conflicts,
                         &splits);
    if (rc || conflicts == 0) {
        pthread_mutex_unlock(&s->mu);
        if (rc == 0) /* nothing to take over: an ordinary lock */
            return ios_locks_try(t, file_id, first, count, owner, mode, now_ms);
        if (rc == -EAGAIN)
            atomic_fetch_add(&t->nacked, 1);
        return rc;
    }
    /* room for the splits and for our own entry, before changing anything
     * (the orphans must not lose stripes that we then fail to hold) */
    if (atomic_load(&t->n_entries) + splits + 1 > t->max_entries) {
        rc = -ENOLCK;
        goto out;
    }
    rc = entries_reserve(t, splits);
    if (rc == 0 && (rc = node_reserve(f, splits + 1)) != 0)
        atomic_fetch_sub(&t->n_entries, splits);
    if (rc)
        goto out;
    bool writes = mode == IOS_LOCK_WRITE;
    for (size_t i = 0; i < f->n && *n_taken < conflicts; i++) {
        const lock_range *r = &f->v[i];
        if (!overlaps(r, first, end) || same_owner(r->owner, owner))
            continue;
        taken[(*n_taken)++] = (ios_lock_entry){
            .file_id = file_id,
            .first = r->first > first ? r->first : first,
            .count = (r->end < end ? r->end : end) - (r->first > first ? r->first : first),
            .owner = r->owner,
            .taken_ms = r->taken_ms,
            .writes = r->writes,
        };
        writes = writes || r->writes;
    }
    assert(*n_taken == conflicts);
    /* our intent (with what was in doubt) before the orphans' shrink */
    rc = journal_owner_plus(t, f, file_id, owner, first, end, writes);
    if (rc) {
        atomic_fetch_sub(&t->n_entries, splits);
        *n_taken = 0;
        goto out;
    }
    for (size_t i = 0; i < *n_taken; i++) {
        node_cut(t, f, first, end, taken[i].owner, now_ms);
        (void)journal_owner(t, f, file_id, taken[i].owner); /* kept larger: the safe side */
    }
    rc = node_grant(t, f, first, end, owner, writes, now_ms);
    assert(rc == 0 || rc == -ENOLCK); /* the array has room */
    if (rc)
        (void)journal_owner(t, f, file_id, owner);
    node_verify(f);
out:
    if (f->n == 0)
        node_unlink_free(bucket, f);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
        atomic_fetch_add(&t->granted, 1);
    return rc;
}

int ios_locks_restore(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner, bool writes, uint64_t taken_ms)
{
    int rc = range_check(first, count);
    if (rc)
        return rc;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    if (!f) {
        f = calloc(1, sizeof(*f));
        if (!f) {
            rc = -ENOMEM;
            goto out;
        }
        f->file_id = file_id;
        f->next = *bucket;
        *bucket = f;
    }
    /* an intent is the span of what its owner held, so two owners' spans
     * may overlap where neither or only the other held stripes: restore
     * the parts no other owner's entry covers */
    uint64_t at = first, end = first + count;
    while (rc == 0 && at < end) {
        uint64_t covered_end = 0, piece_end = end;
        for (size_t i = 0; i < f->n; i++) {
            const lock_range *r = &f->v[i];
            if (same_owner(r->owner, owner) || r->end <= at || r->first >= end)
                continue;
            if (r->first <= at)
                covered_end = r->end; /* one at most: other owners never overlap */
            else if (r->first < piece_end)
                piece_end = r->first;
        }
        if (covered_end) {
            at = covered_end;
            continue;
        }
        rc = node_grant(t, f, at, piece_end, owner, writes, taken_ms);
        at = piece_end;
    }
    if (rc == 0)
        node_verify(f);
    if (f->n == 0)
        node_unlink_free(bucket, f);
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int ios_locks_held_by(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner)
{
    if (range_check(first, count))
        return 0;
    uint64_t end = first + count, pos = first;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    bool progress = f != NULL;
    while (progress && pos < end) {
        progress = false;
        for (size_t i = 0; i < f->n; i++) {
            const lock_range *r = &f->v[i];
            if (same_owner(r->owner, owner) && r->first <= pos && pos < r->end) {
                pos = r->end;
                progress = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return pos >= end;
}

/* Whether an entry of [first, first+count) is owner's (mine) or another
 * owner's (!mine). */
static bool overlap_of(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                       ios_lock_owner owner, bool mine)
{
    if (range_check(first, count))
        return false;
    uint64_t end = first + count;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);
    bool found = false;

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    for (size_t i = 0; f != NULL && i < f->n && !found; i++)
        found = same_owner(f->v[i].owner, owner) == mine && overlaps(&f->v[i], first, end);
    pthread_mutex_unlock(&s->mu);
    return found;
}

bool ios_locks_holds_any(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                         ios_lock_owner owner)
{
    return overlap_of(t, file_id, first, count, owner, true);
}

bool ios_locks_conflicts(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                         ios_lock_owner owner)
{
    return overlap_of(t, file_id, first, count, owner, false);
}

int ios_locks_mark_written(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                           ios_lock_owner owner)
{
    if (range_check(first, count))
        return 0;
    uint64_t end = first + count;
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);
    bool changed = false;

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    for (size_t i = 0; f != NULL && i < f->n; i++) {
        lock_range *r = &f->v[i];
        if (same_owner(r->owner, owner) && overlaps(r, first, end) && !r->writes) {
            r->writes = true;
            changed = true;
        }
    }
    /* on failure the entries stay writing ones here (in doubt, the safe
     * side) but nothing is stored: the caller refuses the write */
    int rc = changed ? journal_owner(t, f, file_id, owner) : 0;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

size_t ios_locks_drop_file(ios_locks *t, uint64_t file_id, uint64_t now_ms)
{
    file_node **bucket;
    lock_shard *s = shard_of(t, file_id, &bucket);
    size_t dropped = 0;

    pthread_mutex_lock(&s->mu);
    file_node *f = node_find(bucket, file_id);
    if (f) {
        for (size_t i = 0; i < f->n; i++) {
            uint64_t taken_ms = f->v[i].taken_ms;
            atomic_fetch_add(&t->hold_ms_total, now_ms > taken_ms ? now_ms - taken_ms : 0);
        }
        for (size_t i = 0; i < f->n; i++)
            if (t->journal)
                t->journal(t->journal_arg, file_id, f->v[i].owner, false, 0, 0, false);
        dropped = f->n;
        atomic_fetch_sub(&t->n_entries, dropped);
        f->n = 0;
        node_unlink_free(bucket, f);
    }
    pthread_mutex_unlock(&s->mu);
    return dropped;
}

size_t ios_locks_stale(ios_locks *t, uint64_t now_ms, uint64_t age_ms, ios_lock_entry *out,
                       size_t max, size_t *total)
{
    size_t copied = 0, found = 0;
    for (unsigned i = 0; i < LOCK_SHARDS; i++) {
        lock_shard *s = &t->shards[i];
        pthread_mutex_lock(&s->mu);
        for (unsigned b = 0; b < LOCK_BUCKETS_PER_SHARD; b++) {
            for (file_node *f = s->buckets[b]; f; f = f->next) {
                for (size_t j = 0; j < f->n; j++) {
                    const lock_range *r = &f->v[j];
                    if (now_ms < r->taken_ms || now_ms - r->taken_ms < age_ms)
                        continue;
                    found++;
                    if (copied < max)
                        out[copied++] = (ios_lock_entry){ .file_id = f->file_id,
                                                          .first = r->first,
                                                          .count = r->end - r->first,
                                                          .owner = r->owner,
                                                          .taken_ms = r->taken_ms,
                                                          .writes = r->writes };
                }
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (total)
        *total = found;
    return copied;
}

void ios_locks_stats(ios_locks *t, ios_lock_stats *out)
{
    out->granted = atomic_load(&t->granted);
    out->nacked = atomic_load(&t->nacked);
    out->held = atomic_load(&t->n_entries);
    out->hold_ms_total = atomic_load(&t->hold_ms_total);
    out->retried = atomic_load(&t->retried);
}

void ios_locks_note_retry(ios_locks *t) { atomic_fetch_add(&t->retried, 1); }

void ios_locks_unnote_nack(ios_locks *t, bool retry)
{
    assert(atomic_load(&t->nacked) > 0);
    atomic_fetch_sub(&t->nacked, 1);
    if (retry) {
        assert(atomic_load(&t->retried) > 0);
        atomic_fetch_sub(&t->retried, 1);
    }
}

void ios_locks_note_nack(ios_locks *t, bool retry)
{
    atomic_fetch_add(&t->nacked, 1);
    if (retry)
        ios_locks_note_retry(t);
}
