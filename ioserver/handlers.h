/* handlers.h - the ioserver's request dispatch: one IoRequest in, one
 * IoReply (+ bulk) out. The wire conventions of each IoOp, including the
 * IO_DIRTY encoding the recovery module uses, are at the top of handlers.c.
 *
 * ios_process() does the work without any transport, so tests can drive it
 * directly; ios_handle() is the rpc_handler_fn that wraps it. */
#ifndef DEPFS_IOS_HANDLERS_H
#define DEPFS_IOS_HANDLERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "depfs.pb-c.h"
#include "layout.h"
#include "lock_waits.h"
#include "locks.h"
#include "authz.h"
#include "rpc.h"
#include "state.h"
#include "strips.h"

#define IOS_MAX_EXTENTS 4096u            /* extents per READ/WRITE */
#define IOS_MAX_LOCAL_BYTES IOS_STRIP_BYTES_CAP /* strip file offsets stay below this
                                                 * (or the data dir's own limit: strips.h) */
#define IOS_MAX_STALE_REPLY 1024u        /* lock entries per heartbeat reply */
#define IOS_MAX_DRAIN_MS 30000u          /* longest IO_SET_STATE drain wait */
#define IOS_MAX_DRAIN_LOCKS 65536u       /* lock entries one drain waits for */
#define IOS_DRAIN_POLL_MS 5u             /* drain: how often the held locks are looked at */
#define IOS_DIRTY_LIST_MAX 4096u         /* file ids per IO_DIRTY listing */
#define IOS_MAX_TAKE_OVER 64u            /* orphan entries one take-over may displace */
#define IOS_MESSAGE_BYTES 256u
/* the sum of a request's extent lengths cannot overflow 64 bits */
_Static_assert(IOS_MAX_LOCAL_BYTES <= UINT64_MAX / IOS_MAX_EXTENTS,
               "IOS_MAX_EXTENTS x IOS_MAX_LOCAL_BYTES must fit in 64 bits");
/* a file offset (k x a local offset) fits in off_t for every layout */
_Static_assert(IOS_MAX_LOCAL_BYTES <= INT64_MAX / LAYOUT_MAX_N,
               "LAYOUT_MAX_N x IOS_MAX_LOCAL_BYTES must fit in off_t");
/* the largest local size ends on a unit boundary of every stripe unit size */
_Static_assert(IOS_MAX_LOCAL_BYTES % LAYOUT_MAX_SU == 0, "IOS_MAX_LOCAL_BYTES % LAYOUT_MAX_SU");
/* a client request carries one iovec per extent: it must fit the server's limit */
_Static_assert(RPC_MAX_IOV <= IOS_MAX_EXTENTS, "RPC_MAX_IOV > IOS_MAX_EXTENTS");

typedef struct ios_ctx {
    uint32_t server_id;
    const struct depfs_config *cfg; /* the cluster: server ids a request may name
                                     * (NULL: any id, tests only) */
    ios_strips *strips;
    ios_locks *locks;
    ios_state *state;
    uint32_t max_bulk_bytes; /* bound on READ reply bulk */
    unsigned lock_lease_ms;  /* heartbeat reports locks at least this old */
    struct ios_stall *stall; /* stall detection (NULL: none) */
    struct ios_lease *lease; /* recovery lease (NULL: none) */
    struct ios_unstored *unstored; /* failed stores under a lock (NULL: none) */
    struct ios_scrubber *scrubber; /* background scrub (NULL: none) */
    struct ios_client_io *client_io; /* when client I/O last began (NULL: not kept) */
    ios_lock_waits *waits; /* lock requests that may wait (NULL: NACK at once) */
    const uint8_t *cap_key;  /* auth on: the key capabilities are checked with
                              * (AUTH_KEY_BYTES; NULL: auth off) */
} ios_ctx;

/* Everything a reply owns; ios_result_free releases it. */
typedef struct ios_result {
    Depfs__IoReply reply;
    char message[IOS_MESSAGE_BYTES];
    uint8_t *bulk; /* READ data, malloc'd */
    size_t bulk_len;
    uint32_t bulk_crc;   /* with bulk_crc_known: CRC32C of bulk, from the stored checksums */
    bool bulk_crc_known;
    Depfs__LockEntry *stale;
    Depfs__LockSpec *stale_specs;
    Depfs__LockEntry **stale_ptrs;
    uint64_t *dirty;
    uint32_t *untrusted;          /* a lock granted: untrusted_servers */
    Depfs__ScrubStats scrub;
    Depfs__ScrubDamage *damage;
    Depfs__ScrubDamage **damage_ptrs;
    Depfs__Extent *extents;       /* IO_EXTENTS: data_extents */
    Depfs__Extent **extent_ptrs;
    uint64_t file_id;             /* the request's (once past the checks) */
    bool may_release;             /* it may have released locks of file_id */
    /* a NACK whose request may wait (LockSpec.wait_ms, lock_waits.h):
     * wait_ms > 0 and the stripes of file_id it was refused */
    unsigned wait_ms;
    uint64_t wait_first, wait_count;
    ios_lock_owner wait_owner;
    bool wait_retry; /* its try was counted as a retry (count_retry) */
} ios_result;

/* Handles one request of frame type `type` from who (authz.h; NULL: auth
 * off). Never fails: errors are in res->reply.err (positive errno) with
 * res->reply.message. */
void ios_process(ios_ctx *c, uint16_t type, const uint8_t *hdr, size_t hdr_len,
                 const uint8_t *bulk, size_t bulk_len, const char *peer,
                 const auth_identity *who, ios_result *res);
void ios_result_free(ios_result *res);

/* rpc_handler_fn: ctx is an ios_ctx. A lock request that may wait is
 * parked in ctx->waits rather than NACKed (lock_waits.h). */
void ios_handle(void *ctx, const rpc_msg *req, rpc_replier *r);
/* ios_lock_retry_fn (lock_waits.h) for ctx->waits: ctx is an ios_ctx. */
bool ios_retry_parked(void *ctx, const ios_parked *p, bool expired);

/* CLOCK_MONOTONIC in milliseconds (lock timestamps). */

#endif
