/* rpc.h - request/reply RPC over a transport: protobuf-c headers + raw bulk.
 *
 * Server (rpc_server.c): one thread per connection reads frames in order
 * and calls the handler, which must answer each request exactly once with
 * rpc_reply*. A malformed frame (frame_decode error, bad bulk CRC) closes
 * that connection with a logged reason; the server keeps running. What one
 * peer can cost a server is bounded (rpc_server_opts): a frame must arrive
 * whole within frame_timeout_ms of its first byte, a silent connection is
 * closed after idle_timeout_ms, request buffers grow only as bytes arrive,
 * a reply must be sent within send_timeout_ms, a connection's replies
 * answered later by other threads (rpc_replier_hold) are sent by its own
 * thread, and it stops reading while max_deferred_replies of them are
 * pending. Connections are capped (max_connections in all,
 * max_unproven_per_peer not yet past their first valid request per peer
 * address); a newcomer over a cap takes the place of the oldest unproven
 * or the longest idle connection. Refusals are logged, rate-limited per
 * kind (admission, frames, output).
 *
 * Client (rpc.c): a connection carries many requests in flight
 * (pipelining); a reader thread matches replies to calls by req_id. Reply
 * bulk is received straight into the caller's iovec (no copy). Every wait
 * has a timeout. A server may close an idle connection: callers reconnect
 * when rpc_conn_broken says so.
 * Return convention: 0 or negative errno. */
#ifndef DEPFS_RPC_H
#define DEPFS_RPC_H
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <protobuf-c/protobuf-c.h>
#include "auth.h"
#include "frame.h"
#include "rpc_auth.h"

#define RPC_MAX_IOV 64 /* max iovec entries per call side */
#define RPC_MAX_INFLIGHT 4096 /* calls pending per client connection; more: -EBUSY */
#define RPC_AUTH_MIN_TIMEOUT_MS 1000u /* a client's handshake, at least */
/* Log lines a peer can trigger (refusals, bad frames): at most this many
 * per period for each kind (dlog_limited), in the rpc layer and handlers. */
#define RPC_LOG_BURST 20u
#define RPC_LOG_PERIOD_MS 1000u
#define RPC_ERROR_TEXT_MAX 256u

/* Server defaults (rpc_server_opts fields left 0; the config keys of the
 * same names, config.h, start from these). */
#define RPC_DEFAULT_MAX_CONNECTIONS 1024u
#define RPC_DEFAULT_MAX_UNPROVEN_PER_PEER 64u
#define RPC_DEFAULT_FRAME_TIMEOUT_MS 30000u  /* 64 MiB at >= 2.2 MB/s */
#define RPC_DEFAULT_IDLE_TIMEOUT_MS 600000u  /* 10 min: clients reconnect */
#define RPC_DEFAULT_SEND_TIMEOUT_MS 30000u
#define RPC_DEFAULT_MAX_DEFERRED_REPLIES 1024u

/* ----------------------------------------------------------- server side */
typedef struct rpc_server rpc_server;
typedef struct rpc_replier rpc_replier; /* one connection */

typedef struct rpc_msg {
    uint16_t type;
    uint64_t req_id;
    const uint8_t *hdr;
    size_t hdr_len;
    uint8_t *bulk; /* owned by the rpc layer; valid until the handler returns */
    size_t bulk_len;
    const char *peer;
    const auth_identity *who; /* the authenticated peer; NULL when the
                               * server runs with auth off */
} rpc_msg;

typedef void (*rpc_handler_fn)(void *ctx, const rpc_msg *req, rpc_replier *r);

/* Every limit left 0 takes its RPC_DEFAULT_*. */
typedef struct rpc_server_opts {
    const char *transport; /* "tcp" / "rdma" */
    const char *address;   /* HOST:PORT to listen on */
    frame_limits limits;   /* all 0: frame_limits_default; max_bulk_bytes 0
                            * alone: no request may carry bulk */
    rpc_handler_fn handler;
    void *ctx;
    unsigned max_connections;       /* open at once, in all */
    unsigned max_unproven_per_peer; /* from one address, before their first
                                     * valid request */
    unsigned frame_timeout_ms;      /* a whole frame, from its first byte; a
                                     * new connection's first frame, from
                                     * the connect */
    unsigned idle_timeout_ms;       /* between frames, with nothing pending */
    unsigned send_timeout_ms;       /* a whole reply frame */
    unsigned max_deferred_replies;  /* per connection: holds not yet
                                     * released; at the limit it stops
                                     * reading requests */
    const rpc_auth_server *auth;    /* what peers may authenticate with, and
                                     * whether they must; NULL: auth off */
} rpc_server_opts;

/* What the server holds now and what it refused since it started. */
typedef struct rpc_server_stats {
    unsigned connections;     /* open, threads alive */
    unsigned unproven;        /* of them, no valid request yet */
    uint64_t rx_buffer_bytes; /* request buffers of every connection */
    uint64_t evicted;         /* closed to make room for a newcomer */
    uint64_t refused;         /* newcomers closed at once: no room */
    uint64_t timed_out;       /* closed by the frame, idle or send deadline */
    uint64_t output_stalled;  /* closed: their replies were not being read */
} rpc_server_stats;

int rpc_server_start(const rpc_server_opts *o, rpc_server **out);
/* Stops accepting, closes connections, joins threads. */
void rpc_server_stop(rpc_server *s);
/* The port the server listens on (after listening on port 0), or -errno. */
int rpc_server_port(const rpc_server *s);
void rpc_server_get_stats(rpc_server *s, rpc_server_stats *out);

/* A replier is valid while the handler runs. A handler that answers later
 * (from another thread) takes a hold first and releases it after replying;
 * it must then pass an rpc_msg copy carrying the request's type and req_id
 * (hdr/bulk of the original are freed when the handler returns). Replies
 * on a connection that has gone away fail -ECONNRESET.
 * A reply made by another thread never waits for the peer: it is copied
 * into the connection's queue and sent by the connection's own thread
 * (TCP; on a transport without poll_fd it is sent at once, under the send
 * deadline). A queue over its limit (the peer reads no replies) closes
 * the connection: -ENOBUFS. */
void rpc_replier_hold(rpc_replier *r);
/* The connection's session (NULL before or without a handshake): what the
 * MDS wraps a ticket's secret under. */
const auth_session *rpc_replier_session(const rpc_replier *r);
void rpc_replier_release(rpc_replier *r);
/* Whether r's connection is gone, or its peer closed it (a client closes
 * its connection when it gives up on a request, e.g. on a frozen server):
 * the peer waits for no reply, and acting on its request would be late. */
bool rpc_replier_closed(rpc_replier *r);

int rpc_reply(rpc_replier *r, const rpc_msg *req, const void *hdr, size_t hdr_len,
              const struct iovec *bulk, int bulk_cnt);
/* Packs msg with protobuf-c and replies. */
int rpc_reply_msg(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg,
                  const struct iovec *bulk, int bulk_cnt);
/* rpc_reply_msg with the bulk's CRC32C given by the caller, who made it
 * from checksums the bytes were verified against (the frame carries it and
 * the receiver checks the bytes against it; no pass over the bulk here). */
int rpc_reply_msg_crc(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg,
                      const struct iovec *bulk, int bulk_cnt, uint32_t bulk_crc);

/* ----------------------------------------------------------- client side */
typedef struct rpc_conn rpc_conn;
typedef struct rpc_call rpc_call;

/* Connects, and with cr (method set) runs the handshake (rpc_auth.h) under
 * max(connect_timeout_ms, RPC_AUTH_MIN_TIMEOUT_MS); every frame is then
 * tagged. On failure rpc_conn_open_error() says why (this thread's last
 * open; "" when the connect itself failed: the errno says it). */
int rpc_conn_open(const char *transport, const char *address, const frame_limits *lim,
                  int connect_timeout_ms, const rpc_auth_creds *cr, rpc_conn **out);
const char *rpc_conn_open_error(void);
/* The connection's session (to unwrap what the MDS sends under it), or
 * NULL when it did no handshake. */
const auth_session *rpc_conn_session(const rpc_conn *c);
/* Fails every call in flight with -ECONNABORTED, joins the reader, frees. */
void rpc_conn_close(rpc_conn *c);
/* Closes the connection's stream now (the peer sees the close) but keeps c
 * valid: calls in flight fail, rpc_conn_broken becomes true, and
 * rpc_conn_close must still be called. Used when giving up on a server so
 * that requests still queued at it are dropped, not acted on late. */
void rpc_conn_abort(rpc_conn *c);
/* true once the connection failed (peer closed, protocol error). */
bool rpc_conn_broken(const rpc_conn *c);

/* The one test of "the call failed because of the connection, not because
 * of the request" (err: a negative errno from this module or a transport):
 * reset, aborted, closed, refused, unreachable, or broken by a protocol
 * error. The caller drops or reconnects the connection and may retry the
 * request elsewhere. -ETIMEDOUT is NOT one: the connection may be fine and
 * the peer only slow or stalled; a caller that treats a silent peer like a
 * lost one says so at its call site with rpc_err_is_timeout. */
bool rpc_err_is_transport(int err);
static inline bool rpc_err_is_timeout(int err) { return err == -ETIMEDOUT; }

/* Sends a request. resp_iov says where the reply bulk lands (may be NULL/0
 * when no bulk is expected); a larger reply bulk fails the call -EMSGSIZE. */
int rpc_call_start(rpc_conn *c, uint16_t type, const void *hdr, size_t hdr_len,
                   const struct iovec *bulk, int bulk_cnt,
                   const struct iovec *resp_iov, int resp_cnt, rpc_call **out);
int rpc_call_start_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                       const struct iovec *bulk, int bulk_cnt,
                       const struct iovec *resp_iov, int resp_cnt, rpc_call **out);
/* rpc_call_start_msg with the bulk's CRC32C given by the caller, who made
 * it while passing over the bytes anyway (a write's block CRCs). */
int rpc_call_start_msg_crc(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                           const struct iovec *bulk, int bulk_cnt, uint32_t bulk_crc,
                           const struct iovec *resp_iov, int resp_cnt, rpc_call **out);
/* 0 when the reply arrived; -ETIMEDOUT, -ECONNRESET, -ECONNABORTED,
 * -EMSGSIZE, -EPROTO otherwise. May be called again after -ETIMEDOUT.
 * timeout_ms < 0 waits without a limit; 0 only checks. */
int rpc_call_wait(rpc_call *call, int timeout_ms);
const uint8_t *rpc_call_reply_hdr(const rpc_call *call, size_t *len);
size_t rpc_call_reply_bulk_len(const rpc_call *call);
/* Unpacks the reply header with desc (free with protobuf_c_message_free_unpacked). */
int rpc_call_unpack(const rpc_call *call, const ProtobufCMessageDescriptor *desc,
                    ProtobufCMessage **out);
/* Safe in any state. After it returns the rpc layer never touches the
 * call's resp_iov again (a late reply's bulk is drained and dropped).
 * Calls may be freed before or after rpc_conn_close, not during it. */
void rpc_call_free(rpc_call *call);

/* start + wait + unpack in one; reply bulk length in *bulk_len if non-NULL. */
int rpc_call_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                 const struct iovec *bulk, int bulk_cnt,
                 const struct iovec *resp_iov, int resp_cnt, int timeout_ms,
                 const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
                 size_t *bulk_len);

#endif
