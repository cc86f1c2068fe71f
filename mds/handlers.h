/* handlers.h - the MDS's RPC face: decodes an MdsRequest, dispatches on the
 * frame type (MdsOp) to namespace.c / cluster.c and answers with an MdsReply
 * (err = 0 or a positive errno, message = reason). Bad input never crashes. */
#ifndef DEPFS_MDS_HANDLERS_H
#define DEPFS_MDS_HANDLERS_H
#include "cluster.h"
#include "namespace.h"
#include "rpc.h"

typedef struct mds_ctx {
    mds_ns *ns;
    mds_cluster *cluster;
} mds_ctx;

/* An rpc_handler_fn; ctx is an mds_ctx. */
void mds_handle(void *ctx, const rpc_msg *req, rpc_replier *r);

#endif
