/* handlers.h - the MDS's RPC face: decodes an MdsRequest, dispatches on the
 * frame type (MdsOp) to namespace.c / cluster.c and answers with an MdsReply
 * (err = 0 or a positive errno, message = reason). Bad input never crashes. */
#ifndef DEPFS_MDS_HANDLERS_H
#define DEPFS_MDS_HANDLERS_H
#include "cluster.h"
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
} mds_ctx;

/* An rpc_handler_fn; ctx is an mds_ctx. */
void mds_handle(void *ctx, const rpc_msg *req, rpc_replier *r);

#endif
