/* locks.h - the ioserver's stripe-lock table (device-served locking,
 * DESIGN.md "Writing: the stripe-lock protocol", thesis fig. 3.3).
 *
 * An entry says: stripes [first, first+count) of file `file_id` are held by
 * owner (client id, op id) since taken_ms, to write this server's units of
 * them or only to read them (the mode). Rules:
 *   - try: granted when no entry of that file held by a DIFFERENT owner
 *     overlaps the range; a NACK leaves the table unchanged. Re-locking by
 *     the same owner is idempotent: the owner's overlapping or adjacent
 *     entries are merged into one (keeping the oldest taken_ms; it writes
 *     when any of them did).
 *   - a lock taken to read becomes a writing one once a write arrives under
 *     it (ios_locks_mark_written). Only a writing lock can leave its units
 *     in doubt when its owner vanishes: under a reading one they are as
 *     they were, so depfs-recovery just releases it.
 *   - release: removes exactly the given stripes from the owner's entries
 *     (an entry may shrink or split); nothing held there is fine (0); when
 *     only other owners hold stripes there: -EPERM, nothing changed.
 *   - the total number of entries is bounded; beyond it: -ENOLCK.
 * Times are passed in (now_ms, a monotonic clock) so tests control them.
 * Thread-safe; the table is sharded by file id (no single global mutex).
 * Return convention: 0 or negative errno. */
#ifndef DEPFS_IOS_LOCKS_H
#define DEPFS_IOS_LOCKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IOS_LOCKS_DEFAULT_MAX_ENTRIES 65536u

typedef struct ios_lock_owner {
    uint64_t client;
    uint64_t op;
} ios_lock_owner;

/* What a lock is taken for, at this server. */
typedef enum ios_lock_mode {
    IOS_LOCK_WRITE, /* the owner may write its units here (in doubt if it vanishes) */
    IOS_LOCK_READ   /* the owner only reads them here (pre-reads, degraded reads, scrub) */
} ios_lock_mode;

typedef struct ios_lock_entry {
    uint64_t file_id;
    uint64_t first;   /* first stripe */
    uint64_t count;   /* stripes, >= 1 */
    ios_lock_owner owner;
    uint64_t taken_ms;
    bool writes;      /* taken with IOS_LOCK_WRITE, or written under since */
} ios_lock_entry;

typedef struct ios_lock_stats {
    uint64_t granted;       /* try calls that succeeded */
    uint64_t nacked;        /* try calls refused for a conflict (less those
                             * unnoted: a refusal never sent) */
    uint64_t held;          /* entries in the table now */
    uint64_t hold_ms_total; /* sum over released entries of their hold time */
    uint64_t retried;       /* lock requests the client marked as a retry after a NACK */
} ios_lock_stats;

typedef struct ios_locks ios_locks;

/* max_entries 0 = IOS_LOCKS_DEFAULT_MAX_ENTRIES. */
int ios_locks_create(size_t max_entries, ios_locks **out);
void ios_locks_free(ios_locks *t);

/* 0 granted, -EAGAIN NACK (another owner holds an overlapping stripe),
 * -ENOLCK table full, -EINVAL count 0 or first+count overflows, -EIO its
 * intent could not be stored (not granted). */
int ios_locks_try(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                  ios_lock_owner owner, ios_lock_mode mode, uint64_t now_ms);
/* A write under owner's lock arrived for [first, first+count): its entries
 * there write from now on (journaled before the caller stores anything).
 * -EIO when that could not be journaled: the caller stores nothing. */
int ios_locks_mark_written(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                           ios_lock_owner owner);
/* 0 (released, or nothing of the range was held by anyone), -EPERM (only
 * other owners hold stripes in the range), -ENOLCK (a split would exceed the
 * table bound), -EINVAL (bad range). Nothing changes on error. */
int ios_locks_release(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner, uint64_t now_ms);
/* true when owner holds every stripe of [first, first+count). */
int ios_locks_held_by(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner);
/* true when owner holds at least one stripe of [first, first+count). */
bool ios_locks_holds_any(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                         ios_lock_owner owner);
/* true when another owner holds a stripe of [first, first+count): what
 * ios_locks_try would NACK, asked without counting or changing anything. */
bool ios_locks_conflicts(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                         ios_lock_owner owner);
/* Drops every entry of the file (file removed); returns how many. */
size_t ios_locks_drop_file(ios_locks *t, uint64_t file_id, uint64_t now_ms);

/* Recovery's lock: like try, but every conflicting entry of another owner
 * held for at least min_age_ms (an orphan) loses the overlapping stripes
 * to `owner`, all under one table mutex. The stripes each such owner lost
 * go to taken[] (at most max_taken; more conflicts: -ENOLCK, nothing
 * changed). -EAGAIN (nothing changed) when a conflicting entry is younger.
 * The new entry writes when `mode` says so or when a writing entry was
 * taken over: what was in doubt stays in doubt until written. */
int ios_locks_take_over(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                        ios_lock_owner owner, ios_lock_mode mode, uint64_t now_ms,
                        uint64_t min_age_ms, ios_lock_entry *taken, size_t max_taken,
                        size_t *n_taken);
/* Re-creates an entry from the journal after a restart (no conflict check:
 * the journal never held conflicting entries), held since taken_ms. */
int ios_locks_restore(ios_locks *t, uint64_t file_id, uint64_t first, uint64_t count,
                      ios_lock_owner owner, bool writes, uint64_t taken_ms);

/* The lock journal: called under the table's mutex with what an owner
 * holds in a file, with the span [first, end) covering all of it and
 * whether any of it writes, or held=false when the owner holds nothing
 * there any more: before a grant takes effect, and after every other
 * change. The ioserver keeps it as durable lock intents (state.h), so that
 * stripes an interrupted write left locked are still known as in doubt
 * after a crash and repaired by depfs-recovery. Returns 0 or -errno: a
 * lock whose intent cannot be stored is not granted, and a write under a
 * lock whose writing cannot be journaled is refused (a crash would
 * otherwise leave units in doubt that no intent names). Set once, before
 * the table is used. */
typedef int (*ios_lock_journal_fn)(void *arg, uint64_t file_id, ios_lock_owner owner, bool held,
                                   uint64_t first, uint64_t end, bool writes);
void ios_locks_set_journal(ios_locks *t, ios_lock_journal_fn fn, void *arg);

/* Copies up to max entries with now_ms - taken_ms >= age_ms into out[];
 * returns how many were copied; *total (if non-NULL) gets how many exist. */
size_t ios_locks_stale(ios_locks *t, uint64_t now_ms, uint64_t age_ms, ios_lock_entry *out,
                       size_t max, size_t *total);
void ios_locks_stats(ios_locks *t, ios_lock_stats *out);
/* Count one lock request that is a client's retry (IoRequest.lock_attempt > 0). */
void ios_locks_note_retry(ios_locks *t);
/* Take back what a refused try counted (one NACK, and one retry when it
 * was noted as one) while its request is not answered but waits on
 * (lock_waits.h): a request is counted once, by the try that answers it.
 * ios_locks_note_nack counts it again (answered after all). */
void ios_locks_unnote_nack(ios_locks *t, bool retry);
void ios_locks_note_nack(ios_locks *t, bool retry);

#endif
