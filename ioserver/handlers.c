/* handlers.c - the ioserver's IoOp dispatch (frame type = IoOp; the reply
 * carries the same type). Every reply has err (0 or a positive errno),
 * message on error, state (this server's ServerState) and cluster_epoch
 * (the newest epoch pushed to this server; recovery/README.md).
 *
 * States: UP serves everything. REBUILDING and RECONSTRUCTING refuse every
 * IO_READ without ignore_locks (EIO, "treat this server as failed"; also a
 * read that carries the lock of a write's pre-read: the client treats the
 * server as down for those stripes) and accept everything else.
 *
 * Epochs: a request with cluster_epoch set is checked against the known
 * epoch E before anything else:
 *   - cluster_epoch > E: ESTALE ("server behind": it missed a state change;
 *     the client treats it as down), for every op but IO_SET_STATE;
 *   - cluster_epoch < E: ESTALE ("client behind": refresh from the MDS and
 *     redo) for the lock/write path: IO_READ with a lock (not ignore_locks),
 *     IO_LOCK, IO_WRITE, IO_TRUNCATE.
 * Requests without cluster_epoch are never refused for it.
 *
 * IO_READ      file_id, extents [, lock] [, ignore_locks]. With lock and no
 *              ignore_locks the stripes are locked first: NACK -> EAGAIN,
 *              nothing read (with lock.wait_ms the request first waits for
 *              them, lock_waits.h). Bulk = the extents' bytes concatenated (zeros
 *              past the strip's end). While the server is REBUILDING, reads
 *              without ignore_locks fail EIO ("treat this server as failed").
 * IO_WRITE     file_id, extents, bulk (length = sum of extent lengths)
 *              [, lock [, unlock]] [, sync] [, down_servers] [, ignore_locks].
 *              With lock and no ignore_locks the owner must hold every stripe
 *              of the lock (else EPERM: e.g. the recovery module already
 *              repaired and released an orphaned lock). down_servers: the
 *              (server, file) dirty records are durable before the data is
 *              written. unlock releases the lock after the data is stored;
 *              sync fdatasyncs before the reply.
 * IO_LOCK      file_id, lock -> 0 or EAGAIN (NACK; with lock.wait_ms only
 *              once that wait ran out); ENOLCK when the table is full.
 *              With take_over_stale (recovery's orphan repair):
 *              conflicting locks held >= lock_lease_ms lose the stripes to
 *              this owner (EAGAIN if any conflicting lock is younger);
 *              reply.stale_locks lists what each of them lost.
 * IO_UNLOCK    file_id, lock -> 0 (also when nothing was held); EPERM when
 *              only another owner holds those stripes. The recovery module
 *              releases an orphan by naming its owner (from the heartbeat).
 * IO_TRUNCATE  file_id, local_size: the strip file's new length (absent
 *              files stay absent).
 * IO_REMOVE    file_id: unlink the strip file, drop its locks.
 * IO_FSYNC     file_id: fdatasync -> alloc_bytes, local_size as IO_EXTENTS
 *              gives them (not while REBUILDING/RECONSTRUCTING), so that
 *              an fsync's size commit needs no IO_EXTENTS round.
 * IO_EXTENTS   file_id [, one extent, stripe_unit] -> alloc_bytes (the strip
 *              file's st_blocks x 512), local_size; with the extent (a
 *              range of whole stripe units) data_extents: where the strip
 *              file holds data there, rounded out to whole units, at most
 *              WIRE_DATA_EXTENTS_MAX, and next_offset when more may follow.
 *              EIO while REBUILDING/RECONSTRUCTING (holes not trustworthy).
 * IO_STAT      [file_id] -> bytes_used, bytes_free (file system of the data
 *              dir), locks_granted/nacked/held/retried, lock_hold_ms_total, state,
 *              damaged_blocks, the background scrub's counters (scrub), and
 *              with file_id != 0 local_size = that strip file's length.
 * IO_HEARTBEAT -> state, lock counters and scrub counters (as IO_STAT),
 *              stale_locks: entries held >= lock_lease_ms (at most
 *              IOS_MAX_STALE_REPLY, oldest not guaranteed first; each says
 *              whether it writes: LockSpec.read_only), scrub_damage: what the
 *              background scrub found and no write covered yet.
 * IO_SET_STATE [server_state] [, cluster_epoch] (recovery): the state
 *              (UP, REBUILDING or RECONSTRUCTING; DOWN is EINVAL) is stored
 *              durably, and the known epoch becomes max(known, cluster_epoch).
 *              Both optional; the reply carries the result.
 * IO_DIRTY     the dirty log ("file F changed while server S was down"),
 *              its fields read in one order for every check (dirty_op.h):
 *   - sync=true: REJOIN (older form of IO_SET_STATE UP). This server's state
 *     becomes SERVER_UP, durably.
 *   - dirty_action DIRTY_PROBE: down_servers = ids to check (at most
 *     CONFIG_MAX_IOSERVERS): dirty_files = those with a record for file_id.
 *   - otherwise local_size = S, the server whose records are meant (<= 2^32-1):
 *     - DIRTY_CLAIM: mark the record (S, file_id) claimed (a rejoin is about
 *       to rebuild the file on S); absent is fine. A WRITE naming S down
 *       unclaims it again.
 *     - DIRTY_CLEAR (or unlock=true): delete the record if still claimed;
 *       EAGAIN when it was recorded again since the claim (it stays);
 *       absent is fine.
 *     - DIRTY_LIST (default): dirty_files = ids recorded for S that are >= file_id
 *       (a cursor; 0 = from the start), ascending, at most
 *       IOS_DIRTY_LIST_MAX. When more remain, reply.local_size is set to the
 *       cursor for the next call; when it is absent the listing is complete.
 *
 * Bounds: every request passes ioserver/req_check.c before any op sees
 * it (extents, lock ranges, sizes, stripe unit, epoch, server ids, file id);
 * a refusal (EINVAL, EFBIG, ERANGE with a message) stores nothing and is
 * logged. */
#include "handlers.h"
#include "lease.h"
#include "req_check.h"
#include "client_io.h"
#include "dirty_op.h"
#include "scrubber.h"
#include "stall.h"
#include "strip_extents.h"
#include "unstored.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "fault.h"
#include "log.h"
#include "wire.h"
#include "wire_check.h"

static const char *op_name(uint16_t type)
{
    switch (type) {
    case DEPFS__IO_OP__IO_READ: return "READ";
    case DEPFS__IO_OP__IO_WRITE: return "WRITE";
    case DEPFS__IO_OP__IO_LOCK: return "LOCK";
    case DEPFS__IO_OP__IO_UNLOCK: return "UNLOCK";
    case DEPFS__IO_OP__IO_TRUNCATE: return "TRUNCATE";
    case DEPFS__IO_OP__IO_REMOVE: return "REMOVE";
    case DEPFS__IO_OP__IO_FSYNC: return "FSYNC";
    case DEPFS__IO_OP__IO_STAT: return "STAT";
    case DEPFS__IO_OP__IO_HEARTBEAT: return "HEARTBEAT";
    case DEPFS__IO_OP__IO_DIRTY: return "DIRTY";
    case DEPFS__IO_OP__IO_SET_STATE: return "SET_STATE";
    case DEPFS__IO_OP__IO_EXTENTS: return "EXTENTS";
    default: return "?";
    }
}

/* Sets err (positive errno from a negative rc) and the message. */
__attribute__((format(printf, 3, 4)))
static int fail(ios_result *res, int rc, const char *fmt, ...)
{
    assert(rc < 0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof(res->message), fmt, ap);
    va_end(ap);
    res->reply.err = -rc;
    res->reply.message = res->message;
    return rc;
}

/* ---------------------------------------------------------------- checks */
typedef struct extents {
    ios_extent *v;
    size_t n;
    uint64_t total_bytes;
} extents;

/* The request's extents as ios_extents; their bounds were checked at the
 * boundary (req_check.c). */
static int extents_take(const Depfs__IoRequest *q, extents *out, ios_result *res)
{
    out->v = NULL;
    out->n = 0;
    out->total_bytes = 0;
    assert(q->n_extents <= IOS_MAX_EXTENTS);
    if (q->n_extents == 0)
        return 0;
    out->v = calloc(q->n_extents, sizeof(*out->v));
    if (!out->v)
        return fail(res, -ENOMEM, "out of memory for %zu extents", q->n_extents);
    for (size_t i = 0; i < q->n_extents; i++) {
        uint64_t off = q->extents[i]->offset, len = q->extents[i]->length;
        assert(off <= IOS_MAX_LOCAL_BYTES && len <= IOS_MAX_LOCAL_BYTES - off);
        out->v[i] = (ios_extent){ .offset = off, .length = len };
        out->total_bytes += len; /* <= 4096 * 2^50: no overflow */
    }
    out->n = q->n_extents;
    return 0;
}

static ios_lock_owner owner_of(const Depfs__LockSpec *l)
{
    return (ios_lock_owner){ .client = l->owner_client, .op = l->owner_op };
}

static ios_lock_mode mode_of(const Depfs__LockSpec *l)
{
    return l->has_read_only && l->read_only ? IOS_LOCK_READ : IOS_LOCK_WRITE;
}

static bool obeys_locks(const Depfs__IoRequest *q)
{
    return q->lock && !(q->has_ignore_locks && q->ignore_locks);
}

/* A lock request the client retries after a NACK (lock_attempt > 0). */
static void count_retry(ios_ctx *c, const Depfs__IoRequest *q)
{
    if (q->has_lock_attempt && q->lock_attempt > 0)
        ios_locks_note_retry(c->locks);
}

/* A NACK (ios_locks_try -EAGAIN, after count_retry): when the request
 * lets it wait (LockSpec.wait_ms), note what for, so that ios_handle parks
 * it. */
static int nack(const Depfs__IoRequest *q, ios_result *res)
{
    const Depfs__LockSpec *l = q->lock;
    if (l->has_wait_ms && l->wait_ms > 0) {
        res->wait_ms = l->wait_ms;
        res->wait_first = l->first_stripe;
        res->wait_count = l->stripe_count;
        res->wait_owner = owner_of(l);
        res->wait_retry = q->has_lock_attempt && q->lock_attempt > 0;
    }
    return fail(res, -EAGAIN, "stripes locked by another owner");
}

/* ------------------------------------------------------------------- ops */
/* The units a READ wants (IoRequest.data_units, which req_check bounded):
 * NULL for every unit. */
static const ios_data_units *data_units_of(const Depfs__IoRequest *q, ios_data_units *du)
{
    if (!q->data_units)
        return NULL;
    *du = (ios_data_units){.n = q->data_units->n, .k = q->data_units->k,
                           .pos = q->data_units->position, .su = q->stripe_unit};
    return du;
}

/* A lock was granted on file_id: tell its holder which servers' units of
 * it are untrusted here (dirty records), so that it computes nothing from
 * them; a writer's read-modify-write would otherwise store parity made
 * from a stale unit, and the rebuild would then decode the stale bytes. */
static int note_untrusted(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    uint32_t found[CONFIG_MAX_IOSERVERS];
    size_t n = 0;
    int rc = ios_dirty_servers_of(c->state, q->file_id, found, CONFIG_MAX_IOSERVERS, &n);
    if (rc)
        return fail(res, rc, "cannot read dirty records: %s", strerror(-rc));
    if (n == 0)
        return 0;
    res->untrusted = malloc(n * sizeof(*res->untrusted));
    if (!res->untrusted)
        return fail(res, -ENOMEM, "out of memory");
    memcpy(res->untrusted, found, n * sizeof(*found));
    res->reply.untrusted_servers = res->untrusted;
    res->reply.n_untrusted_servers = n;
    return 0;
}

static int do_read(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    extents ex;
    bool locked = false;
    int rc = extents_take(q, &ex, res);
    if (rc)
        goto out;
    assert(ex.total_bytes <= c->max_bulk_bytes);
    bool ignore = q->has_ignore_locks && q->ignore_locks;
    uint32_t state = ios_state_get(c->state);
    if (!ignore && ios_state_refuses_reads(state)) {
        rc = fail(res, -EIO, "server is %s; treat it as failed",
                  state == DEPFS__SERVER_STATE__SERVER_REBUILDING ? "rebuilding"
                                                                  : "reconstructing");
        goto out;
    }
    if (obeys_locks(q)) {
        count_retry(c, q);
        rc = ios_locks_try(c->locks, q->file_id, q->lock->first_stripe, q->lock->stripe_count,
                           owner_of(q->lock), mode_of(q->lock), clock_now_ms());
        if (rc) {
            if (rc == -EAGAIN)
                nack(q, res);
            else
                fail(res, rc, "lock refused");
            goto out;
        }
        locked = true;
        rc = note_untrusted(c, q, res);
        if (rc)
            goto out;
    }
    if (ex.total_bytes) {
        res->bulk = malloc(ex.total_bytes);
        if (!res->bulk) {
            rc = fail(res, -ENOMEM, "out of memory for %" PRIu64 " bytes", ex.total_bytes);
            goto out;
        }
        ios_data_units du;
        rc = q->has_unverified && q->unverified
                 ? ios_strips_read_unverified(c->strips, q->file_id, ex.v, ex.n, res->bulk,
                                              &res->bulk_crc)
                 : ios_strips_read(c->strips, q->file_id, ex.v, ex.n, res->bulk, &res->bulk_crc,
                                   data_units_of(q, &du));
        if (rc) {
            fail(res, rc, "read failed: %s", strerror(-rc));
            goto out;
        }
        res->bulk_len = ex.total_bytes;
        res->bulk_crc_known = true;
    }
out:
    if (rc && locked) /* the caller gets no data: do not leave the lock behind */
        ios_locks_release(c->locks, q->file_id, q->lock->first_stripe, q->lock->stripe_count,
                          owner_of(q->lock), clock_now_ms());
    if (rc) {
        free(res->bulk);
        res->bulk = NULL;
        res->bulk_len = 0;
    }
    free(ex.v);
    return rc;
}

/* A unit this server failed to store (or to make durable) may be half
 * written, and a write refused for want of its dirty record goes on
 * without this server: either way it serves no more reads until
 * depfs-recovery rejoins it, which rebuilds the file (the writer records
 * this server dirty for it). `what` failed ("a unit", ...) for the log. */
static void demote_after_failed_store(ios_ctx *c, const Depfs__IoRequest *q, int err,
                                      const char *what)
{
    uint64_t file_id = q->file_id;
    if (q->lock && c->unstored) /* no UP until its writer let go (unstored.h) */
        ios_unstored_note(c->unstored, file_id, q->lock->first_stripe, q->lock->stripe_count,
                          owner_of(q->lock));
    int rc = ios_state_demote_self(c->state);
    if (rc == 1)
        log_warn("server %u failed to store %s of file %016" PRIx64 " (%s): no reads until "
                 "depfs-recovery rejoins it (REBUILDING)", c->server_id, what, file_id,
                 strerror(-err));
    else if (rc < 0)
        log_err("server %u cannot store REBUILDING: %s", c->server_id, strerror(-rc));
}

static int do_write(ios_ctx *c, const Depfs__IoRequest *q, const uint8_t *bulk,
                    size_t bulk_len, ios_result *res)
{
    extents ex;
    int rc = extents_take(q, &ex, res);
    if (rc)
        goto out;
    assert(ex.total_bytes == bulk_len);
    if (q->has_unlock && q->unlock && !q->lock) {
        rc = fail(res, -EINVAL, "unlock without a lock");
        goto out;
    }
    if (obeys_locks(q) && !ios_locks_held_by(c->locks, q->file_id, q->lock->first_stripe,
                                             q->lock->stripe_count, owner_of(q->lock))) {
        rc = fail(res, -EPERM, "stripes %" PRIu64 "+%" PRIu64 " not locked by this owner",
                  q->lock->first_stripe, q->lock->stripe_count);
        goto out;
    }
    /* from here the units may change: a lock taken to read them writes now
     * (journaled first, so a crash leaves them known to be in doubt) */
    if (q->lock && ex.n &&
        (rc = ios_locks_mark_written(c->locks, q->file_id, q->lock->first_stripe,
                                     q->lock->stripe_count, owner_of(q->lock)))) {
        fail(res, rc, "cannot journal the write of stripes %" PRIu64 "+%" PRIu64
             " (state store): nothing stored", q->lock->first_stripe, q->lock->stripe_count);
        goto out;
    }
    if (q->n_down_servers) {
        rc = ios_dirty_add(c->state, q->down_servers, q->n_down_servers, q->file_id);
        if (rc) {
            fail(res, rc, "cannot record dirty file: %s", strerror(-rc));
            /* the writer goes on without us */
            demote_after_failed_store(c, q, rc, "the dirty record");
            goto out;
        }
    }
    ios_block_crcs want = {.block = q->crc_block, .crcs = q->block_crcs};
    if (ex.n && FAULT_POINT(FAULT_WRITE_MEM_FLIP)) /* bytes that change after the frame check */
        ((uint8_t *)bulk)[bulk_len / 2] ^= 0x10;
    if (ex.n && (rc = ios_strips_write(c->strips, q->file_id, ex.v, ex.n, bulk,
                                       q->has_stripe_unit ? q->stripe_unit : 0,
                                       q->has_crc_block ? &want : NULL))) {
        fail(res, rc, "write failed: %s", strerror(-rc));
        demote_after_failed_store(c, q, rc, "a unit");
        goto out;
    }
    if (q->has_sync && q->sync && (rc = ios_strips_fsync(c->strips, q->file_id))) {
        fail(res, rc, "fdatasync failed: %s", strerror(-rc));
        demote_after_failed_store(c, q, rc, "a unit");
        goto out;
    }
    for (size_t i = 0; i < ex.n; i++) /* what the background scrub found there is rewritten */
        ios_scrubber_note_write(c->scrubber, q->file_id, ex.v[i].offset, ex.v[i].length);
    if (q->has_unlock && q->unlock) {
        rc = ios_locks_release(c->locks, q->file_id, q->lock->first_stripe,
                               q->lock->stripe_count, owner_of(q->lock), clock_now_ms());
        if (rc)
            fail(res, rc, "data stored but unlock failed: %s", strerror(-rc));
    }
out:
    free(ex.v);
    return rc;
}

/* Lock entries into reply.stale_locks (heartbeat: stale locks; IO_LOCK
 * with take_over_stale: what was taken over). */
static int fill_lock_entries(ios_result *res, const ios_lock_entry *v, size_t n, uint64_t now_ms)
{
    if (n == 0)
        return 0;
    res->stale = calloc(n, sizeof(*res->stale));
    res->stale_specs = calloc(n, sizeof(*res->stale_specs));
    res->stale_ptrs = calloc(n, sizeof(*res->stale_ptrs));
    if (!res->stale || !res->stale_specs || !res->stale_ptrs)
        return fail(res, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        Depfs__LockSpec *s = &res->stale_specs[i];
        Depfs__LockEntry *e = &res->stale[i];
        depfs__lock_spec__init(s);
        s->first_stripe = v[i].first;
        s->stripe_count = v[i].count;
        s->owner_client = v[i].owner.client;
        s->owner_op = v[i].owner.op;
        s->has_read_only = !v[i].writes;
        s->read_only = !v[i].writes;
        depfs__lock_entry__init(e);
        e->file_id = v[i].file_id;
        e->lock = s;
        e->age_ms = now_ms > v[i].taken_ms ? now_ms - v[i].taken_ms : 0;
        res->stale_ptrs[i] = e;
    }
    res->reply.stale_locks = res->stale_ptrs;
    res->reply.n_stale_locks = n;
    return 0;
}

/* IO_LOCK take_over_stale (recovery): orphans lose the stripes to us. */
static int do_take_over(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    ios_lock_entry taken[IOS_MAX_TAKE_OVER];
    size_t n = 0;
    uint64_t now_ms = clock_now_ms();
    int rc = ios_locks_take_over(c->locks, q->file_id, q->lock->first_stripe,
                                 q->lock->stripe_count, owner_of(q->lock), mode_of(q->lock),
                                 now_ms, c->lock_lease_ms, taken, IOS_MAX_TAKE_OVER, &n);
    if (rc == -EAGAIN)
        return fail(res, rc, "stripes locked by another owner for less than the lease");
    if (rc)
        return fail(res, rc, "lock refused: %s", strerror(-rc));
    for (size_t i = 0; i < n; i++)
        log_info("file %016" PRIx64 " stripes [%" PRIu64 ",%" PRIu64 ") of client %" PRIu64
                 " op %" PRIu64 " (held %" PRIu64 " ms, to %s) taken over by client %" PRIu64
                 " for repair", q->file_id, taken[i].first, taken[i].first + taken[i].count,
                 taken[i].owner.client, taken[i].owner.op, now_ms - taken[i].taken_ms,
                 taken[i].writes ? "write" : "read", q->lock->owner_client);
    return fill_lock_entries(res, taken, n, now_ms);
}

static int do_lock(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    int rc;
    assert(q->lock);
    if (q->has_take_over_stale && q->take_over_stale)
        return do_take_over(c, q, res);
    count_retry(c, q);
    rc = ios_locks_try(c->locks, q->file_id, q->lock->first_stripe, q->lock->stripe_count,
                       owner_of(q->lock), mode_of(q->lock), clock_now_ms());
    if (rc == -EAGAIN)
        return nack(q, res);
    if (rc)
        return fail(res, rc, "lock refused: %s", strerror(-rc));
    rc = note_untrusted(c, q, res);
    if (rc) /* the caller learns nothing: it holds nothing either */
        ios_locks_release(c->locks, q->file_id, q->lock->first_stripe, q->lock->stripe_count,
                          owner_of(q->lock), clock_now_ms());
    return rc;
}

static int do_unlock(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    assert(q->lock);
    int rc = ios_locks_release(c->locks, q->file_id, q->lock->first_stripe,
                               q->lock->stripe_count, owner_of(q->lock), clock_now_ms());
    if (rc == -EPERM)
        return fail(res, rc, "stripes held by another owner");
    if (rc)
        return fail(res, rc, "unlock failed: %s", strerror(-rc));
    return 0;
}

static int do_truncate(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    assert(q->has_local_size && q->local_size <= IOS_MAX_LOCAL_BYTES);
    int rc = ios_strips_truncate(c->strips, q->file_id, q->local_size);
    if (rc)
        return fail(res, rc, "truncate failed: %s", strerror(-rc));
    return 0;
}

static int do_remove(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    int rc = ios_strips_remove(c->strips, q->file_id);
    ios_locks_drop_file(c->locks, q->file_id, clock_now_ms());
    ios_scrubber_note_remove(c->scrubber, q->file_id);
    if (rc)
        return fail(res, rc, "remove failed: %s", strerror(-rc));
    return 0;
}

/* IO_FSYNC, and after it the strip file's allocation (do_extents says
 * why a server that is not serving reads tells none). */
static int do_fsync(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    int rc = ios_strips_fsync(c->strips, q->file_id);
    if (rc)
        return fail(res, rc, "fdatasync failed: %s", strerror(-rc));
    if (ios_state_refuses_reads(ios_state_get(c->state)))
        return 0;
    ios_data_map none = { .max = 0 };
    Depfs__IoReply *r = &res->reply;
    if (ios_strips_data_map(c->strips, q->file_id, 0, 0, 0, &none, &r->alloc_bytes,
                            &r->local_size) == 0)
        r->has_alloc_bytes = r->has_local_size = 1;
    return 0;
}

/* The lock table's and the strips' counters (IO_STAT and IO_HEARTBEAT). */
static void fill_lock_counters(ios_ctx *c, Depfs__IoReply *r)
{
    ios_lock_stats ls;
    ios_locks_stats(c->locks, &ls);
    r->locks_granted = ls.granted;
    r->locks_nacked = ls.nacked;
    r->locks_held = ls.held;
    r->lock_hold_ms_total = ls.hold_ms_total;
    r->locks_retried = ls.retried;
    r->has_locks_retried = 1;
    r->locks_waiting = ios_lock_waits_parked(c->waits);
    r->has_locks_waiting = 1;
    r->has_locks_granted = r->has_locks_nacked = r->has_locks_held = 1;
    r->has_lock_hold_ms_total = 1;
    r->damaged_blocks = ios_strips_csum_errors(c->strips);
    r->has_damaged_blocks = 1;
}

/* The background scrub's counters (IO_STAT and IO_HEARTBEAT). */
static void fill_scrub_stats(ios_ctx *c, ios_result *res)
{
    ios_scrub_stats st;
    ios_scrubber_stats(c->scrubber, &st);
    Depfs__ScrubStats *s = &res->scrub;
    depfs__scrub_stats__init(s);
    s->bytes_verified = st.bytes_verified;
    s->blocks_damaged = st.blocks_damaged;
    s->blocks_repaired = st.blocks_repaired;
    s->passes = st.passes;
    s->has_last_pass_end_s = st.last_pass_end_s != 0;
    s->last_pass_end_s = st.last_pass_end_s;
    s->rate = st.rate;
    s->has_last_pass_bytes = s->has_last_pass_ms = st.passes > 0;
    s->last_pass_bytes = st.last_pass_bytes;
    s->last_pass_ms = st.last_pass_ms;
    res->reply.scrub = s;
}

/* What the background scrub found and nobody rewrote yet (IO_HEARTBEAT). */
static int fill_scrub_damage(ios_ctx *c, ios_result *res)
{
    ios_scrub_damage v[IOS_SCRUB_DAMAGE_MAX];
    size_t n = ios_scrubber_damage(c->scrubber, v, IOS_SCRUB_DAMAGE_MAX);
    if (n == 0)
        return 0;
    res->damage = calloc(n, sizeof(*res->damage));
    res->damage_ptrs = calloc(n, sizeof(*res->damage_ptrs));
    if (!res->damage || !res->damage_ptrs)
        return fail(res, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        depfs__scrub_damage__init(&res->damage[i]);
        res->damage[i].file_id = v[i].file_id;
        res->damage[i].local_offset = v[i].offset;
        res->damage[i].length = v[i].length;
        res->damage_ptrs[i] = &res->damage[i];
    }
    res->reply.scrub_damage = res->damage_ptrs;
    res->reply.n_scrub_damage = n;
    return 0;
}

static int do_stat(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    Depfs__IoReply *r = &res->reply;
    int rc = ios_strips_usage(c->strips, &r->bytes_used, &r->bytes_free);
    if (rc)
        return fail(res, rc, "statvfs failed: %s", strerror(-rc));
    r->has_bytes_used = r->has_bytes_free = 1;
    fill_lock_counters(c, r);
    fill_scrub_stats(c, res);
    if (q->file_id != 0) {
        rc = ios_strips_size(c->strips, q->file_id, &r->local_size);
        if (rc)
            return fail(res, rc, "stat of strip failed: %s", strerror(-rc));
        r->has_local_size = 1;
    }
    return 0;
}

/* IO_EXTENTS: the strip file's allocation, and with one extent its data
 * there (strip_extents.h). A server that is not serving reads (REBUILDING,
 * RECONSTRUCTING) may lack units it should hold: its holes mean nothing,
 * so it refuses as a read does and the client counts its units as data;
 * with ignore_locks (recovery: the rebuild asks where the strip file it is
 * filling holds bytes) it answers what the file holds. */
static int do_extents(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    uint32_t state = ios_state_get(c->state);
    bool raw = q->has_ignore_locks && q->ignore_locks;
    if (!raw && ios_state_refuses_reads(state))
        return fail(res, -EIO, "server is %s: its holes are not known; treat it as failed",
                    depfs_state_name(state));
    bool ranged = q->n_extents == 1;
    assert(q->n_extents <= 1 && (!ranged || (q->has_stripe_unit && q->stripe_unit > 0)));
    uint64_t from = ranged ? q->extents[0]->offset : 0;
    uint64_t to = ranged ? from + q->extents[0]->length : 0;
    ios_data_map m = { .max = WIRE_DATA_EXTENTS_MAX };
    if (ranged && !(m.v = calloc(m.max, sizeof(*m.v))))
        return fail(res, -ENOMEM, "out of memory");
    Depfs__IoReply *r = &res->reply;
    int rc = ios_strips_data_map(c->strips, q->file_id, from, to, ranged ? q->stripe_unit : 0,
                                 &m, &r->alloc_bytes, &r->local_size);
    if (rc) {
        free(m.v);
        return fail(res, rc, "cannot map strip file: %s", strerror(-rc));
    }
    r->has_alloc_bytes = r->has_local_size = 1;
    if (m.more)
        r->has_next_offset = 1, r->next_offset = m.next;
    if (m.n > 0) {
        res->extents = calloc(m.n, sizeof(*res->extents));
        res->extent_ptrs = calloc(m.n, sizeof(*res->extent_ptrs));
        if (!res->extents || !res->extent_ptrs) {
            free(m.v);
            return fail(res, -ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < m.n; i++) {
        depfs__extent__init(&res->extents[i]);
        res->extents[i].offset = m.v[i].offset;
        res->extents[i].length = m.v[i].length;
        res->extent_ptrs[i] = &res->extents[i];
    }
    r->data_extents = res->extent_ptrs;
    r->n_data_extents = m.n;
    free(m.v);
    return 0;
}

static int do_heartbeat(ios_ctx *c, ios_result *res)
{
    ios_lock_entry *v = calloc(IOS_MAX_STALE_REPLY, sizeof(*v));
    if (!v)
        return fail(res, -ENOMEM, "out of memory");
    uint64_t now_ms = clock_now_ms();
    size_t total = 0;
    size_t n = ios_locks_stale(c->locks, now_ms, c->lock_lease_ms, v, IOS_MAX_STALE_REPLY, &total);
    fill_lock_counters(c, &res->reply);
    fill_scrub_stats(c, res);
    int rc = fill_lock_entries(res, v, n, now_ms);
    if (rc == 0)
        rc = fill_scrub_damage(c, res);
    if (rc == 0 && total > n)
        log_warn("heartbeat: %zu stale locks, reporting %zu", total, n);
    free(v);
    return rc;
}

/* 0, or EBUSY while a unit this server failed to store is still locked by
 * its writer (unstored.h). */
static int may_go_up(ios_ctx *c, ios_result *res)
{
    size_t pending = c->unstored ? ios_unstored_pending(c->unstored, c->locks) : 0;
    if (pending == 0)
        return 0;
    return fail(res, -EBUSY, "%zu units this server failed to store are still locked by their "
                "writers: staying %s", pending, depfs_state_name(ios_state_get(c->state)));
}

/* IO_SET_STATE drain_ms (a rejoin, recovery/README.md step 2): wait until
 * every lock held now by a live writer (younger than the lease: older ones
 * are orphans, the orphan repair's) is released, so that what those
 * writers record (they planned without the returning server) is stored
 * before the rejoin's last pass looks. */
static int do_drain(ios_ctx *c, uint32_t drain_ms, ios_result *res)
{
    assert(drain_ms <= IOS_MAX_DRAIN_MS);
    uint64_t now_ms = clock_now_ms(), total = 0;
    size_t all = 0;
    (void)ios_locks_stale(c->locks, now_ms, 0, NULL, 0, &all);
    size_t max = all < IOS_MAX_DRAIN_LOCKS ? all : IOS_MAX_DRAIN_LOCKS;
    ios_lock_entry *v = max ? calloc(max, sizeof(*v)) : NULL;
    if (max && !v)
        return fail(res, -ENOMEM, "out of memory");
    size_t n = max ? ios_locks_stale(c->locks, now_ms, 0, v, max, NULL) : 0;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) /* live writers only */
        if (now_ms - v[i].taken_ms < c->lock_lease_ms)
            v[w++] = v[i];
    n = w;
    total = n;
    uint64_t deadline_ms = now_ms + drain_ms;
    while (n > 0) {
        w = 0;
        uint64_t t_ms = clock_now_ms();
        for (size_t i = 0; i < n; i++) /* held, and not an orphan by now */
            if (t_ms - v[i].taken_ms < c->lock_lease_ms &&
                ios_locks_holds_any(c->locks, v[i].file_id, v[i].first, v[i].count, v[i].owner))
                v[w++] = v[i];
        n = w;
        if (n == 0 || clock_now_ms() >= deadline_ms)
            break;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)IOS_DRAIN_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(v);
    if (n > 0)
        return fail(res, -EBUSY, "%zu of %" PRIu64 " locks held at the epoch change still held "
                    "after %u ms", n, total, drain_ms);
    return 0;
}

static int do_set_state(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    int rc;
    if (q->has_server_state) {
        uint32_t want = q->server_state, old = ios_state_get(c->state);
        if (want != DEPFS__SERVER_STATE__SERVER_UP &&
            want != DEPFS__SERVER_STATE__SERVER_REBUILDING &&
            want != DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING)
            return fail(res, -EINVAL, "server_state %u cannot be set", want);
        if (want == DEPFS__SERVER_STATE__SERVER_UP && old != want && (rc = may_go_up(c, res)))
            return rc;
        if (want != old) {
            if ((rc = ios_state_set(c->state, want))) {
                /* Recovery takes this server out of the reads (a client
                 * could not write to it): when the store cannot say so (a
                 * full disk), stop serving in memory all the same, as a
                 * server demoting itself does, or other clients go on
                 * reading the units it missed (campaign seed 1204: a
                 * migrate copied them). */
                if (want == DEPFS__SERVER_STATE__SERVER_REBUILDING &&
                    old == DEPFS__SERVER_STATE__SERVER_UP && ios_state_demote_self(c->state) == 1)
                    log_warn("server %u: REBUILDING not stored (%s): demoted in memory",
                             c->server_id, strerror(-rc));
                return fail(res, rc, "cannot store server state: %s", strerror(-rc));
            }
            log_info("server %u: %s -> %s", c->server_id, depfs_state_name(old), depfs_state_name(want));
        }
    }
    if (q->has_cluster_epoch) {
        uint64_t old = ios_state_epoch(c->state), now;
        if ((rc = ios_state_raise_epoch(c->state, q->cluster_epoch, &now)))
            return fail(res, rc, "cannot store cluster epoch: %s", strerror(-rc));
        if (now != old)
            log_debug("cluster epoch %" PRIu64 " -> %" PRIu64, old, now);
    }
    if (q->has_drain_ms && q->drain_ms > 0)
        return do_drain(c, q->drain_ms, res);
    return 0;
}

/* DIRTY_PROBE: which of down_servers have a record for file_id. */
static int do_dirty_probe(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    assert(q->n_down_servers <= CONFIG_MAX_IOSERVERS);
    uint32_t found[CONFIG_MAX_IOSERVERS];
    size_t n = 0;
    int rc = ios_dirty_probe(c->state, q->file_id, q->down_servers, q->n_down_servers, found, &n);
    if (rc)
        return fail(res, rc, "cannot read dirty records: %s", strerror(-rc));
    if (n == 0)
        return 0;
    res->dirty = calloc(n, sizeof(*res->dirty));
    if (!res->dirty)
        return fail(res, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        res->dirty[i] = found[i];
    res->reply.dirty_files = res->dirty;
    res->reply.n_dirty_files = n;
    return 0;
}

static int do_dirty(ios_ctx *c, const Depfs__IoRequest *q, ios_result *res)
{
    int rc;
    ios_dirty_op op = ios_dirty_op_of(q); /* the reading authz and req_check took */
    if (op == IOS_DIRTY_UP) {
        if (ios_state_get(c->state) != DEPFS__SERVER_STATE__SERVER_UP && (rc = may_go_up(c, res)))
            return rc;
        rc = ios_state_set(c->state, DEPFS__SERVER_STATE__SERVER_UP);
        if (rc)
            return fail(res, rc, "cannot store server state: %s", strerror(-rc));
        log_info("rejoin: server %u is up", c->server_id);
        return 0;
    }
    if (op == IOS_DIRTY_PROBE)
        return do_dirty_probe(c, q, res);
    if (op == IOS_DIRTY_UNKNOWN) /* req_check refuses it; a direct caller too */
        return fail(res, -EINVAL, "unknown dirty action %d", (int)q->dirty_action);
    assert(ios_dirty_op_names_server(op) && q->has_local_size && q->local_size <= UINT32_MAX);
    uint32_t server = (uint32_t)q->local_size;
    if (op == IOS_DIRTY_CLAIM) {
        rc = ios_dirty_claim(c->state, server, q->file_id);
        if (rc)
            return fail(res, rc, "cannot claim dirty record: %s", strerror(-rc));
        return 0;
    }
    if (op == IOS_DIRTY_CLEAR) {
        bool kept = false;
        rc = ios_dirty_clear(c->state, server, q->file_id, &kept);
        if (rc)
            return fail(res, rc, "cannot clear dirty record: %s", strerror(-rc));
        if (kept)
            return fail(res, -EAGAIN, "dirty record (%u, %016" PRIx64 ") was recorded again "
                        "since it was claimed", server, q->file_id);
        return 0;
    }
    assert(op == IOS_DIRTY_LIST);
    res->dirty = calloc(IOS_DIRTY_LIST_MAX, sizeof(*res->dirty));
    if (!res->dirty)
        return fail(res, -ENOMEM, "out of memory");
    size_t n = 0;
    bool more = false;
    rc = ios_dirty_list(c->state, server, q->file_id, res->dirty, IOS_DIRTY_LIST_MAX, &n, &more);
    if (rc)
        return fail(res, rc, "cannot list dirty records: %s", strerror(-rc));
    res->reply.dirty_files = res->dirty;
    res->reply.n_dirty_files = n;
    if (more) {
        assert(n > 0);
        res->reply.has_local_size = 1;
        res->reply.local_size = res->dirty[n - 1] + 1;
    }
    return 0;
}

/* ------------------------------------------------------------- dispatch */
/* Ops a "client behind" epoch refuses: the lock/write path. */
static bool epoch_guarded(uint16_t type, const Depfs__IoRequest *q)
{
    switch (type) {
    case DEPFS__IO_OP__IO_READ: return obeys_locks(q);
    case DEPFS__IO_OP__IO_LOCK:
    case DEPFS__IO_OP__IO_WRITE:
    case DEPFS__IO_OP__IO_TRUNCATE: return true;
    default: return false;
    }
}

/* 0, or ESTALE when the request's epoch and ours disagree (see the top). */
static int epoch_check(ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, ios_result *res)
{
    if (!q->has_cluster_epoch || type == DEPFS__IO_OP__IO_SET_STATE)
        return 0;
    uint64_t known = ios_state_epoch(c->state);
    if (q->cluster_epoch > known)
        return fail(res, -ESTALE, "server behind: epoch %" PRIu64 " > known %" PRIu64,
                    q->cluster_epoch, known);
    if (q->cluster_epoch < known && epoch_guarded(type, q))
        return fail(res, -ESTALE, "client behind: epoch %" PRIu64 " < known %" PRIu64,
                    q->cluster_epoch, known);
    return 0;
}

static bool known_op(uint16_t type)
{
    return type >= DEPFS__IO_OP__IO_READ && type <= DEPFS__IO_OP__IO_EXTENTS;
}

/* A client READ or WRITE: background work yields to it (client_io.h).
 * A background request is told how long ago the last one began. */
static void note_client_io(ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, ios_result *res)
{
    if (!c->client_io)
        return;
    if (q->has_background && q->background) {
        uint64_t idle = ios_client_io_idle_ms(c->client_io);
        res->reply.has_client_io_idle_ms = 1;
        res->reply.client_io_idle_ms = idle > UINT32_MAX ? UINT32_MAX : (uint32_t)idle;
    } else if (type == DEPFS__IO_OP__IO_READ || type == DEPFS__IO_OP__IO_WRITE) {
        ios_client_io_note(c->client_io);
    }
}

static void dispatch(ios_ctx *c, uint16_t type, const Depfs__IoRequest *q, const uint8_t *bulk,
                     size_t bulk_len, ios_result *res)
{
    if (epoch_check(c, type, q, res))
        return;
    note_client_io(c, type, q, res);
    switch (type) {
    case DEPFS__IO_OP__IO_READ: do_read(c, q, res); break;
    case DEPFS__IO_OP__IO_WRITE: do_write(c, q, bulk, bulk_len, res); break;
    case DEPFS__IO_OP__IO_LOCK: do_lock(c, q, res); break;
    case DEPFS__IO_OP__IO_UNLOCK: do_unlock(c, q, res); break;
    case DEPFS__IO_OP__IO_TRUNCATE: do_truncate(c, q, res); break;
    case DEPFS__IO_OP__IO_REMOVE: do_remove(c, q, res); break;
    case DEPFS__IO_OP__IO_FSYNC: do_fsync(c, q, res); break;
    case DEPFS__IO_OP__IO_STAT: do_stat(c, q, res); break;
    case DEPFS__IO_OP__IO_HEARTBEAT:
        ios_lease_renew(c->lease); /* only depfs-recovery heartbeats */
        do_heartbeat(c, res);
        break;
    case DEPFS__IO_OP__IO_DIRTY: do_dirty(c, q, res); break;
    case DEPFS__IO_OP__IO_EXTENTS: do_extents(c, q, res); break;
    case DEPFS__IO_OP__IO_SET_STATE:
        ios_lease_renew(c->lease);
        do_set_state(c, q, res);
        break;
    default: fail(res, -EOPNOTSUPP, "unknown I/O op %u", type); break;
    }
}

/* Whether handling a request (err: its outcome) may have released locks:
 * an unlock, a write that unlocks, a removal (its locks go with it), or a
 * lock request that failed after its grant (given back). Their file's
 * parked lock requests are then run again (lock_waits.h). */
static bool may_release(uint16_t type, const Depfs__IoRequest *q, uint32_t err)
{
    switch (type) {
    case DEPFS__IO_OP__IO_UNLOCK:
    case DEPFS__IO_OP__IO_REMOVE: return true;
    case DEPFS__IO_OP__IO_WRITE: return q->has_unlock && q->unlock;
    case DEPFS__IO_OP__IO_READ:
    case DEPFS__IO_OP__IO_LOCK: return q->lock != NULL && err != 0 && err != EAGAIN;
    default: return false;
    }
}

static dlog_limit refusal_log = DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);

void ios_process(ios_ctx *c, uint16_t type, const uint8_t *hdr, size_t hdr_len,
                 const uint8_t *bulk, size_t bulk_len, const char *peer,
                 const auth_identity *who, ios_result *res)
{
    memset(res, 0, sizeof(*res));
    depfs__io_reply__init(&res->reply);
    ios_stall_check(c->stall); /* a stalled server acts on nothing as UP */
    Depfs__IoRequest *q = depfs__io_request__unpack(NULL, hdr_len, hdr);
    char why[IOS_MESSAGE_BYTES];
    bool refused = true; /* at the boundary: nothing was looked at */
    int rc;
    if (!q)
        fail(res, -EINVAL, "malformed IoRequest header (%zu bytes)", hdr_len);
    else if (!known_op(type))
        fail(res, -EOPNOTSUPP, "unknown I/O op %u", type);
    else if (ios_authorize(who, type, q, why, sizeof(why)) < 0) /* not this peer's to ask */
        fail(res, -EPERM, "%s", why);
    else if ((rc = ios_check_capability(who, type, q, c->cap_key, (uint64_t)time(NULL), why,
                                        sizeof(why))) < 0) /* nor this file's */
        fail(res, rc, "%s", why);
    else if ((rc = ios_req_check(c, type, q, hdr, hdr_len, bulk_len, why, sizeof(why))) < 0)
        fail(res, rc, "%s", why);
    else {
        refused = false;
        dispatch(c, type, q, bulk, bulk_len, res);
        res->may_release = may_release(type, q, res->reply.err);
        res->file_id = q->file_id;
    }
    res->reply.has_state = 1;
    res->reply.state = ios_state_get(c->state);
    res->reply.has_cluster_epoch = 1;
    res->reply.cluster_epoch = ios_state_epoch(c->state);
    if (ios_state_stalled(c->state))
        res->reply.has_stalled = res->reply.stalled = 1;

    int err = res->reply.err;
    if (refused) /* what a hostile peer can make us log: rate-limited */
        dlog_limited(&refusal_log, DLOG_WARN, "%s %s file %016" PRIx64 " refused: %s",
                     peer ? peer : "-", op_name(type), q ? q->file_id : 0, res->message);
    else if (err == ESTALE || (err == EIO && ios_state_refuses_reads(res->reply.state)))
        log_debug("%s %s file %016" PRIx64 ": %s", peer ? peer : "-", op_name(type),
                  q ? q->file_id : 0, res->message);
    else if (err && err != EAGAIN)
        log_warn("%s %s file %016" PRIx64 ": %s", peer ? peer : "-", op_name(type),
                 q ? q->file_id : 0, res->message);
    else if (err == EAGAIN)
        log_debug("%s %s file %016" PRIx64 ": NACK", peer ? peer : "-", op_name(type),
                  q->file_id);
    if (q)
        depfs__io_request__free_unpacked(q, NULL);
}

void ios_result_free(ios_result *res)
{
    free(res->bulk);
    free(res->stale);
    free(res->stale_specs);
    free(res->stale_ptrs);
    free(res->dirty);
    free(res->untrusted);
    free(res->damage);
    free(res->damage_ptrs);
    free(res->extents);
    free(res->extent_ptrs);
    memset(res, 0, sizeof(*res));
}

/* Sends res as the reply to req, after waking the lock requests its
 * handling may have let through. */
static void answer(ios_ctx *c, rpc_replier *r, const rpc_msg *req, ios_result *res)
{
    if (res->may_release)
        ios_lock_waits_kick(c->waits, res->file_id);
    struct iovec iov = { .iov_base = res->bulk, .iov_len = res->bulk_len };
    int rc = res->bulk_crc_known
                 ? rpc_reply_msg_crc(r, req, &res->reply.base, res->bulk_len ? &iov : NULL,
                                     res->bulk_len ? 1 : 0, res->bulk_crc)
                 : rpc_reply_msg(r, req, &res->reply.base, res->bulk_len ? &iov : NULL,
                                 res->bulk_len ? 1 : 0);
    if (rc) /* the rpc layer logs (rate-limited) why it closes the connection */
        log_debug("%s: reply to %s failed: %s", req->peer ? req->peer : "-", op_name(req->type),
                  strerror(-rc));
}

void ios_handle(void *ctx, const rpc_msg *req, rpc_replier *r)
{
    ios_ctx *c = ctx;
    ios_result res;
    if (req->type == DEPFS__IO_OP__IO_WRITE && req->bulk_len > 0 &&
        FAULT_POINT(FAULT_WRITE_UNANSWERED))
        return; /* TEST ONLY: its writer times out, as if only it lost this server */
    ios_process(c, req->type, req->hdr, req->hdr_len, req->bulk, req->bulk_len, req->peer,
                req->who, &res);
    /* a lock request that may wait: answered when the stripes are free
     * (ios_retry_parked), or NACKed now when too many wait already */
    if (res.wait_ms > 0 && c->waits) {
        /* uncounted while it waits (before it is parked: its answer may
         * come at once, and is counted then) */
        ios_locks_unnote_nack(c->locks, res.wait_retry);
        if (ios_lock_waits_park(c->waits, req, r, res.file_id, res.wait_first, res.wait_count,
                                res.wait_owner, res.wait_ms) == 0) {
            assert(req->bulk_len == 0); /* READ and LOCK: all in the header kept */
            ios_result_free(&res);
            return;
        }
        ios_locks_note_nack(c->locks, res.wait_retry); /* NACKed now after all */
    }
    answer(c, r, req, &res);
    ios_result_free(&res);
}

bool ios_retry_parked(void *ctx, const ios_parked *p, bool expired)
{
    ios_ctx *c = ctx;
    if (rpc_replier_closed(p->r)) {
        log_debug("%s %s file %016" PRIx64 ": its client is gone while it waited for a lock; "
                  "dropped", p->peer ? p->peer : "-", op_name(p->type), p->file_id);
        return true; /* nobody to grant it to */
    }
    if (!expired && ios_locks_conflicts(c->locks, p->file_id, p->first, p->count, p->owner))
        return false; /* still held: wait on (nothing counted) */
    ios_result res;
    ios_process(c, p->type, p->hdr, p->hdr_len, NULL, 0, p->peer, p->who, &res);
    if (!expired && res.wait_ms > 0) { /* another took the stripes first */
        ios_locks_unnote_nack(c->locks, res.wait_retry); /* waits on, uncounted */
        ios_result_free(&res);
        return false;
    }
    rpc_msg req = {.type = p->type, .req_id = p->req_id, .peer = p->peer, .who = p->who};
    answer(c, p->r, &req, &res);
    ios_result_free(&res);
    return true;
}
