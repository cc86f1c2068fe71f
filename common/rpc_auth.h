/* rpc_auth.h - the connection handshake of auth.h, run by the rpc layer on
 * a fresh transport before any request (proto/auth.proto):
 *
 *   client                                server
 *   AUTH_HELLO {method, cn, cred|ticket} ->
 *                                      <- {err | sn, proof_S}
 *   (checks proof_S: a real server)
 *   AUTH_PROOF {proof_C}                ->
 *                                      <- {err | role}
 *
 * Both then tag every frame with the session key (auth_session). Each
 * handshake frame is bounded (RPC_AUTH_MAX_HDR_BYTES, no bulk) and the
 * whole exchange by a deadline; a refusal says why in the reply and in
 * the server's log. */
#ifndef DEPFS_RPC_AUTH_H
#define DEPFS_RPC_AUTH_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "frame.h"
#include "transport.h"

#define RPC_AUTH_MAX_HDR_BYTES 8192u /* a handshake frame's protobuf header */

/* What a client proves itself with (method 0: nothing; auth is off). */
typedef struct rpc_auth_creds {
    auth_method method;
    uint8_t secret[AUTH_KEY_BYTES];     /* KEY: the peer key; TICKET: the ticket's secret */
    uint8_t ticket[AUTH_TICKET_BYTES];  /* TICKET */
    char munge_socket[PATH_MAX];        /* MUNGE ("": MUNGE's default) */
} rpc_auth_creds;

/* What a server accepts. */
typedef struct rpc_auth_server {
    bool required;                      /* false: unauthenticated peers too (auth = off) */
    bool accept_key;
    uint8_t peer_key[AUTH_KEY_BYTES];   /* auth_derive(cluster key, AUTH_DERIVE_PEER) */
    bool accept_munge;
    char munge_socket[PATH_MAX];
    bool accept_ticket;
    uint8_t ticket_key[AUTH_KEY_BYTES]; /* auth_derive(cluster key, AUTH_DERIVE_TICKET) */
    uint8_t cap_key[AUTH_KEY_BYTES];    /* auth_derive(cluster key, AUTH_DERIVE_CAPABILITY):
                                         * the MDS issues capabilities, the I/O
                                         * servers check them */
    uint8_t handle_key[AUTH_KEY_BYTES]; /* auth_derive(cluster key, AUTH_DERIVE_HANDLE):
                                         * the MDS's inode handle tags
                                         * (mds/handles.h); no one else's */
} rpc_auth_server;

#define AUTH_DERIVE_PEER "peer"
#define AUTH_DERIVE_TICKET "ticket"
#define AUTH_DERIVE_CAPABILITY "capability"
#define AUTH_DERIVE_HANDLE "handle"

/* Client side, on a connected transport: 0 with *sess ready and *role the
 * server gave; -EACCES (refused, reason in err), -EPROTO, -ETIMEDOUT or a
 * transport error. */
int rpc_auth_connect(xport *x, const rpc_auth_creds *cr, unsigned timeout_ms, auth_session *sess,
                     auth_role *role, char *err, size_t err_len);

/* Server side, once the first frame's header (hello, already decoded) came
 * in: 0 with *sess and *who; otherwise a negative errno and *why (static
 * text, or err) for the log; the peer was told. */
int rpc_auth_serve(xport *x, const rpc_auth_server *cfg, const frame_header *hello,
                   unsigned timeout_ms, auth_session *sess, auth_identity *who, char *err,
                   size_t err_len);

/* The cluster key's credentials (method KEY): 0, or auth_key_load's
 * -errno with the reason in err. */
int rpc_auth_creds_key(const char *key_path, rpc_auth_creds *cr, char *err, size_t err_len);

/* Fills cr for method from what this process can read: KEY when the
 * cluster key at key_path is ours to read, else MUNGE (or nothing when
 * auth is off: enabled false). 0, or -errno with the reason in err. */
int rpc_auth_creds_for_mds(bool enabled, const char *key_path, const char *munge_socket,
                           rpc_auth_creds *cr, char *err, size_t err_len);

/* The server side's accepted methods from the cluster key (must be
 * readable: daemons run where it is) and the MUNGE socket. */
int rpc_auth_server_init(bool enabled, const char *key_path, bool munge, bool tickets,
                         const char *munge_socket, rpc_auth_server *out, char *err,
                         size_t err_len);

#endif
