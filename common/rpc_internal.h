/* rpc_internal.h - what the two halves of the RPC layer share: frame
 * sending, iovec sums and CRCs, protobuf packing. rpc.c (client) defines
 * them, rpc_server.c uses them too; nothing outside common/rpc*.c includes
 * this. Return convention: 0 or negative errno. */
#ifndef DEPFS_RPC_INTERNAL_H
#define DEPFS_RPC_INTERNAL_H
#include <stdint.h>
#include <sys/uio.h>
#include <protobuf-c/protobuf-c.h>

#include "auth.h"
#include "frame.h"
#include "rpc.h"
#include "transport.h"

#define RPC_SEND_IOV_MAX (3 + RPC_MAX_IOV) /* frame + tag + header + bulk */
#define RPC_MSG_STACK_BYTES 512            /* packed headers up to this size stay on the stack */

/* Sums iov lengths; -EINVAL on a bad count, -EMSGSIZE over max_bytes. */
int rpc__iov_total(const struct iovec *iov, int cnt, uint64_t max_bytes, uint64_t *total);
uint32_t rpc__iov_crc(const struct iovec *iov, int cnt);
/* Sends frame + hdr + bulk in one sendv, tagged with sess (NULL: an
 * unauthenticated connection). The caller holds the send lock, which also
 * keeps sess's sequence in the order of the frames on the stream. */
int rpc__send_frame(xport *x, auth_session *sess, const frame_header *fh, const void *hdr,
                    const struct iovec *bulk, int bulk_cnt);
/* Packs a protobuf message into *buf (stack when small, else malloc). */
int rpc__pack_msg(const ProtobufCMessage *msg, uint8_t *stack, uint8_t **buf, size_t *len);

#endif
