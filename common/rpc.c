/* rpc.c - owns the request/reply RPC layer of rpc.h: the server (accept
 * thread + one thread per connection calling the handler) and the client
 * connection (pipelined calls matched to replies by a reader thread, reply
 * bulk received straight into the caller's iovec). */
#include "rpc.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"
#include "transport.h"

#define RPC_DEFAULT_MAX_CONNECTIONS 1024u
#define RPC_BULK_KEEP_BYTES (4u << 20) /* per-connection receive buffer kept between requests */
#define RPC_DRAIN_CHUNK_BYTES (64u << 10)
/* Once a request's first byte has arrived, the rest of its frame must follow
 * within this long: a peer that sends half a frame and stalls would
 * otherwise hold a server thread (and its buffers) forever. */
#define RPC_FRAME_BODY_TIMEOUT_MS 30000u
#define RPC_SLOT_BITS 12
#define RPC_SLOT_MASK ((1u << RPC_SLOT_BITS) - 1)
#define RPC_SEND_IOV_MAX (2 + RPC_MAX_IOV) /* frame + header + bulk */
#define RPC_MSG_STACK_BYTES 512            /* packed headers up to this size stay on the stack */

_Static_assert((1u << RPC_SLOT_BITS) == RPC_MAX_INFLIGHT, "req_id slot bits match the table");

/* ================================================================ common */

static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Sums iov lengths; -EINVAL on a bad count, -EMSGSIZE over max_bytes. */
static int iov_total(const struct iovec *iov, int cnt, uint64_t max_bytes, uint64_t *total)
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

static uint32_t iov_crc(const struct iovec *iov, int cnt)
{
    uint32_t crc = 0;

    for (int i = 0; i < cnt; i++)
        crc = crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    return crc;
}

/* Sends frame + hdr + bulk in one sendv. The caller holds the send lock. */
static int send_frame(xport *x, const frame_header *fh, const void *hdr,
                      const struct iovec *bulk, int bulk_cnt)
{
    uint8_t raw[FRAME_HEADER_BYTES];
    struct iovec iov[RPC_SEND_IOV_MAX];
    int n = 0;

    assert(bulk_cnt <= RPC_MAX_IOV);
    frame_encode(fh, raw);
    iov[n++] = (struct iovec){.iov_base = raw, .iov_len = sizeof(raw)};
    if (fh->hdr_len)
        iov[n++] = (struct iovec){.iov_base = (void *)hdr, .iov_len = fh->hdr_len};
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

/* Packs a protobuf message into *buf (stack when small, else malloc). */
static int pack_msg(const ProtobufCMessage *msg, uint8_t *stack, uint8_t **buf, size_t *len)
{
    size_t n = msg ? protobuf_c_message_get_packed_size(msg) : 0;

    *buf = n <= RPC_MSG_STACK_BYTES ? stack : malloc(n);
    if (!*buf)
        return -ENOMEM;
    *len = n ? protobuf_c_message_pack(msg, *buf) : 0;
    assert(*len == n);
    return 0;
}

/* ================================================================ server */

struct rpc_replier {
    rpc_server *s;
    xport *x;
    pthread_mutex_t send_m;
    atomic_int refs;
    struct rpc_replier *prev, *next; /* in s->conns, under s->m */
    uint8_t *hdr_buf, *bulk_buf;      /* reused between requests */
    size_t hdr_cap, bulk_cap;
};

struct rpc_server {
    rpc_server_opts o;
    xport_listener *l;
    pthread_t accept_thr;
    pthread_mutex_t m;
    pthread_cond_t idle_cv; /* nconns dropped to 0 */
    rpc_replier *conns;
    unsigned nconns;
    bool stopping;
};

void rpc_replier_hold(rpc_replier *r)
{
    assert(r && atomic_load(&r->refs) > 0);
    atomic_fetch_add(&r->refs, 1);
}

void rpc_replier_release(rpc_replier *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    r->x->ops->close(r->x);
    pthread_mutex_destroy(&r->send_m);
    free(r->hdr_buf);
    free(r->bulk_buf);
    free(r);
}

/* A reply frame; the bulk's CRC32C is computed here unless given. */
static int reply_frame(rpc_replier *r, const rpc_msg *req, const void *hdr, size_t hdr_len,
                       const struct iovec *bulk, int bulk_cnt, const uint32_t *bulk_crc)
{
    frame_header fh;
    uint64_t bulk_len;
    int rc;

    assert(r && req);
    if (hdr_len > UINT32_MAX || (hdr_len && !hdr))
        return -EINVAL;
    rc = iov_total(bulk, bulk_cnt, UINT32_MAX, &bulk_len);
    if (rc < 0)
        return rc;
    fh = (frame_header){
        .magic = FRAME_MAGIC,
        .version = FRAME_VERSION,
        .type = req->type,
        .flags = FRAME_FLAG_REPLY,
        .hdr_len = (uint32_t)hdr_len,
        .bulk_len = (uint32_t)bulk_len,
        .bulk_crc32c = bulk_crc != NULL ? *bulk_crc : iov_crc(bulk, bulk_cnt),
        .req_id = req->req_id,
    };
    pthread_mutex_lock(&r->send_m);
    rc = send_frame(r->x, &fh, hdr, bulk, bulk_cnt);
    pthread_mutex_unlock(&r->send_m);
    if (rc < 0) /* the stream may be cut mid-frame: end the connection */
        r->x->ops->shutdown(r->x);
    return rc;
}

int rpc_reply(rpc_replier *r, const rpc_msg *req, const void *hdr, size_t hdr_len,
              const struct iovec *bulk, int bulk_cnt)
{
    return reply_frame(r, req, hdr, hdr_len, bulk, bulk_cnt, NULL);
}

static int reply_msg(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg,
                     const struct iovec *bulk, int bulk_cnt, const uint32_t *bulk_crc)
{
    uint8_t stack[RPC_MSG_STACK_BYTES], *buf;
    size_t len;
    int rc = pack_msg(msg, stack, &buf, &len);

    if (rc < 0)
        return rc;
    rc = reply_frame(r, req, buf, len, bulk, bulk_cnt, bulk_crc);
    if (buf != stack)
        free(buf);
    return rc;
}

int rpc_reply_msg(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg,
                  const struct iovec *bulk, int bulk_cnt)
{
    return reply_msg(r, req, msg, bulk, bulk_cnt, NULL);
}

int rpc_reply_msg_crc(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg,
                      const struct iovec *bulk, int bulk_cnt, uint32_t bulk_crc)
{
    return reply_msg(r, req, msg, bulk, bulk_cnt, &bulk_crc);
}

/* Makes *buf hold at least len bytes (never 0-sized). */
static int ensure_buf(uint8_t **buf, size_t *cap, size_t len)
{
    size_t want = len ? len : 1;

    if (*cap >= want)
        return 0;
    free(*buf);
    *buf = malloc(want);
    *cap = *buf ? want : 0;
    return *buf ? 0 : -ENOMEM;
}

static void shrink_bufs(rpc_replier *r)
{
    if (r->bulk_cap > RPC_BULK_KEEP_BYTES) {
        free(r->bulk_buf);
        r->bulk_buf = NULL;
        r->bulk_cap = 0;
    }
    if (r->hdr_cap > RPC_BULK_KEEP_BYTES) {
        free(r->hdr_buf);
        r->hdr_buf = NULL;
        r->hdr_cap = 0;
    }
}

/* The rest of the frame must arrive within timeout_ms from now, however it
 * trickles in (0: no deadline). */
static int set_frame_deadline(xport *x, unsigned timeout_ms)
{
    if (x->ops->set_recv_deadline)
        x->ops->set_recv_deadline(x, timeout_ms ? clock_now_ms() + timeout_ms : 0);
    return 0;
}

/* Reads one request and hands it to the handler. 0 to go on, or an error
 * after which the connection is closed (reason logged). */
static int serve_one(rpc_replier *r)
{
    rpc_server *s = r->s;
    uint8_t raw[FRAME_HEADER_BYTES];
    frame_header fh;
    const char *why = NULL;
    rpc_msg msg;
    int rc;

    rc = r->x->ops->recv_all(r->x, raw, 1); /* idle connections may wait forever */
    if (rc < 0)
        return rc; /* peer went away: not worth a warning */
    rc = set_frame_deadline(r->x, s->o.frame_timeout_ms);
    if (rc == 0)
        rc = r->x->ops->recv_all(r->x, raw + 1, sizeof(raw) - 1);
    if (rc < 0) {
        why = rc == -ETIMEDOUT ? "frame header stalled" : "connection lost inside a frame header";
        goto bad;
    }
    rc = frame_decode(raw, &s->o.limits, &fh, &why);
    if (rc == 0 && (fh.flags & FRAME_FLAG_REPLY)) {
        rc = -EPROTO;
        why = "reply frame sent to a server";
    }
    if (rc < 0)
        goto bad;
    if (ensure_buf(&r->hdr_buf, &r->hdr_cap, fh.hdr_len) < 0 ||
        ensure_buf(&r->bulk_buf, &r->bulk_cap, fh.bulk_len) < 0) {
        rc = -ENOMEM;
        why = "out of memory for the request";
        goto bad;
    }
    rc = r->x->ops->recv_all(r->x, r->hdr_buf, fh.hdr_len);
    if (rc == 0)
        rc = r->x->ops->recv_all(r->x, r->bulk_buf, fh.bulk_len);
    if (rc == 0)
        rc = set_frame_deadline(r->x, 0);
    if (rc < 0) {
        why = rc == -ETIMEDOUT ? "frame body stalled" : "connection lost inside a frame";
        goto bad;
    }
    if (crc32c(0, r->bulk_buf, fh.bulk_len) != fh.bulk_crc32c) {
        rc = -EPROTO;
        why = "bulk crc32c mismatch";
        goto bad;
    }
    if (r->x->ops->peer_closed && r->x->ops->peer_closed(r->x)) {
        /* the client gave up on us (it closes the connection when a request
         * times out for good): a request queued before that close arrived
         * too late to take effect, e.g. after this server was frozen */
        log_info("dropping request type %u from %s: the client closed the connection",
                 (unsigned)fh.type, r->x->peer);
        return -ECONNRESET;
    }
    msg = (rpc_msg){
        .type = fh.type,
        .req_id = fh.req_id,
        .hdr = r->hdr_buf,
        .hdr_len = fh.hdr_len,
        .bulk = r->bulk_buf,
        .bulk_len = fh.bulk_len,
        .peer = r->x->peer,
    };
    s->o.handler(s->o.ctx, &msg, r);
    shrink_bufs(r);
    return 0;
bad:
    log_warn("closing connection from %s: %s", r->x->peer, why);
    return rc;
}

static void *conn_main(void *arg)
{
    rpc_replier *r = arg;
    rpc_server *s = r->s;

    while (serve_one(r) == 0)
        ;
    r->x->ops->shutdown(r->x);
    pthread_mutex_lock(&s->m);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->conns = r->next;
    if (r->next)
        r->next->prev = r->prev;
    assert(s->nconns > 0);
    if (--s->nconns == 0)
        pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->m);
    rpc_replier_release(r);
    return NULL;
}

/* Registers a new connection and starts its thread; closes x on failure. */
static void start_conn(rpc_server *s, xport *x)
{
    rpc_replier *r;
    pthread_attr_t at;
    pthread_t thr;
    int rc;

    pthread_mutex_lock(&s->m);
    if (s->stopping || s->nconns >= s->o.max_connections) {
        if (!s->stopping)
            log_warn("rejecting connection from %s: %u connections open (max_connections)",
                     x->peer, s->nconns);
        pthread_mutex_unlock(&s->m);
        x->ops->close(x);
        return;
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        pthread_mutex_unlock(&s->m);
        log_err("rejecting connection from %s: out of memory", x->peer);
        x->ops->close(x);
        return;
    }
    r->s = s;
    r->x = x;
    atomic_init(&r->refs, 1);
    pthread_mutex_init(&r->send_m, NULL);
    r->next = s->conns;
    if (s->conns)
        s->conns->prev = r;
    s->conns = r;
    s->nconns++;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thr, &at, conn_main, r);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        s->conns = r->next;
        if (r->next)
            r->next->prev = NULL;
        s->nconns--;
        log_err("rejecting connection from %s: cannot start a thread: %s", x->peer,
                strerror(rc));
        pthread_mutex_unlock(&s->m);
        rpc_replier_release(r);
        return;
    }
    log_debug("connection from %s", x->peer);
    pthread_mutex_unlock(&s->m);
}

static void *accept_main(void *arg)
{
    rpc_server *s = arg;

    for (;;) {
        xport *x = NULL;
        int rc = xport_accept(s->l, &x);

        if (rc == -ECANCELED)
            break;
        if (rc < 0) {
            log_warn("accept on %s failed: %s", s->o.address, strerror(-rc));
            struct timespec pause = {.tv_nsec = 10 * 1000000L}; /* e.g. EMFILE: back off */
            nanosleep(&pause, NULL);
            continue;
        }
        start_conn(s, x);
    }
    return NULL;
}

int rpc_server_start(const rpc_server_opts *o, rpc_server **out)
{
    rpc_server *s;
    int rc;

    if (!o || !o->handler || !o->address || !out)
        return -EINVAL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->o = *o;
    if (s->o.max_connections == 0)
        s->o.max_connections = RPC_DEFAULT_MAX_CONNECTIONS;
    if (s->o.frame_timeout_ms == 0)
        s->o.frame_timeout_ms = RPC_FRAME_BODY_TIMEOUT_MS;
    if (s->o.limits.max_header_bytes == 0 && s->o.limits.max_bulk_bytes == 0)
        frame_limits_default(&s->o.limits);
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    rc = xport_listen(o->transport, o->address, &s->l);
    if (rc < 0)
        goto fail;
    rc = -pthread_create(&s->accept_thr, NULL, accept_main, s);
    if (rc < 0) {
        xport_listener_close(s->l);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->m);
    free(s);
    return rc;
}

int rpc_server_port(const rpc_server *s)
{
    assert(s && s->l);
    return xport_listener_port(s->l);
}

void rpc_server_stop(rpc_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->m);
    s->stopping = true;
    pthread_mutex_unlock(&s->m);
    xport_listener_shutdown(s->l);
    pthread_join(s->accept_thr, NULL);
    xport_listener_close(s->l);
    pthread_mutex_lock(&s->m);
    for (rpc_replier *r = s->conns; r; r = r->next)
        r->x->ops->shutdown(r->x);
    while (s->nconns > 0)
        pthread_cond_wait(&s->idle_cv, &s->m);
    pthread_mutex_unlock(&s->m);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->m);
    free(s);
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
};

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
static int reader_one(rpc_conn *c, const frame_header *fh)
{
    uint8_t *hdr = malloc(fh->hdr_len ? fh->hdr_len : 1);
    rpc_call *call;
    int rc;

    if (!hdr)
        return -ENOMEM;
    rc = c->x->ops->recv_all(c->x, hdr, fh->hdr_len);
    if (rc < 0)
        goto out;
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
        if (rc < 0) {
            log_warn("closing connection to %s: %s", c->x->peer, why);
            break;
        }
        rc = reader_one(c, &fh);
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
                  int connect_timeout_ms, rpc_conn **out)
{
    rpc_conn *c;
    int rc;

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
    cond_init_monotonic(&call->cv);
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

int rpc_call_start(rpc_conn *c, uint16_t type, const void *hdr, size_t hdr_len,
                   const struct iovec *bulk, int bulk_cnt,
                   const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    frame_header fh;
    uint64_t bulk_len, resp_len;
    rpc_call *call;
    int rc;

    assert(c && out);
    if (type == 0 || hdr_len > c->lim.max_header_bytes || (hdr_len && !hdr))
        return hdr_len > c->lim.max_header_bytes ? -EMSGSIZE : -EINVAL;
    rc = iov_total(bulk, bulk_cnt, c->lim.max_bulk_bytes, &bulk_len);
    if (rc == 0)
        rc = iov_total(resp_iov, resp_cnt, UINT64_MAX, &resp_len);
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
        .bulk_crc32c = iov_crc(bulk, bulk_cnt),
        .req_id = call->req_id,
    };
    pthread_mutex_lock(&c->send_m);
    rc = send_frame(c->x, &fh, hdr, bulk, bulk_cnt);
    pthread_mutex_unlock(&c->send_m);
    if (rc < 0) { /* a cut frame ruins the stream: the reader fails the rest */
        c->x->ops->shutdown(c->x);
        rpc_call_free(call);
        return -ECONNRESET;
    }
    *out = call;
    return 0;
}

int rpc_call_start_msg(rpc_conn *c, uint16_t type, const ProtobufCMessage *msg,
                       const struct iovec *bulk, int bulk_cnt,
                       const struct iovec *resp_iov, int resp_cnt, rpc_call **out)
{
    uint8_t stack[RPC_MSG_STACK_BYTES], *buf;
    size_t len;
    int rc = pack_msg(msg, stack, &buf, &len);

    if (rc < 0)
        return rc;
    rc = rpc_call_start(c, type, buf, len, bulk, bulk_cnt, resp_iov, resp_cnt, out);
    if (buf != stack)
        free(buf);
    return rc;
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
