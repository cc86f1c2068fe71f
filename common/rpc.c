/* rpc.c - owns the client side of rpc.h (pipelined calls on a connection,
 * matched to replies by a reader thread, reply bulk received straight into
 * the caller's iovec) and the helpers both sides share (rpc_internal.h).
 * The server side is rpc_server.c. */
#include "rpc.h"
#include "rpc_internal.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"
#include "transport.h"

#define RPC_DRAIN_CHUNK_BYTES (64u << 10)
#define RPC_SLOT_BITS 12
#define RPC_SLOT_MASK ((1u << RPC_SLOT_BITS) - 1)

_Static_assert((1u << RPC_SLOT_BITS) == RPC_MAX_INFLIGHT, "req_id slot bits match the table");

/* ================================================================ common */

int rpc__iov_total(const struct iovec *iov, int cnt, uint64_t max_bytes, uint64_t *total)
{
    uint64_t sum = 0;

    if (cnt < 0 || cnt > RPC_MAX_IOV || (cnt > 0 && !iov))
        return -EINVAL;
    for (int i = 0; i < cnt; i++) {
        sum += iov[i].iov_len;
        if (sum > max_bytes)
            return -EMSGSIZE;
    }
    *total = sum;
    return 0;
}

uint32_t rpc__iov_crc(const struct iovec *iov, int cnt)
{
    uint32_t crc = 0;

    for (int i = 0; i < cnt; i++)
        crc = crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    return crc;
}

int rpc__send_frame(xport *x, auth_session *sess, const frame_header *fh, const void *hdr,
                    const struct iovec *bulk, int bulk_cnt)
{
    uint8_t raw[FRAME_HEADER_BYTES], tag[FRAME_TAG_BYTES];
    struct iovec iov[RPC_SEND_IOV_MAX];
    frame_header h = *fh;
    int n = 0;

    assert(bulk_cnt <= RPC_MAX_IOV);
    if (sess)
        h.flags |= FRAME_FLAG_TAG;
    frame_encode(&h, raw);
    iov[n++] = (struct iovec){.iov_base = raw, .iov_len = sizeof(raw)};
    if (sess) {
        auth_tag_send(sess, raw, sizeof(raw), hdr, h.hdr_len, tag);
        iov[n++] = (struct iovec){.iov_base = tag, .iov_len = sizeof(tag)};
    }
    if (h.hdr_len)
        iov[n++] = (struct iovec){.iov_base = (void *)hdr, .iov_len = h.hdr_len};
    for (int i = 0; i < bulk_cnt; i++)
        if (bulk[i].iov_len)
            iov[n++] = bulk[i];
    return x->ops->sendv(x, iov, n);
}

/* Reads and drops len bytes. */
static int drain(xport *x, size_t len)
{
    uint8_t scratch[RPC_DRAIN_CHUNK_BYTES];

    while (len > 0) {
        size_t n = len < sizeof(scratch) ? len : sizeof(scratch);
        int rc = x->ops->recv_all(x, scratch, n);
        if (rc < 0)
            return rc;
        len -= n;
    }
    return 0;
}

int rpc__pack_msg(const ProtobufCMessage *msg, uint8_t *stack, uint8_t **buf, size_t *len)
{
    size_t n = msg ? protobuf_c_message_get_packed_size(msg) : 0;

    *buf = n <= RPC_MSG_STACK_BYTES ? stack : malloc(n);
    if (!*buf)
        return -ENOMEM;
    *len = n ? protobuf_c_message_pack(msg, *buf) : 0;
    assert(*len == n);
    return 0;
}

/* ================================================================ client */

enum call_state {
    CALL_PENDING,   /* sent (or being sent), in the table */
    CALL_RECEIVING, /* the reader is writing into resp_iov, c->m released */
    CALL_DONE,      /* result set, out of the table */
};

struct rpc_call {
    rpc_conn *c; /* NULL once the connection is closed */
    uint64_t req_id;
    uint16_t type;
    enum call_state state;
    int result;
    pthread_cond_t cv; /* state changes, under c->m */
    struct iovec resp_iov[RPC_MAX_IOV];
    int resp_cnt;
    uint64_t resp_cap;
    uint8_t *reply_hdr;
    size_t reply_hdr_len;
    size_t reply_bulk_len;
    struct rpc_call *prev, *next; /* live calls of c, under c->m */
};

struct rpc_conn {
    xport *x;
    frame_limits lim;
    pthread_t reader;
    pthread_mutex_t m;
    pthread_mutex_t send_m;
    pthread_cond_t idle_cv;        /* waiters dropped to 0 */
    rpc_call *table[RPC_MAX_INFLIGHT]; /* pending calls by req_id slot */
    uint32_t free_slots[RPC_MAX_INFLIGHT];
    unsigned nfree;
    uint64_t seq;
    rpc_call *live;   /* every call not yet freed */
    unsigned waiters; /* threads blocked on a call's cv */
    bool closing;
    atomic_bool broken;
    bool authed;        /* a handshake was done: every frame carries a tag */
    auth_session sess;  /* its keys and sequences (send side under send_m,
                         * receive side the reader's) */
    auth_role role;     /* what the server made of us */
};

static _Thread_local char open_error[2 * RPC_ERROR_TEXT_MAX]; /* with the address */

static unsigned slot_of(uint64_t req_id)
{
    return (unsigned)(req_id & RPC_SLOT_MASK);
}

/* Takes call out of the table and completes it. c->m held. */
static void call_finish(rpc_conn *c, rpc_call *call, int result)
{
    unsigned slot = slot_of(call->req_id);

    assert(c->table[slot] == call && call->state != CALL_DONE);
    c->table[slot] = NULL;
    c->free_slots[c->nfree++] = slot;
    call->state = CALL_DONE;
    call->result = result;
    pthread_cond_broadcast(&call->cv);
}

static void fail_all(rpc_conn *c, int err)
{
    for (unsigned i = 0; i < RPC_MAX_INFLIGHT; i++)
        if (c->table[i])
            call_finish(c, c->table[i], err);
}

/* Receives bulk_len bytes into the call's resp_iov, checking the CRC. */
static int recv_into_call(rpc_conn *c, rpc_call *call, uint32_t bulk_len, uint32_t want_crc)
{
    uint32_t crc = 0;
    size_t left = bulk_len;

    for (int i = 0; i < call->resp_cnt && left > 0; i++) {
        size_t n = call->resp_iov[i].iov_len < left ? call->resp_iov[i].iov_len : left;
        int rc = c->x->ops->recv_all(c->x, call->resp_iov[i].iov_base, n);
        if (rc < 0)
            return rc;
        crc = crc32c(crc, call->resp_iov[i].iov_base, n);
        left -= n;
    }
    assert(left == 0);
    return crc == want_crc ? 0 : -EPROTO;
}

/* Handles one reply frame whose header was decoded into fh. Returns 0, or
 * a connection error. */
static int reader_one(rpc_conn *c, const uint8_t raw[FRAME_HEADER_BYTES],
                      const frame_header *fh)
{
    /* the tag and the header in one read (a system call less per reply),
     * the header then moved to the front of its buffer */
    size_t tag_len = c->authed ? FRAME_TAG_BYTES : 0;
    uint8_t *hdr = malloc(tag_len + fh->hdr_len ? tag_len + fh->hdr_len : 1), tag[FRAME_TAG_BYTES];
    rpc_call *call;
    int rc = 0;

    if (!hdr)
        return -ENOMEM;
    if (tag_len + fh->hdr_len)
        rc = c->x->ops->recv_all(c->x, hdr, tag_len + fh->hdr_len);
    if (rc < 0)
        goto out;
    if (tag_len) {
        memcpy(tag, hdr, tag_len);
        memmove(hdr, hdr + tag_len, fh->hdr_len);
    }
    if (c->authed && !auth_tag_check(&c->sess, raw, FRAME_HEADER_BYTES, hdr, fh->hdr_len, tag)) {
        log_warn("closing connection to %s: a reply's tag is wrong (changed, replayed or "
                 "reordered on the way)", c->x->peer);
        rc = -EPROTO;
        goto out;
    }
    pthread_mutex_lock(&c->m);
    call = c->table[slot_of(fh->req_id)];
    if (!call || call->req_id != fh->req_id) { /* freed or timed out and freed */
        pthread_mutex_unlock(&c->m);
        rc = drain(c->x, fh->bulk_len);
        goto out;
    }
    if (call->type != fh->type || fh->bulk_len > call->resp_cap) {
        call_finish(c, call, call->type != fh->type ? -EPROTO : -EMSGSIZE);
        pthread_mutex_unlock(&c->m);
        rc = drain(c->x, fh->bulk_len);
        goto out;
    }
    call->state = CALL_RECEIVING;
    pthread_mutex_unlock(&c->m);
    rc = recv_into_call(c, call, fh->bulk_len, fh->bulk_crc32c);
    pthread_mutex_lock(&c->m);
    if (rc == 0) {
        call->reply_hdr = hdr;
        call->reply_hdr_len = fh->hdr_len;
        call->reply_bulk_len = fh->bulk_len;
        hdr = NULL;
    } else if (rc == -EPROTO) {
        log_warn("reply bulk crc32c mismatch from %s (req %llu)", c->x->peer,
                 (unsigned long long)fh->req_id);
    }
    call_finish(c, call, rc == -EPROTO ? -EPROTO : rc < 0 ? -ECONNRESET : 0);
    pthread_mutex_unlock(&c->m);
    if (rc == -EPROTO)
        rc = 0; /* the stream is intact; only that call failed */
out:
    free(hdr);
    return rc;
}

static void *reader_main(void *arg)
{
    rpc_conn *c = arg;
    int rc;

    for (;;) {
        uint8_t raw[FRAME_HEADER_BYTES];
        frame_header fh;
        const char *why = NULL;

        rc = c->x->ops->recv_all(c->x, raw, sizeof(raw));
        if (rc < 0)
            break;
        rc = frame_decode(raw, &c->lim, &fh, &why);
        if (rc == 0 && !(fh.flags & FRAME_FLAG_REPLY)) {
            rc = -EPROTO;
            why = "request frame sent to a client";
        }
        if (rc == 0 && !(fh.flags & FRAME_FLAG_TAG) != !c->authed) {
            rc = -EPROTO;
            why = c->authed ? "untagged frame on an authenticated connection"
                            : "tagged frame on a connection without a handshake";
        }
        if (rc < 0) {
            log_warn("closing connection to %s: %s", c->x->peer, why);
            break;
        }
        rc = reader_one(c, raw, &fh);
        if (rc < 0)
            break;
    }
    c->x->ops->shutdown(c->x);
    pthread_mutex_lock(&c->m);
    atomic_store(&c->broken, true);
    if (!c->closing)
        log_debug("connection to %s broken: %s", c->x->peer, strerror(-rc));
    fail_all(c, c->closing ? -ECONNABORTED : -ECONNRESET);
    pthread_mutex_unlock(&c->m);
    return NULL;
}

int rpc_conn_open(const char *transport, const char *address, const frame_limits *lim,
                  int connect_timeout_ms, const rpc_auth_creds *cr, rpc_conn **out)
{
    rpc_conn *c;
    int rc;

    open_error[0] = '\0';
    if (!address || !out)
        return -EINVAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (lim)
        c->lim = *lim;
    else
        frame_limits_default(&c->lim);
    for (unsigned i = 0; i < RPC_MAX_INFLIGHT; i++)
        c->free_slots[i] = RPC_MAX_INFLIGHT - 1 - i;
    c->nfree = RPC_MAX_INFLIGHT;
    atomic_init(&c->broken, false);
    pthread_mutex_init(&c->m, NULL);
    pthread_mutex_init(&c->send_m, NULL);
    pthread_cond_init(&c->idle_cv, NULL);
    rc = xport_connect(transport, address, connect_timeout_ms, &c->x);
    if (rc < 0)
        goto fail;
    if (cr && cr->method) {
        unsigned hs_ms = connect_timeout_ms > (int)RPC_AUTH_MIN_TIMEOUT_MS
                             ? (unsigned)connect_timeout_ms : RPC_AUTH_MIN_TIMEOUT_MS;
        char err[RPC_ERROR_TEXT_MAX];
        rc = rpc_auth_connect(c->x, cr, hs_ms, &c->sess, &c->role, err, sizeof(err));
        if (rc < 0) {
            snprintf(open_error, sizeof(open_error), "authentication with %s failed: %s",
                     address, err);
            c->x->ops->close(c->x);
            goto fail;
        }
        c->authed = true;
    }
    rc = -pthread_create(&c->reader, NULL, reader_main, c);
    if (rc < 0) {
        c->x->ops->close(c->x);
        goto fail;
    }
    *out = c;
    return 0;
fail:
    pthread_cond_destroy(&c->idle_cv);
    pthread_mutex_destroy(&c->send_m);
    pthread_mutex_destroy(&c->m);
    free(c);
    return rc;
}

void rpc_conn_close(rpc_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    c->closing = true;
    pthread_mutex_unlock(&c->m);
    c->x->ops->shutdown(c->x);
    pthread_join(c->reader, NULL); /* it fails every pending call */
    pthread_mutex_lock(&c->m);
    assert(c->nfree == RPC_MAX_INFLIGHT);
    for (rpc_call *call = c->live; call; call = call->next)
        call->c = NULL;
    while (c->waiters > 0)
        pthread_cond_wait(&c->idle_cv, &c->m);
    pthread_mutex_unlock(&c->m);
    c->x->ops->close(c->x);
    pthread_cond_destroy(&c->idle_cv);
    pthread_mutex_destroy(&c->send_m);
    pthread_mutex_destroy(&c->m);
    free(c);
}

void rpc_conn_abort(rpc_conn *c)
{
    if (c)
        c->x->ops->shutdown(c->x); /* the reader sees it, fails every call */
}

const char *rpc_conn_open_error(void)
{
    return open_error;
}

const auth_session *rpc_conn_session(const rpc_conn *c)
{
    return c->authed ? &c->sess : NULL;
}

bool rpc_conn_broken(const rpc_conn *c)
{
    return atomic_load(&((rpc_conn *)c)->broken);
}

static rpc_call *call_new(uint16_t type, const struct iovec *resp_iov, int resp_cnt)
{
    rpc_call *call = calloc(1, sizeof(*call));

    if (!call)
        return NULL;
    call->type = type;
    call->state = CALL_PENDING;
    call->resp_cnt = resp_cnt;
    for (int i = 0; i < resp_cnt; i++) {
        call->resp_iov[i] = resp_iov[i];
        call->resp_cap += resp_iov[i].iov_len;
    }
    clock_cond_init(&call->cv);
    return call;
}

/* Puts call in the table and the live list; -ECONNRESET / -EBUSY. */
static int call_register(rpc_conn *c, rpc_call *call)
{
    unsigned slot;

    pthread_mutex_lock(&c->m);
    if (atomic_load(&c->broken) || c->closing) {
        pthread_mutex_unlock(&c->m);
        return -ECONNRESET;
    }
    if (c->nfree == 0) {
        pthread_mutex_unlock(&c->m);
        return -EBUSY;
    }
    slot = c->free_slots[--c->nfree];
    assert(slot < RPC_MAX_INFLIGHT && !c->table[slot]);
    call->req_id = (++c->seq << RPC_SLOT_BITS) | slot;
    call->c = c;
    c->table[slot] = call;
    call->next = c->live;
    if (c->live)
        c->live->prev = call;
    c->live = call;
    pthread_mutex_unlock(&c->m);
    return 0;
}

/* rpc_call_start with the bulk's CRC32C given (bulk_crc) or computed here (NULL). */
static int call_start(rpc_conn *c, uint16_t type, const void *hdr, size_t hdr_len,
                      const struct iovec *bulk, int bulk_cnt, const uint32_t *bulk_crc,
                      const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    frame_header fh;
    uint64_t bulk_len, resp_len;
    rpc_call *call;
    int rc;

    assert(c && out);
    if (type == 0 || hdr_len > c->lim.max_header_bytes || (hdr_len && !hdr))
        return hdr_len > c->lim.max_header_bytes ? -EMSGSIZE : -EINVAL;
    rc = rpc__iov_total(bulk, bulk_cnt, c->lim.max_bulk_bytes, &bulk_len);
    if (rc == 0)
        rc = rpc__iov_total(resp_iov, resp_cnt, UINT64_MAX, &resp_len);
    if (rc < 0)
        return rc;
    call = call_new(type, resp_iov, resp_cnt);
    if (!call)
        return -ENOMEM;
    rc = call_register(c, call);
    if (rc < 0) {
        pthread_cond_destroy(&call->cv);
        free(call);
        return rc;
    }
    fh = (frame_header){
        .magic = FRAME_MAGIC,
        .version = FRAME_VERSION,
        .type = type,
        .flags = 0,
        .hdr_len = (uint32_t)hdr_len,
        .bulk_len = (uint32_t)bulk_len,
        .bulk_crc32c = bulk_crc != NULL ? *bulk_crc : rpc__iov_crc(bulk, bulk_cnt),
        .req_id = call->req_id,
    };
    pthread_mutex_lock(&c->send_m);
    rc = rpc__send_frame(c->x, c->authed ? &c->sess : NULL, &fh, hdr, bulk, bulk_cnt);
    pthread_mutex_unlock(&c->send_m);
    if (rc < 0) { /* a cut frame ruins the stream: the reader fails the rest */
        c->x->ops->shutdown(c->x);
        rpc_call_free(call);
        return -ECONNRESET;
    }
    *out = call;
    return 0;
}

int rpc_call_start(rpc_conn *c, uint16_t type, const void *hdr, size_t hdr_len,
                   const struct iovec *bulk, int bulk_cnt,
                   const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    return call_start(c, type, hdr, hdr_len, bulk, bulk_cnt, NULL, resp_iov, resp_cnt, out);
}

static int call_start_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                          const struct iovec *bulk, int bulk_cnt, const uint32_t *bulk_crc,
                          const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    uint8_t stack[RPC_MSG_STACK_BYTES], *buf;
    size_t len;
    int rc = rpc__pack_msg(msg, stack, &buf, &len);

    if (rc < 0)
        return rc;
    rc = call_start(c, type, buf, len, bulk, bulk_cnt, bulk_crc, resp_iov, resp_cnt, out);
    if (buf != stack)
        free(buf);
    return rc;
}

int rpc_call_start_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                       const struct iovec *bulk, int bulk_cnt,
                       const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    return call_start_msg(c, type, msg, bulk, bulk_cnt, NULL, resp_iov, resp_cnt, out);
}

int rpc_call_start_msg_crc(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                           const struct iovec *bulk, int bulk_cnt, uint32_t bulk_crc,
                           const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    return call_start_msg(c, type, msg, bulk, bulk_cnt, &bulk_crc, resp_iov, resp_cnt, out);
}

/* Waits on call->cv while cond holds; c->m held. Returns false on timeout. */
static bool call_wait_state(rpc_conn *c, rpc_call *call, enum call_state until_not,
                            const struct timespec *deadline)
{
    bool ok = true;

    c->waiters++;
    while (call->state == until_not && ok) {
        if (deadline)
            ok = pthread_cond_timedwait(&call->cv, &c->m, deadline) != ETIMEDOUT ||
                 call->state != until_not;
        else
            pthread_cond_wait(&call->cv, &c->m);
    }
    if (--c->waiters == 0 && c->closing)
        pthread_cond_broadcast(&c->idle_cv);
    return ok;
}

int rpc_call_wait(rpc_call *call, int timeout_ms)
{
    rpc_conn *c;
    struct timespec deadline;
    int rc;

    assert(call);
    c = call->c;
    if (!c)
        return call->result;
    if (timeout_ms >= 0)
        deadline = clock_deadline_after_ms((uint64_t)timeout_ms);
    pthread_mutex_lock(&c->m);
    while (call->state != CALL_DONE) {
        enum call_state st = call->state;
        if (!call_wait_state(c, call, st, timeout_ms >= 0 ? &deadline : NULL))
            break;
    }
    rc = call->state == CALL_DONE ? call->result : -ETIMEDOUT;
    pthread_mutex_unlock(&c->m);
    return rc;
}

const uint8_t *rpc_call_reply_hdr(const rpc_call *call, size_t *len)
{
    assert(call);
    if (len)
        *len = call->reply_hdr_len;
    return call->reply_hdr;
}

size_t rpc_call_reply_bulk_len(const rpc_call *call)
{
    assert(call);
    return call->reply_bulk_len;
}

int rpc_call_unpack(const rpc_call *call, const ProtobufCMessageDescriptor *desc,
                    ProtobufCMessage **out)
{
    assert(call && desc && out);
    if (call->state != CALL_DONE || call->result != 0)
        return call->state != CALL_DONE ? -EINPROGRESS : call->result;
    *out = protobuf_c_message_unpack(desc, NULL, call->reply_hdr_len,
                                     call->reply_hdr ? call->reply_hdr : (const uint8_t *)"");
    return *out ? 0 : -EPROTO;
}

void rpc_call_free(rpc_call *call)
{
    rpc_conn *c;

    if (!call)
        return;
    c = call->c;
    if (c) {
        pthread_mutex_lock(&c->m);
        /* never free while the reader writes into resp_iov */
        call_wait_state(c, call, CALL_RECEIVING, NULL);
        if (call->state == CALL_PENDING) /* a late reply will be drained */
            call_finish(c, call, -ECANCELED);
        if (call->prev)
            call->prev->next = call->next;
        else
            c->live = call->next;
        if (call->next)
            call->next->prev = call->prev;
        pthread_mutex_unlock(&c->m);
    }
    pthread_cond_destroy(&call->cv);
    free(call->reply_hdr);
    free(call);
}

int rpc_call_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                 const struct iovec *bulk, int bulk_cnt,
                 const struct iovec *resp_iov, int resp_cnt, int timeout_ms,
                 const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply,
                 size_t *bulk_len)
{
    rpc_call *call = NULL;
    int rc;

    rc = rpc_call_start_msg(c, type, msg, bulk, bulk_cnt, resp_iov, resp_cnt, &call);
    if (rc < 0)
        return rc;
    rc = rpc_call_wait(call, timeout_ms);
    if (rc == 0 && bulk_len)
        *bulk_len = rpc_call_reply_bulk_len(call);
    if (rc == 0 && reply_desc && reply)
        rc = rpc_call_unpack(call, reply_desc, reply);
    rpc_call_free(call);
    return rc;
}

bool rpc_err_is_transport(int err)
{
    switch (-err) {
    case ECONNRESET: case ECONNABORTED: case EPIPE: case ENOTCONN: case ECONNREFUSED:
    case EPROTO: case EHOSTUNREACH: case ENETUNREACH: case EBADF: case ESHUTDOWN:
        return true;
    default:
        return false;
    }
}
