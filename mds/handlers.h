/* handlers.h - the MDS's RPC face: decodes an MdsRequest, dispatches on the
 * frame type (MdsOp) to namespace.c / cluster.c and answers with an MdsReply
 * (err = 0 or a positive errno, message = reason). Bad input never crashes. */
#ifndef DEPFS_MDS_HANDLERS_H
#define DEPFS_MDS_HANDLERS_H
#include <stdbool.h>
#include <stdint.h>

#include "caller.h"
#include "cluster.h"
#include "depfs.pb-c.h"
#include "handles.h"
#include "holds.h"
#include "namespace.h"
#include "rpc.h"
#include "syncer.h"

typedef struct mds_ctx {
    mds_ns *ns;
    mds_cluster *cluster;
    /* Set when ns defers its syncs (mds_ns_defer_sync): a reply to a request
     * that wrote to the namespace goes through the syncer (NULL syncer: a
     * barrier on kv inline). Both NULL: ns syncs before returning. */
    mds_syncer *syncer;
    kvstore *kv;
    const rpc_auth_server *auth; /* NULL: auth off (no tickets, no roles) */
    mds_caller_policy callers;   /* who acts in a request (caller.h); zero: defaults */
    /* Handles that may still use a file (holds.h): noted at every open,
     * create and renewal of a regular file, dropped by MDS_RELEASE; an
     * unlinked file is listed for purging only when none is live. NULL
     * (tests, fuzzing): none is kept, so every queued file is purgeable. */
    mds_holds *holds;
    /* The inode handles' key (handles.h): set with auth on; zero (tests,
     * fuzzing, auth off): no tags given, and a user's request naming an
     * inode other than the root is refused. */
    mds_handles handles;
} mds_ctx;

/* One request of frame type `type` (an MdsOp) from who over sess (both
 * NULL with auth off), without any transport (tests and the fuzz targets
 * drive it directly): decodes, checks, authorizes (authz.h), finds the
 * acting caller (caller.h; the namespace checks its permissions), dispatches,
 * and returns
 * the reply and what it owns; errors are in the reply (err, message). NULL
 * only when out of memory. The reply of a request that wrote to the
 * namespace (mds_result_wrote) may be sent only once the write is durable. */
typedef struct mds_result mds_result;
mds_result *mds_process(mds_ctx *c, uint16_t type, const uint8_t *hdr, size_t hdr_len,
                        const char *peer, const auth_identity *who, const auth_session *sess);
const Depfs__MdsReply *mds_result_reply(const mds_result *res);
bool mds_result_wrote(const mds_result *res);
void mds_result_free(mds_result *res);

/* An rpc_handler_fn around mds_process; ctx is an mds_ctx. */
void mds_handle(void *ctx, const rpc_msg *req, rpc_replier *r);

#endif
