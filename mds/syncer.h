/* syncer.h - the MDS's group commit: replies to mutations wait here until a
 * barrier (kv_sync) has made the mutation durable, and are then answered by
 * the syncer thread (and sent by each connection's own thread, never
 * waiting for a client). One barrier answers every reply queued before it
 * started, from every connection, and the connection thread that queued a
 * reply goes on with that client's next request meanwhile: one client's
 * parallel requests overlap their syncs, and many clients share one fsync.
 * A connection with RPC_DEFAULT_MAX_DEFERRED_REPLIES answers pending here
 * is read no further until some are answered (rpc.h). */
#ifndef DEPFS_MDS_SYNCER_H
#define DEPFS_MDS_SYNCER_H
#include <protobuf-c/protobuf-c.h>
#include "kvstore.h"
#include "rpc.h"

#define MDS_SYNC_QUEUE_MAX 4096u /* queued replies; more: sync inline */

typedef struct mds_syncer mds_syncer;

int mds_syncer_start(kvstore *kv, mds_syncer **out);
/* Syncs and answers everything still queued, then joins the thread. Call
 * after the RPC server stopped (no more mds_syncer_reply). */
void mds_syncer_stop(mds_syncer *s);

/* Answers req with msg (an MdsReply) once every write the calling thread
 * made before this call is durable; if the barrier fails, answers EIO
 * instead. Packs msg before returning (the caller may free it) and holds
 * the replier itself. With s NULL: kv_sync inline, then reply. */
void mds_syncer_reply(mds_syncer *s, kvstore *kv, rpc_replier *r, const rpc_msg *req,
                      const ProtobufCMessage *msg);

#endif
