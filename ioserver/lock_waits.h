/* lock_waits.h - lock requests that wait here for the stripes they were
 * refused, instead of being NACKed at once (LockSpec.wait_ms).
 *
 * Why: a NACKed writer gives back what it was granted and sleeps a
 * randomized, growing back-off before it asks again (client/lib/io_fanout.h
 * DC_LOCK_BACKOFF_*). When several clients write the same stripes (ranks of
 * an MPI job flushing interleaved pieces of one file), they spend most of
 * their time asleep while the stripes are free. A request that may wait is
 * parked here instead and asked again the moment a request that may have
 * released locks of its file was handled (ios_lock_waits_kick), so the
 * stripes pass from one writer to the next without a sleep between.
 *
 * What keeps it safe:
 *   - a parked request is answered exactly as if its client had sent it
 *     again at that moment: the retry function runs the whole request
 *     again (state, epoch, capability and lock checks); nothing of the
 *     first try is kept but its header;
 *   - a request waits at most its wait_ms (below the client's request
 *     timeout: the client sees a NACK, never a dead server), then is run a
 *     last time and answered whatever it finds;
 *   - the clients never wait while holding what another waiter needs in a
 *     cycle: see client/lib/io_fanout.h dc_io_run_gated;
 *   - at most max_parked requests wait; more are NACKed at once (the
 *     client's back-off takes over);
 *   - a request whose connection is gone is dropped unanswered, not run
 *     (no lock granted to a client that cannot use or release it).
 * One thread runs the retries, in the order the requests arrived. The lock
 * table's counters (locks.h) count tries: a parked request's first one is
 * a NACK there even when it is granted later; while it waits, its lock is
 * only looked at (ios_locks_conflicts), and tried again once free.
 * Return convention: 0 or negative errno. */
#ifndef DEPFS_IOS_LOCK_WAITS_H
#define DEPFS_IOS_LOCK_WAITS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "locks.h"
#include "rpc.h"

#define IOS_LOCK_WAITS_MAX 256u /* parked at once; more are NACKed at once */
/* Parked requests are deferred replies of their connection: one client's
 * must not reach the rpc limit at which its connection is no longer read
 * (its own unlocks would wait behind them). */
_Static_assert(IOS_LOCK_WAITS_MAX < RPC_DEFAULT_MAX_DEFERRED_REPLIES,
               "parked lock requests would stop their connection being read");

/* What a parked request asked for and how to answer it. */
typedef struct ios_parked {
    uint16_t type;            /* the frame type (IoOp) */
    uint64_t req_id;
    uint8_t *hdr;             /* a copy of the request's header */
    size_t hdr_len;
    rpc_replier *r;           /* held while parked */
    const char *peer;         /* the connection's (valid while r is held) */
    const auth_identity *who; /* the connection's (valid while r is held) */
    uint64_t file_id;         /* the lock it waits for */
    uint64_t first, count;
    ios_lock_owner owner;
    uint64_t deadline_ms;     /* clock_now_ms() after which it is answered anyway */
} ios_parked;

/* Runs p again. expired: its deadline has passed (or the server stops):
 * answer it whatever the outcome. Returns true when p was answered (or
 * dropped: its connection is gone), false to keep it parked (only when
 * !expired). Called by the waits' thread, never with a lock of theirs held. */
typedef bool (*ios_lock_retry_fn)(void *ctx, const ios_parked *p, bool expired);

typedef struct ios_lock_waits ios_lock_waits;

/* max_parked 0 = IOS_LOCK_WAITS_MAX. */
int ios_lock_waits_start(unsigned max_parked, ios_lock_retry_fn retry, void *ctx,
                         ios_lock_waits **out);
/* Runs every parked request a last time (expired), then joins the thread. */
void ios_lock_waits_stop(ios_lock_waits *w);

/* Parks req (header copied, r held) until a kick of file_id or wait_ms
 * from now. The lock it was refused: [first, first+count) for owner.
 * -EBUSY when max_parked wait already, -ENOMEM, -ESHUTDOWN when stopping:
 * the caller answers it now. */
int ios_lock_waits_park(ios_lock_waits *w, const rpc_msg *req, rpc_replier *r,
                        uint64_t file_id, uint64_t first, uint64_t count, ios_lock_owner owner,
                        unsigned wait_ms);
/* A request that may have released locks of file_id was handled: its
 * waiters are run again. Cheap when nothing waits. */
void ios_lock_waits_kick(ios_lock_waits *w, uint64_t file_id);
/* How many requests wait now; one being answered counts until the
 * answer is sent (a reply may reach its client a moment before). */
unsigned ios_lock_waits_parked(ios_lock_waits *w);

#endif
