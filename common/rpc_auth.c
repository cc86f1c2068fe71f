/* rpc_auth.c - the connection handshake (rpc_auth.h): its four frames over
 * a bare transport, the checks of each method, and the credentials a
 * process has (cluster key or MUNGE). */
#include "rpc_auth.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.pb-c.h"
#include "clock.h"
#include "log.h"

#define MUNGE_PAYLOAD_BYTES (AUTH_KEY_BYTES + AUTH_NONCE_BYTES) /* secret || client nonce */
#define AUTH_REQ_ID 1u /* handshake frames: one request in flight */

/* Bounds every later send and receive of x by deadline_ms (0: none). */
static void set_deadlines(xport *x, uint64_t deadline_ms)
{
    if (x->ops->set_recv_deadline)
        x->ops->set_recv_deadline(x, deadline_ms);
    if (x->ops->set_send_deadline)
        x->ops->set_send_deadline(x, deadline_ms);
}

/* Sends one handshake frame (no bulk, no tag). */
static int send_msg(xport *x, uint16_t type, bool reply, const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t raw[FRAME_HEADER_BYTES], *buf;
    if (len > RPC_AUTH_MAX_HDR_BYTES)
        return -EMSGSIZE;
    buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(m, buf);
    frame_header fh = { .magic = FRAME_MAGIC, .version = FRAME_VERSION, .type = type,
                        .flags = reply ? FRAME_FLAG_REPLY : 0, .hdr_len = (uint32_t)len,
                        .req_id = AUTH_REQ_ID };
    frame_encode(&fh, raw);
    struct iovec iov[2] = { { raw, sizeof(raw) }, { buf, len } };
    int rc = x->ops->sendv(x, iov, len ? 2 : 1);
    free(buf);
    return rc;
}

/* Receives a handshake frame's header into fh (unless have_fh) and its
 * body, unpacked with desc. */
static int recv_msg(xport *x, const frame_header *given, uint16_t type, bool reply,
                    const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out,
                    const char **why)
{
    frame_limits lim = { .max_header_bytes = RPC_AUTH_MAX_HDR_BYTES, .max_bulk_bytes = 0 };
    frame_header fh;
    int rc;
    if (given) {
        fh = *given;
    } else {
        uint8_t raw[FRAME_HEADER_BYTES];
        if ((rc = x->ops->recv_all(x, raw, sizeof(raw))) < 0) {
            *why = rc == -ETIMEDOUT ? "handshake timed out" : "connection lost in the handshake";
            return rc;
        }
        if ((rc = frame_decode(raw, &lim, &fh, why)) < 0)
            return rc;
    }
    if (fh.type != type || !(fh.flags & FRAME_FLAG_REPLY) != !reply || fh.bulk_len ||
        fh.hdr_len > RPC_AUTH_MAX_HDR_BYTES) {
        *why = "not the expected handshake frame";
        return -EPROTO;
    }
    uint8_t *buf = malloc(fh.hdr_len ? fh.hdr_len : 1);
    if (!buf)
        return -ENOMEM;
    rc = x->ops->recv_all(x, buf, fh.hdr_len);
    if (rc == 0) {
        *out = protobuf_c_message_unpack(desc, NULL, fh.hdr_len, buf);
        if (!*out) {
            *why = "undecodable handshake frame";
            rc = -EPROTO;
        }
    } else {
        *why = rc == -ETIMEDOUT ? "handshake timed out" : "connection lost in the handshake";
    }
    free(buf);
    return rc;
}

static bool nonce_ok(ProtobufCBinaryData b)
{
    return b.len == AUTH_NONCE_BYTES;
}

/* ------------------------------------------------------------- client */
static int build_hello(const rpc_auth_creds *cr, const uint8_t cn[AUTH_NONCE_BYTES],
                       uint8_t secret[AUTH_KEY_BYTES], char **cred, Depfs__AuthHello *h,
                       char *err, size_t err_len)
{
    h->method = (uint32_t)cr->method;
    h->client_nonce = (ProtobufCBinaryData){ AUTH_NONCE_BYTES, (uint8_t *)cn };
    switch (cr->method) {
    case AUTH_METHOD_KEY:
        memcpy(secret, cr->secret, AUTH_KEY_BYTES);
        return 0;
    case AUTH_METHOD_TICKET:
        memcpy(secret, cr->secret, AUTH_KEY_BYTES);
        h->has_ticket = true;
        h->ticket = (ProtobufCBinaryData){ AUTH_TICKET_BYTES, (uint8_t *)cr->ticket };
        return 0;
    case AUTH_METHOD_MUNGE: {
        uint8_t payload[MUNGE_PAYLOAD_BYTES];
        auth_random(secret, AUTH_KEY_BYTES);
        memcpy(payload, secret, AUTH_KEY_BYTES);
        memcpy(payload + AUTH_KEY_BYTES, cn, AUTH_NONCE_BYTES);
        int rc = auth_munge_encode(cr->munge_socket[0] ? cr->munge_socket : NULL, payload,
                                   sizeof(payload), cred, err, err_len);
        auth_wipe(payload, sizeof(payload));
        if (rc < 0)
            return rc;
        h->has_munge_cred = true;
        h->munge_cred = (ProtobufCBinaryData){ strlen(*cred), (uint8_t *)*cred };
        return 0;
    }
    }
    snprintf(err, err_len, "no way to authenticate (auth method %d)", (int)cr->method);
    return -EINVAL;
}

int rpc_auth_connect(xport *x, const rpc_auth_creds *cr, unsigned timeout_ms, auth_session *sess,
                     auth_role *role, char *err, size_t err_len)
{
    uint8_t cn[AUTH_NONCE_BYTES], secret[AUTH_KEY_BYTES], proof[AUTH_PROOF_BYTES];
    Depfs__AuthHello hello = DEPFS__AUTH_HELLO__INIT;
    Depfs__AuthChallenge *ch = NULL;
    Depfs__AuthResult *res = NULL;
    const char *why = NULL;
    char *cred = NULL;
    int rc;

    err[0] = '\0';
    auth_random(cn, sizeof(cn));
    set_deadlines(x, clock_now_ms() + timeout_ms);
    if ((rc = build_hello(cr, cn, secret, &cred, &hello, err, err_len)) < 0)
        goto out;
    if ((rc = send_msg(x, DEPFS__AUTH_FRAME__AUTH_HELLO, false, &hello.base)) < 0 ||
        (rc = recv_msg(x, NULL, DEPFS__AUTH_FRAME__AUTH_HELLO, true,
                       &depfs__auth_challenge__descriptor, (ProtobufCMessage **)&ch, &why)) < 0)
        goto out;
    if (ch->err) {
        rc = -(int)ch->err;
        snprintf(err, err_len, "%s", ch->message ? ch->message : strerror((int)ch->err));
        goto out;
    }
    if (!ch->has_server_nonce || !nonce_ok(ch->server_nonce) || !ch->has_server_proof ||
        ch->server_proof.len != AUTH_PROOF_BYTES) {
        why = "malformed challenge";
        rc = -EPROTO;
        goto out;
    }
    auth_proof(secret, 'S', cr->method, cn, ch->server_nonce.data, proof);
    if (!auth_equal(proof, ch->server_proof.data, sizeof(proof))) {
        why = "the server does not hold the secret (not a server of this cluster)";
        rc = -EACCES;
        goto out;
    }
    auth_proof(secret, 'C', cr->method, cn, ch->server_nonce.data, proof);
    Depfs__AuthProof pr = DEPFS__AUTH_PROOF__INIT;
    pr.client_proof = (ProtobufCBinaryData){ sizeof(proof), proof };
    if ((rc = send_msg(x, DEPFS__AUTH_FRAME__AUTH_PROOF, false, &pr.base)) < 0 ||
        (rc = recv_msg(x, NULL, DEPFS__AUTH_FRAME__AUTH_PROOF, true,
                       &depfs__auth_result__descriptor, (ProtobufCMessage **)&res, &why)) < 0)
        goto out;
    if (res->err) {
        rc = -(int)res->err;
        snprintf(err, err_len, "%s", res->message ? res->message : strerror((int)res->err));
        goto out;
    }
    auth_session_init(sess, secret, false, cn, ch->server_nonce.data);
    *role = res->has_role ? (auth_role)res->role : AUTH_ROLE_NONE;
out:
    if (rc < 0 && !err[0])
        snprintf(err, err_len, "%s", why ? why : strerror(-rc));
    set_deadlines(x, 0);
    auth_wipe(secret, sizeof(secret));
    free(cred);
    if (ch)
        depfs__auth_challenge__free_unpacked(ch, NULL);
    if (res)
        depfs__auth_result__free_unpacked(res, NULL);
    return rc;
}

/* ------------------------------------------------------------- server */
static int refuse(xport *x, uint16_t type, int err_no, const char *msg)
{
    if (type == DEPFS__AUTH_FRAME__AUTH_HELLO) {
        Depfs__AuthChallenge c = DEPFS__AUTH_CHALLENGE__INIT;
        c.err = (uint32_t)err_no;
        c.message = (char *)msg;
        send_msg(x, type, true, &c.base);
    } else {
        Depfs__AuthResult r = DEPFS__AUTH_RESULT__INIT;
        r.err = (uint32_t)err_no;
        r.message = (char *)msg;
        send_msg(x, type, true, &r.base);
    }
    return -err_no;
}

/* The secret the hello's method proves, and who it makes the peer. */
static int check_hello(const rpc_auth_server *cfg, const Depfs__AuthHello *h,
                       uint8_t secret[AUTH_KEY_BYTES], auth_identity *who, char *err,
                       size_t err_len)
{
    memset(who, 0, sizeof(*who));
    switch (h->method) {
    case AUTH_METHOD_KEY:
        if (!cfg->accept_key)
            break;
        memcpy(secret, cfg->peer_key, AUTH_KEY_BYTES);
        who->role = AUTH_ROLE_CLUSTER;
        return 0;
    case AUTH_METHOD_TICKET: {
        if (!cfg->accept_ticket)
            break;
        auth_ticket t;
        int rc = h->has_ticket ? auth_ticket_open(cfg->ticket_key, h->ticket.data, h->ticket.len,
                                                  (uint64_t)time(NULL), &t, secret)
                               : -EBADMSG;
        if (rc < 0) {
            snprintf(err, err_len, "%s", rc == -EKEYEXPIRED ? "ticket expired: register again"
                                                            : "ticket refused (forged or of another cluster)");
            return -EACCES;
        }
        *who = (auth_identity){ .role = AUTH_ROLE_CLIENT, .uid = t.uid, .gid = t.gid,
                                .client_id = t.client_id };
        return 0;
    }
    case AUTH_METHOD_MUNGE: {
        if (!cfg->accept_munge)
            break;
        if (!h->has_munge_cred || h->munge_cred.len == 0 ||
            h->munge_cred.len > AUTH_MUNGE_CRED_MAX) {
            snprintf(err, err_len, "MUNGE credential missing or over %u bytes",
                     AUTH_MUNGE_CRED_MAX);
            return -EACCES;
        }
        char cred[AUTH_MUNGE_CRED_MAX + 1];
        uint8_t payload[MUNGE_PAYLOAD_BYTES];
        memcpy(cred, h->munge_cred.data, h->munge_cred.len);
        cred[h->munge_cred.len] = '\0';
        uint32_t uid, gid, origin;
        int rc = auth_munge_decode(cfg->munge_socket[0] ? cfg->munge_socket : NULL, cred,
                                   payload, sizeof(payload), &uid, &gid, &origin, err, err_len);
        if (rc < 0)
            return -EACCES;
        if (!auth_equal(payload + AUTH_KEY_BYTES, h->client_nonce.data, AUTH_NONCE_BYTES)) {
            auth_wipe(payload, sizeof(payload));
            snprintf(err, err_len, "MUNGE credential made for another handshake");
            return -EACCES;
        }
        memcpy(secret, payload, AUTH_KEY_BYTES);
        auth_wipe(payload, sizeof(payload));
        *who = (auth_identity){ .role = AUTH_ROLE_USER, .uid = uid, .gid = gid,
                                .origin_ipv4 = origin };
        return 0;
    }
    default:
        break;
    }
    snprintf(err, err_len, "authentication method %u is not accepted here", h->method);
    return -EACCES;
}

int rpc_auth_serve(xport *x, const rpc_auth_server *cfg, const frame_header *hello,
                   unsigned timeout_ms, auth_session *sess, auth_identity *who, char *err,
                   size_t err_len)
{
    uint8_t sn[AUTH_NONCE_BYTES], secret[AUTH_KEY_BYTES], proof[AUTH_PROOF_BYTES];
    Depfs__AuthHello *h = NULL;
    Depfs__AuthProof *pr = NULL;
    const char *why = NULL;
    int rc;

    err[0] = '\0';
    set_deadlines(x, clock_now_ms() + timeout_ms);
    if ((rc = recv_msg(x, hello, DEPFS__AUTH_FRAME__AUTH_HELLO, false,
                       &depfs__auth_hello__descriptor, (ProtobufCMessage **)&h, &why)) < 0)
        goto out;
    if (!nonce_ok(h->client_nonce)) {
        why = "malformed hello";
        rc = refuse(x, DEPFS__AUTH_FRAME__AUTH_HELLO, EPROTO, why);
        goto out;
    }
    if ((rc = check_hello(cfg, h, secret, who, err, err_len)) < 0) {
        refuse(x, DEPFS__AUTH_FRAME__AUTH_HELLO, EACCES, err);
        goto out;
    }
    auth_random(sn, sizeof(sn));
    auth_proof(secret, 'S', (auth_method)h->method, h->client_nonce.data, sn, proof);
    Depfs__AuthChallenge ch = DEPFS__AUTH_CHALLENGE__INIT;
    ch.has_server_nonce = ch.has_server_proof = true;
    ch.server_nonce = (ProtobufCBinaryData){ sizeof(sn), sn };
    ch.server_proof = (ProtobufCBinaryData){ sizeof(proof), proof };
    if ((rc = send_msg(x, DEPFS__AUTH_FRAME__AUTH_HELLO, true, &ch.base)) < 0 ||
        (rc = recv_msg(x, NULL, DEPFS__AUTH_FRAME__AUTH_PROOF, false,
                       &depfs__auth_proof__descriptor, (ProtobufCMessage **)&pr, &why)) < 0)
        goto out;
    auth_proof(secret, 'C', (auth_method)h->method, h->client_nonce.data, sn, proof);
    if (pr->client_proof.len != sizeof(proof) ||
        !auth_equal(proof, pr->client_proof.data, sizeof(proof))) {
        why = "wrong proof: the peer does not hold the secret";
        rc = refuse(x, DEPFS__AUTH_FRAME__AUTH_PROOF, EACCES, why);
        goto out;
    }
    Depfs__AuthResult res = DEPFS__AUTH_RESULT__INIT;
    res.has_role = true;
    res.role = (uint32_t)who->role;
    if ((rc = send_msg(x, DEPFS__AUTH_FRAME__AUTH_PROOF, true, &res.base)) < 0)
        goto out;
    auth_session_init(sess, secret, true, h->client_nonce.data, sn);
out:
    if (rc < 0 && !err[0])
        snprintf(err, err_len, "%s", why ? why : strerror(-rc));
    set_deadlines(x, 0);
    auth_wipe(secret, sizeof(secret));
    if (h)
        depfs__auth_hello__free_unpacked(h, NULL);
    if (pr)
        depfs__auth_proof__free_unpacked(pr, NULL);
    return rc;
}

/* ------------------------------------------------------- credentials */
/* Starts libsodium and reads the cluster key (rpc_auth_creds_for_mds and
 * rpc_auth_server_init share it): auth_key_load's codes, -EIO. */
static int load_key(const char *key_path, uint8_t key[AUTH_KEY_BYTES], char *err, size_t err_len)
{
    if (auth_init() < 0) {
        snprintf(err, err_len, "cannot start libsodium");
        return -EIO;
    }
    return auth_key_load(key_path, key, err, err_len);
}

static int copy_socket(char *dst, size_t len, const char *munge_socket, char *err, size_t err_len)
{
    if (munge_socket && snprintf(dst, len, "%s", munge_socket) >= (int)len) {
        snprintf(err, err_len, "MUNGE socket path too long");
        return -ENAMETOOLONG;
    }
    return 0;
}

int rpc_auth_creds_key(const char *key_path, rpc_auth_creds *cr, char *err, size_t err_len)
{
    uint8_t key[AUTH_KEY_BYTES];
    memset(cr, 0, sizeof(*cr));
    int rc = load_key(key_path, key, err, err_len);
    if (rc < 0)
        return rc;
    cr->method = AUTH_METHOD_KEY;
    auth_derive(key, AUTH_DERIVE_PEER, cr->secret);
    auth_wipe(key, sizeof(key));
    return 0;
}

int rpc_auth_creds_for_mds(bool enabled, const char *key_path, const char *munge_socket,
                           rpc_auth_creds *cr, char *err, size_t err_len)
{
    memset(cr, 0, sizeof(*cr));
    if (!enabled)
        return 0;
    int rc = rpc_auth_creds_key(key_path, cr, err, err_len);
    if (rc == 0)
        return 0;
    if (rc != -ENOENT && rc != -EACCES)
        return rc; /* a key file that is there but wrong: say so, do not fall back */
    cr->method = AUTH_METHOD_MUNGE;
    return copy_socket(cr->munge_socket, sizeof(cr->munge_socket), munge_socket, err, err_len);
}

int rpc_auth_server_init(bool enabled, const char *key_path, bool munge, bool tickets,
                         const char *munge_socket, rpc_auth_server *out, char *err,
                         size_t err_len)
{
    uint8_t key[AUTH_KEY_BYTES];
    memset(out, 0, sizeof(*out));
    if (!enabled)
        return 0;
    int rc = load_key(key_path, key, err, err_len);
    if (rc < 0)
        return rc;
    out->required = true;
    out->accept_key = true;
    auth_derive(key, AUTH_DERIVE_PEER, out->peer_key);
    out->accept_ticket = tickets;
    auth_derive(key, AUTH_DERIVE_TICKET, out->ticket_key);
    auth_derive(key, AUTH_DERIVE_CAPABILITY, out->cap_key);
    auth_derive(key, AUTH_DERIVE_HANDLE, out->handle_key);
    auth_wipe(key, sizeof(key));
    out->accept_munge = munge;
    return copy_socket(out->munge_socket, sizeof(out->munge_socket), munge_socket, err, err_len);
}
