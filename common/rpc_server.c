/* rpc_server.c - owns the server side of rpc.h: the accept thread, which
 * admits connections under the caps and makes room by evicting; one thread
 * per connection, which waits for a request under the idle deadline, reads
 * its frame under the whole-frame deadline into buffers that grow only as
 * bytes arrive, calls the handler, and sends the replies other threads
 * queued for it; and the replier (rpc_reply*, holds).
 *
 * What one peer can cost a server, and why each bound is what it is:
 *  - memory: a request buffer grows by doubling, bounded by the bytes that
 *    actually arrived (a frame declaring 64 MiB and stalling holds a few
 *    KiB); buffers over RPC_RX_KEEP_BYTES are freed after each request and
 *    all of them once the connection idles RPC_RX_KEEP_IDLE_MS. Napkin math
 *    of the growth: a 64 MiB bulk is received in 15 steps from 4 KiB and
 *    realloc copies at most 64 MiB more (about 6 ms at 10 GB/s, against
 *    >= 60 ms for the bytes to cross a 10 Gb/s link); a connection's later
 *    requests up to RPC_RX_KEEP_BYTES reuse its buffer and copy nothing.
 *  - a thread: a frame must be complete within frame_timeout_ms of its
 *    first byte (one byte every few seconds no longer holds it), a new
 *    connection must deliver its first request within frame_timeout_ms of
 *    the connect, an established one is closed after idle_timeout_ms of
 *    silence, and a reply must be sent within send_timeout_ms.
 *  - other clients: a reply made by another thread (the MDS's group commit
 *    answers every connection from one thread) is queued, bounded, and sent
 *    by the connection's own thread, so a client that reads no replies
 *    stalls only its own connection; that thread stops reading requests
 *    while max_deferred_replies of its holds are pending.
 *  - connection slots: see "Admission" below.
 *
 * Admission. max_connections caps the connections of the server, and
 * max_unproven_per_peer the connections from one address that have not yet
 * delivered a valid request ("unproven"). Not a cap on all connections of
 * an address: on a one-machine cluster, or behind NAT, every client shares
 * one address, and a per-address cap would lock the cluster's own clients
 * out. A client sends its first request right after it connects, so its
 * connection stops counting against its address within a round trip; what
 * piles up under that cap is what an attacker opens (idle sockets, half
 * headers). A newcomer over either cap takes the place of the oldest
 * unproven connection (of its address, or of any), or, when the server is
 * full of proven ones, of the one idle longest (its client reconnects when
 * it next needs the server: rpc.h). Only connections that are working (a
 * proven frame being read, a handler running, replies pending) are never
 * taken; only when every slot is working is a newcomer refused. So no
 * reserve of slots (for privileged source ports, say) is needed: idle and
 * unproven connections, however many, can always be pushed out, and
 * DePFS clients do not bind privileged ports. */
#include "rpc.h"
#include "rpc_internal.h"

#include "auth.pb-c.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"

#define RPC_RX_FIRST_CHUNK_BYTES (4u << 10) /* first buffer of a frame part */
#define RPC_RX_KEEP_BYTES (4u << 20)        /* per-connection buffers kept between requests */
#define RPC_RX_KEEP_IDLE_MS 1000u           /* ...while the next request follows this soon */
#define RPC_OUTQ_MAX_BYTES (8u << 20)       /* replies queued by other threads, per connection */
/* Threads of evicted connections may still be on their way out: at most
 * this many beyond max_connections exist at once. */
#define RPC_EVICT_SLACK 64u
#define RPC_ACCEPT_BACKOFF_MS 10u           /* after a failed accept (EMFILE) */

enum conn_state {
    CONN_NEW,      /* accepted; no request yet */
    CONN_IDLE,     /* between requests */
    CONN_READING,  /* receiving a request frame */
    CONN_HANDLING, /* in the handler */
    CONN_EVICTED,  /* taken by the accept thread: the connection's thread exits */
};

/* A reply frame queued by another thread, encoded whole. */
typedef struct out_frame {
    struct out_frame *next;
    frame_header fh;  /* encoded (and tagged) when sent: tags go in send order */
    size_t len;       /* of bytes: the protobuf header, then the bulk */
    uint8_t bytes[];
} out_frame;

struct rpc_replier {
    rpc_server *s;
    xport *x;
    pthread_t thr;          /* the connection's own thread */
    pthread_mutex_t send_m; /* one frame at a time on the stream */
    pthread_mutex_t m;      /* the fields down to `throttled` */
    unsigned refs;          /* the thread's own + one per rpc_replier_hold */
    out_frame *outq, **outq_tail; /* replies of other threads, oldest first */
    size_t outq_bytes;
    int wake_fd;            /* eventfd: queue or refs changed; -1 until the first hold */
    bool closed;            /* thread gone or queue overflowed: nothing more is queued */
    bool throttled;         /* the thread reads nothing until holds are released */
    atomic_int state;       /* enum conn_state */
    atomic_bool proven;     /* a valid request reached the handler */
    _Atomic uint64_t last_active_ms; /* a request handled or a reply sent */
    uint64_t accepted_ms;
    uint64_t seq;           /* admission order, under s->m */
    char host[XPORT_PEER_MAX]; /* the peer's address without its port */
    struct rpc_replier *prev, *next; /* in s->conns, under s->m */
    uint8_t *hdr_buf, *bulk_buf; /* the connection thread's own */
    size_t hdr_cap, bulk_cap;
    bool authed;            /* the handshake is done (set once, by the thread) */
    auth_session sess;      /* send side under send_m; receive side the thread's */
    auth_identity who;      /* the peer, for the handler (rpc_msg.who) */
};

struct rpc_server {
    rpc_server_opts o;
    xport_listener *l;
    pthread_t accept_thr;
    pthread_mutex_t m;      /* the fields down to next_seq */
    pthread_cond_t idle_cv; /* nconns dropped to 0 */
    rpc_replier *conns;     /* newest first */
    unsigned nconns;        /* connection threads alive */
    unsigned nevicted;      /* of them, evicted and on their way out */
    uint64_t next_seq;
    atomic_bool stopping;
    atomic_uint_fast64_t rx_buffer_bytes;
    atomic_uint_fast64_t evicted, refused, timed_out, output_stalled;
    /* the lines a peer can trigger, one limit per kind, so that a flood of
     * one kind (evictions) does not hide another (a peer reading nothing) */
    dlog_limit log_admit;   /* evictions, refusals, accept failures */
    dlog_limit log_frame;   /* bad or stalled frames, silent connections */
    dlog_limit log_output;  /* replies not taken */
};

static uint8_t empty_part[1]; /* hdr/bulk of a request whose part is empty */

static bool on_own_thread(const rpc_replier *r)
{
    return pthread_equal(pthread_self(), r->thr) != 0;
}

static int ms_until(uint64_t deadline_ms)
{
    uint64_t now_ms = clock_now_ms();
    uint64_t left_ms = deadline_ms > now_ms ? deadline_ms - now_ms : 0;

    return left_ms > INT_MAX ? INT_MAX : (int)left_ms;
}

static void set_recv_deadline(xport *x, uint64_t deadline_ms)
{
    if (x->ops->set_recv_deadline)
        x->ops->set_recv_deadline(x, deadline_ms);
}

static void set_send_deadline(xport *x, uint64_t deadline_ms)
{
    if (x->ops->set_send_deadline)
        x->ops->set_send_deadline(x, deadline_ms);
}

static void wake(rpc_replier *r)
{
    uint64_t one = 1;

    if (r->wake_fd >= 0 && write(r->wake_fd, &one, sizeof(one)) < 0)
        assert(errno == EAGAIN); /* the counter is saturated: a wake is pending anyway */
}

/* ============================================================ replier */

static void replier_free(rpc_replier *r)
{
    assert(r->closed && !r->outq && !r->hdr_buf && !r->bulk_buf);
    r->x->ops->close(r->x);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    pthread_mutex_destroy(&r->send_m);
    pthread_mutex_destroy(&r->m);
    free(r);
}

const auth_session *rpc_replier_session(const rpc_replier *r)
{
    return r->authed ? &r->sess : NULL;
}

void rpc_replier_hold(rpc_replier *r)
{
    assert(r);
    pthread_mutex_lock(&r->m);
    assert(r->refs > 0);
    r->refs++;
    /* replies of other threads go through the queue, which needs a way to
     * wake the connection's thread while it waits for the peer */
    if (r->wake_fd < 0 && r->x->ops->poll_fd) {
        r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->wake_fd < 0)
            dlog_limited(&r->s->log_output, DLOG_WARN,
                         "connection from %s: no eventfd (%s): later replies are sent "
                         "by the threads that make them", r->x->peer, strerror(errno));
    }
    pthread_mutex_unlock(&r->m);
}

bool rpc_replier_closed(rpc_replier *r)
{
    assert(r);
    pthread_mutex_lock(&r->m);
    bool closed = r->closed;
    pthread_mutex_unlock(&r->m);
    /* as dispatch asks before each request: the x stays open while r is held */
    return closed || (r->x->ops->peer_closed && r->x->ops->peer_closed(r->x));
}

void rpc_replier_release(rpc_replier *r)
{
    bool last;

    if (!r)
        return;
    pthread_mutex_lock(&r->m);
    assert(r->refs > 0);
    last = --r->refs == 0;
    if (!last && r->throttled)
        wake(r); /* under r->m: r cannot be freed meanwhile */
    pthread_mutex_unlock(&r->m);
    if (last)
        replier_free(r);
}

/* Closes the connection because its peer does not take its replies. */
static void output_stalled(rpc_replier *r, const char *why)
{
    atomic_fetch_add(&r->s->output_stalled, 1);
    dlog_limited(&r->s->log_output, DLOG_WARN, "closing connection from %s: %s", r->x->peer, why);
    r->x->ops->shutdown(r->x);
}

/* Sends iov under the send deadline; a failure ends the connection. */
static int send_iov(rpc_replier *r, const frame_header *fh, const void *hdr,
                    const struct iovec *iov, int cnt)
{
    int rc;

    pthread_mutex_lock(&r->send_m);
    set_send_deadline(r->x, clock_now_ms() + r->s->o.send_timeout_ms);
    rc = rpc__send_frame(r->x, r->authed ? &r->sess : NULL, fh, hdr, iov, cnt);
    set_send_deadline(r->x, 0);
    pthread_mutex_unlock(&r->send_m);
    if (rc == -ETIMEDOUT)
        output_stalled(r, "a reply was not taken within send_timeout_ms");
    else if (rc < 0) /* the stream may be cut mid-frame: end the connection */
        r->x->ops->shutdown(r->x);
    if (rc == 0)
        atomic_store(&r->last_active_ms, clock_now_ms());
    return rc;
}

/* A copy of a reply frame, for the queue. */
static out_frame *frame_copy(const frame_header *fh, const void *hdr, const struct iovec *bulk,
                             int bulk_cnt)
{
    size_t len = (size_t)fh->hdr_len + fh->bulk_len, off;
    out_frame *f = malloc(sizeof(*f) + len);

    if (!f)
        return NULL;
    f->next = NULL;
    f->fh = *fh;
    f->len = len;
    off = 0;
    if (fh->hdr_len)
        memcpy(f->bytes + off, hdr, fh->hdr_len);
    off += fh->hdr_len;
    for (int i = 0; i < bulk_cnt; i++) {
        if (bulk[i].iov_len)
            memcpy(f->bytes + off, bulk[i].iov_base, bulk[i].iov_len);
        off += bulk[i].iov_len;
    }
    assert(off == len);
    return f;
}

/* Queues a reply for the connection's thread. 1: this connection has no
 * queue (send it now); 0 queued; -ECONNRESET gone; -ENOBUFS over
 * RPC_OUTQ_MAX_BYTES (the connection is closed); -ENOMEM. */
static int enqueue(rpc_replier *r, const frame_header *fh, const void *hdr,
                   const struct iovec *bulk, int bulk_cnt)
{
    out_frame *f;
    int rc = 0;

    pthread_mutex_lock(&r->m);
    if (r->wake_fd < 0) /* set once, never unset */
        rc = 1;
    else if (r->closed)
        rc = -ECONNRESET;
    pthread_mutex_unlock(&r->m);
    if (rc != 0)
        return rc;
    f = frame_copy(fh, hdr, bulk, bulk_cnt);
    if (!f)
        return -ENOMEM;
    pthread_mutex_lock(&r->m);
    if (r->closed) {
        rc = -ECONNRESET;
    } else if (r->outq_bytes + f->len > RPC_OUTQ_MAX_BYTES) {
        rc = -ENOBUFS;
        r->closed = true; /* later replies: -ECONNRESET, no second report */
    } else {
        *r->outq_tail = f;
        r->outq_tail = &f->next;
        r->outq_bytes += f->len;
        wake(r);
    }
    pthread_mutex_unlock(&r->m);
    if (rc != 0)
        free(f);
    if (rc == -ENOBUFS)
        output_stalled(r, "more replies queued than RPC_OUTQ_MAX_BYTES: the peer reads none");
    return rc;
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
    rc = rpc__iov_total(bulk, bulk_cnt, UINT32_MAX, &bulk_len);
    if (rc < 0)
        return rc;
    fh = (frame_header){
        .magic = FRAME_MAGIC,
        .version = FRAME_VERSION,
        .type = req->type,
        .flags = FRAME_FLAG_REPLY,
        .hdr_len = (uint32_t)hdr_len,
        .bulk_len = (uint32_t)bulk_len,
        .bulk_crc32c = bulk_crc != NULL ? *bulk_crc : rpc__iov_crc(bulk, bulk_cnt),
        .req_id = req->req_id,
    };
    if (!on_own_thread(r)) {
        rc = enqueue(r, &fh, hdr, bulk, bulk_cnt);
        if (rc <= 0)
            return rc;
    }
    return send_iov(r, &fh, hdr, bulk, bulk_cnt);
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
    int rc = rpc__pack_msg(msg, stack, &buf, &len);

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

/* Sends what other threads queued, oldest first (the connection's thread). */
static int flush_queued(rpc_replier *r)
{
    for (;;) {
        out_frame *f;
        struct iovec iov;
        int rc;

        pthread_mutex_lock(&r->m);
        f = r->outq;
        if (f) {
            r->outq = f->next;
            if (!r->outq)
                r->outq_tail = &r->outq;
            r->outq_bytes -= f->len;
        }
        pthread_mutex_unlock(&r->m);
        if (!f)
            return 0;
        iov = (struct iovec){.iov_base = f->bytes + f->fh.hdr_len, .iov_len = f->fh.bulk_len};
        rc = send_iov(r, &f->fh, f->bytes, &iov, 1);
        free(f);
        if (rc < 0)
            return rc;
    }
}

/* The connection's thread is leaving (or its queue overflowed): later
 * replies fail -ECONNRESET, and what is queued is dropped. */
static void close_queue(rpc_replier *r)
{
    pthread_mutex_lock(&r->m);
    r->closed = true;
    while (r->outq) {
        out_frame *f = r->outq;
        r->outq = f->next;
        free(f);
    }
    r->outq_tail = &r->outq;
    r->outq_bytes = 0;
    pthread_mutex_unlock(&r->m);
}

/* ==================================================== request buffers */

static int rx_resize(rpc_replier *r, uint8_t **buf, size_t *cap, size_t want)
{
    uint8_t *p = realloc(*buf, want);

    if (!p)
        return -ENOMEM;
    atomic_fetch_add(&r->s->rx_buffer_bytes, want);
    atomic_fetch_sub(&r->s->rx_buffer_bytes, *cap);
    *buf = p;
    *cap = want;
    return 0;
}

static void rx_free(rpc_replier *r, uint8_t **buf, size_t *cap)
{
    free(*buf);
    atomic_fetch_sub(&r->s->rx_buffer_bytes, *cap);
    *buf = NULL;
    *cap = 0;
}

static void rx_free_all(rpc_replier *r)
{
    rx_free(r, &r->hdr_buf, &r->hdr_cap);
    rx_free(r, &r->bulk_buf, &r->bulk_cap);
}

/* Receives len bytes into *buf, growing it only as bytes arrive: it is
 * never made larger than max(what it was, RPC_RX_FIRST_CHUNK_BYTES, twice
 * the bytes received so far), so a peer that declares a large part and
 * stalls holds memory in proportion to what it really sent. */
static int recv_grown(rpc_replier *r, uint8_t **buf, size_t *cap, size_t len)
{
    size_t got = 0;

    while (got < len) {
        size_t n;
        int rc;

        if (*cap <= got) {
            size_t want = got ? 2 * got : RPC_RX_FIRST_CHUNK_BYTES;
            rc = rx_resize(r, buf, cap, want < len ? want : len);
            if (rc < 0)
                return rc;
        }
        n = (*cap < len ? *cap : len) - got;
        rc = r->x->ops->recv_all(r->x, *buf + got, n);
        if (rc < 0)
            return rc;
        got += n;
    }
    return 0;
}

/* ============================================================ serving */

/* When a connection waiting for its next request is closed: a new one must
 * deliver its first request within frame_timeout_ms of the connect, an
 * established one may stay silent idle_timeout_ms. */
static uint64_t idle_deadline(const rpc_replier *r)
{
    if (atomic_load(&r->state) == CONN_NEW)
        return r->accepted_ms + r->s->o.frame_timeout_ms;
    return atomic_load(&r->last_active_ms) + r->s->o.idle_timeout_ms;
}

/* true when the thread must read nothing more: too many replies of other
 * threads are pending. Records it for rpc_replier_release's wake. */
static bool throttle_check(rpc_replier *r, int *wake_fd)
{
    bool on;

    pthread_mutex_lock(&r->m);
    on = r->wake_fd >= 0 && r->refs - 1 >= r->s->o.max_deferred_replies;
    r->throttled = on;
    *wake_fd = r->wake_fd;
    pthread_mutex_unlock(&r->m);
    return on;
}

static void drain_wake(int wake_fd)
{
    uint64_t count;

    if (read(wake_fd, &count, sizeof(count)) < 0)
        assert(errno == EAGAIN || errno == EINTR);
}

/* Waits until the next request's first byte can be read (or the stream
 * ended), sending meanwhile what other threads queue, and reading nothing
 * while too many of their replies are pending. 0, -ETIMEDOUT (nothing came
 * before idle_deadline), or an error that ends the connection. Without a
 * poll_fd (rdma) it returns at once: recv_all waits under the deadline. */
static int await_request(rpc_replier *r)
{
    int fd = r->x->ops->poll_fd ? r->x->ops->poll_fd(r->x) : -1;

    for (;;) {
        struct pollfd p[2];
        int n = 0, wake_fd, rc, timeout_ms;
        uint64_t deadline_ms, keep_ms;
        bool throttled;

        if (atomic_load(&r->s->stopping))
            return -ECANCELED;
        rc = flush_queued(r);
        if (rc < 0) /* send_iov said why; not an idle time out */
            return rc == -ETIMEDOUT ? -ECONNABORTED : rc;
        throttled = throttle_check(r, &wake_fd);
        if (fd < 0 && !throttled)
            return 0;
        deadline_ms = idle_deadline(r);
        if (!throttled && clock_now_ms() >= deadline_ms)
            return -ETIMEDOUT;
        keep_ms = atomic_load(&r->last_active_ms) + RPC_RX_KEEP_IDLE_MS;
        if ((r->hdr_buf || r->bulk_buf) && clock_now_ms() >= keep_ms)
            rx_free_all(r); /* idle: give the buffers back */
        if (r->hdr_buf || r->bulk_buf)
            deadline_ms = deadline_ms < keep_ms ? deadline_ms : keep_ms;
        timeout_ms = throttled ? -1 : ms_until(deadline_ms);
        if (wake_fd >= 0)
            p[n++] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
        if (fd >= 0) /* throttled: only a hang-up or error (events 0) */
            p[n++] = (struct pollfd){.fd = fd, .events = throttled ? 0 : POLLIN};
        rc = poll(p, (nfds_t)n, timeout_ms);
        if (rc < 0 && errno != EINTR)
            return -errno;
        if (rc <= 0)
            continue;
        if (wake_fd >= 0 && p[0].revents)
            drain_wake(wake_fd);
        if (fd >= 0 && p[n - 1].revents)
            return 0;
    }
}

/* Logs why a connection is closed (rate-limited) and counts time outs. */
static void log_close(rpc_replier *r, int rc, const char *why)
{
    rpc_server *s = r->s;

    if (atomic_load(&r->state) == CONN_EVICTED || atomic_load(&s->stopping))
        return; /* the evicting thread said why */
    if (rc == -ETIMEDOUT)
        atomic_fetch_add(&s->timed_out, 1);
    dlog_limited(&s->log_frame, DLOG_WARN, "closing connection from %s: %s", r->x->peer, why);
}

/* A request that came before the handshake on a server that requires
 * one: answered with only err = EACCES (field 1 of MdsReply and IoReply
 * alike), so the client says why rather than "connection reset". */
static void refuse_unauthenticated(rpc_replier *r, const frame_header *fh)
{
    static const uint8_t eacces_reply[] = { 0x08, EACCES }; /* field 1, varint */
    _Static_assert(EACCES < 0x80, "one varint byte");
    frame_header rh = { .magic = FRAME_MAGIC, .version = FRAME_VERSION, .type = fh->type,
                        .flags = FRAME_FLAG_REPLY, .hdr_len = sizeof(eacces_reply),
                        .req_id = fh->req_id };
    send_iov(r, &rh, eacces_reply, NULL, 0);
}

/* Before the handshake: 1 when the frame is its hello, or an error (with
 * *why) for a frame that may not come yet; after it, 0 for a tagged frame. */
static int check_auth_state(rpc_replier *r, const frame_header *fh, const char **why)
{
    const rpc_auth_server *a = r->s->o.auth;

    if (r->authed) {
        if (!(fh->flags & FRAME_FLAG_TAG)) {
            *why = "untagged frame on an authenticated connection";
            return -EPROTO;
        }
        return 0;
    }
    if (fh->flags & FRAME_FLAG_TAG) {
        *why = "tagged frame before the handshake";
        return -EPROTO;
    }
    if (fh->type == DEPFS__AUTH_FRAME__AUTH_HELLO)
        return 1;
    if (a && a->required) {
        refuse_unauthenticated(r, fh);
        *why = "request before authenticating (refused with EACCES)";
        return -EACCES;
    }
    return 0;
}

/* Reads the rest of a frame whose first byte is raw[0]. 0, 1 for the
 * handshake's hello (its body unread), or an error with *why set. */
static int recv_frame(rpc_replier *r, uint8_t raw[FRAME_HEADER_BYTES], frame_header *fh,
                      const char **why)
{
    rpc_server *s = r->s;
    uint8_t tag[FRAME_TAG_BYTES];
    int rc = r->x->ops->recv_all(r->x, raw + 1, FRAME_HEADER_BYTES - 1);

    if (rc < 0) {
        *why = rc == -ETIMEDOUT ? "frame header not complete within frame_timeout_ms"
                                : "connection lost inside a frame header";
        return rc;
    }
    rc = frame_decode(raw, &s->o.limits, fh, why);
    if (rc == 0 && (fh->flags & FRAME_FLAG_REPLY)) {
        rc = -EPROTO;
        *why = "reply frame sent to a server";
    }
    if (rc < 0)
        return rc;
    rc = check_auth_state(r, fh, why);
    if (rc != 0)
        return rc;
    /* the tag and the header in one read (a system call less per request),
     * the header then moved to the front of hdr_buf */
    size_t tag_len = r->authed ? FRAME_TAG_BYTES : 0;
    rc = recv_grown(r, &r->hdr_buf, &r->hdr_cap, tag_len + fh->hdr_len);
    if (rc == 0 && tag_len) {
        memcpy(tag, r->hdr_buf, tag_len);
        memmove(r->hdr_buf, r->hdr_buf + tag_len, fh->hdr_len);
    }
    if (rc == 0 && r->authed &&
        !auth_tag_check(&r->sess, raw, FRAME_HEADER_BYTES, r->hdr_buf, fh->hdr_len, tag)) {
        /* before the bulk: nobody without the session makes us take it */
        *why = "frame tag wrong: changed, replayed, reordered or forged";
        return -EPROTO;
    }
    if (rc == 0)
        rc = recv_grown(r, &r->bulk_buf, &r->bulk_cap, fh->bulk_len);
    if (rc < 0) {
        *why = rc == -ENOMEM      ? "out of memory for the request"
               : rc == -ETIMEDOUT ? "frame not complete within frame_timeout_ms"
                                  : "connection lost inside a frame";
        return rc;
    }
    if ((fh->bulk_len ? crc32c(0, r->bulk_buf, fh->bulk_len) : 0) != fh->bulk_crc32c) {
        *why = "bulk crc32c mismatch";
        return -EPROTO;
    }
    return 0;
}

/* Hands a received request to the handler, unless the connection was
 * evicted or its client gave up meanwhile. */
static int dispatch(rpc_replier *r, const frame_header *fh)
{
    rpc_server *s = r->s;
    int reading = CONN_READING;
    rpc_msg msg;

    if (r->x->ops->peer_closed && r->x->ops->peer_closed(r->x)) {
        /* the client gave up on us (it closes the connection when a request
         * times out for good): a request queued before that close arrived
         * too late to take effect, e.g. after this server was frozen */
        dlog_limited(&s->log_frame, DLOG_INFO,
                     "dropping request type %u from %s: the client closed the connection",
                     (unsigned)fh->type, r->x->peer);
        return -ECONNRESET;
    }
    if (!atomic_compare_exchange_strong(&r->state, &reading, CONN_HANDLING))
        return -ECONNABORTED; /* evicted while unproven: the request is not acted on */
    atomic_store(&r->proven, true);
    msg = (rpc_msg){
        .type = fh->type,
        .req_id = fh->req_id,
        .hdr = r->hdr_buf ? r->hdr_buf : empty_part,
        .hdr_len = fh->hdr_len,
        .bulk = r->bulk_buf ? r->bulk_buf : empty_part,
        .bulk_len = fh->bulk_len,
        .peer = r->x->peer,
        .who = r->authed ? &r->who : NULL,
    };
    s->o.handler(s->o.ctx, &msg, r);
    if (r->bulk_cap > RPC_RX_KEEP_BYTES)
        rx_free(r, &r->bulk_buf, &r->bulk_cap);
    if (r->hdr_cap > RPC_RX_KEEP_BYTES)
        rx_free(r, &r->hdr_buf, &r->hdr_cap);
    atomic_store(&r->last_active_ms, clock_now_ms());
    atomic_store(&r->state, CONN_IDLE);
    return 0;
}

/* The handshake whose hello header came in (rpc_auth.h), under one
 * frame_timeout_ms. A server with auth off (no keys) refuses it too. */
static int handshake(rpc_replier *r, const frame_header *hello)
{
    static const rpc_auth_server none; /* accepts no method */
    rpc_server *s = r->s;
    char err[RPC_ERROR_TEXT_MAX];
    int reading = CONN_READING;

    int rc = rpc_auth_serve(r->x, s->o.auth ? s->o.auth : &none, hello, s->o.frame_timeout_ms,
                            &r->sess, &r->who, err, sizeof(err));
    if (rc < 0) {
        log_close(r, rc, err);
        return rc;
    }
    r->authed = true;
    if (!atomic_compare_exchange_strong(&r->state, &reading, CONN_IDLE))
        return -ECONNABORTED; /* evicted meanwhile */
    atomic_store(&r->proven, true);
    atomic_store(&r->last_active_ms, clock_now_ms());
    return 0;
}

/* Waits for, reads and handles one request. 0 to go on, or an error after
 * which the connection is closed (reason logged). */
static int serve_one(rpc_replier *r)
{
    rpc_server *s = r->s;
    uint8_t raw[FRAME_HEADER_BYTES];
    int from = atomic_load(&r->state);
    const char *why = NULL;
    frame_header fh;
    uint64_t frame_deadline_ms;
    int rc;

    if (from != CONN_NEW && from != CONN_IDLE)
        return -ECONNABORTED; /* evicted */
    rc = await_request(r);
    if (rc == 0) {
        set_recv_deadline(r->x, idle_deadline(r));
        rc = r->x->ops->recv_all(r->x, raw, 1);
    }
    if (rc == -ETIMEDOUT && from == CONN_NEW) {
        log_close(r, rc, "no request within frame_timeout_ms of connecting");
        return rc;
    }
    if (rc == -ETIMEDOUT) { /* an established client that will reconnect */
        atomic_fetch_add(&s->timed_out, 1);
        log_debug("closing connection from %s: idle for idle_timeout_ms", r->x->peer);
        return rc;
    }
    if (rc < 0)
        return rc; /* peer went away or we stop: not worth a warning */
    if (!atomic_compare_exchange_strong(&r->state, &from, CONN_READING))
        return -ECONNABORTED; /* evicted */
    frame_deadline_ms = (from == CONN_NEW ? r->accepted_ms : clock_now_ms()) + s->o.frame_timeout_ms;
    set_recv_deadline(r->x, frame_deadline_ms);
    rc = recv_frame(r, raw, &fh, &why);
    set_recv_deadline(r->x, 0);
    if (rc == 1)
        return handshake(r, &fh);
    if (rc < 0) {
        log_close(r, rc, why);
        return rc;
    }
    return dispatch(r, &fh);
}

static void *conn_main(void *arg)
{
    rpc_replier *r = arg;
    rpc_server *s = r->s;

    r->thr = pthread_self(); /* before any handler runs: holds come from handlers */
    while (serve_one(r) == 0)
        ;
    r->x->ops->shutdown(r->x);
    close_queue(r);
    rx_free_all(r);
    pthread_mutex_lock(&s->m);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->conns = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (atomic_load(&r->state) == CONN_EVICTED) {
        assert(s->nevicted > 0);
        s->nevicted--;
    }
    assert(s->nconns > 0);
    if (--s->nconns == 0)
        pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->m);
    rpc_replier_release(r);
    return NULL;
}

/* ========================================================== admission */

static bool unproven(const rpc_replier *r)
{
    return !atomic_load(&r->proven) && atomic_load(&r->state) != CONN_EVICTED;
}

/* Idle with nothing pending: its client loses nothing but a reconnect. */
static bool idle_evictable(rpc_replier *r)
{
    bool quiet;

    if (atomic_load(&r->state) != CONN_IDLE)
        return false;
    pthread_mutex_lock(&r->m);
    quiet = r->refs == 1 && !r->outq;
    pthread_mutex_unlock(&r->m);
    return quiet;
}

/* Takes r away unless it started working meanwhile. s->m held. */
static bool evict(rpc_server *s, rpc_replier *r, const char *newcomer, const char *why)
{
    int st = atomic_load(&r->state);

    if (st == CONN_EVICTED || st == CONN_HANDLING || (st == CONN_READING && atomic_load(&r->proven)))
        return false;
    if (!atomic_compare_exchange_strong(&r->state, &st, CONN_EVICTED))
        return false;
    s->nevicted++;
    atomic_fetch_add(&s->evicted, 1);
    dlog_limited(&s->log_admit, DLOG_WARN, "closing connection from %s to make room for %s: %s",
                 r->x->peer, newcomer, why);
    r->x->ops->shutdown(r->x);
    return true;
}

/* The per-address cap on unproven connections. s->m held. */
static void make_room_for_peer(rpc_server *s, const char *host, const char *newcomer)
{
    rpc_replier *oldest = NULL;
    unsigned n = 0;

    for (rpc_replier *r = s->conns; r; r = r->next) {
        if (!unproven(r) || strcmp(r->host, host) != 0)
            continue;
        n++;
        oldest = r; /* the list is newest first */
    }
    if (n >= s->o.max_unproven_per_peer)
        evict(s, oldest, newcomer,
              "max_unproven_per_peer connections from that address sent no valid request");
}

/* The global cap: true when a newcomer may have a slot. s->m held. */
static bool make_room(rpc_server *s, const char *newcomer)
{
    rpc_replier *oldest_unproven = NULL, *idlest = NULL;

    if (s->nconns - s->nevicted < s->o.max_connections && s->nconns < s->o.max_connections + RPC_EVICT_SLACK)
        return true;
    if (s->nconns >= s->o.max_connections + RPC_EVICT_SLACK)
        return false; /* evicted threads have not left yet */
    for (rpc_replier *r = s->conns; r; r = r->next) {
        if (unproven(r))
            oldest_unproven = r;
        else if (!oldest_unproven && idle_evictable(r) &&
                 (!idlest || atomic_load(&r->last_active_ms) <= atomic_load(&idlest->last_active_ms)))
            idlest = r;
    }
    if (oldest_unproven)
        return evict(s, oldest_unproven, newcomer,
                     "max_connections reached; it sent no valid request yet");
    return idlest && evict(s, idlest, newcomer, "max_connections reached; it was idle longest");
}

static rpc_replier *conn_new(rpc_server *s, xport *x, const char *host)
{
    rpc_replier *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->s = s;
    r->x = x;
    r->refs = 1;
    r->wake_fd = -1;
    r->outq_tail = &r->outq;
    atomic_init(&r->state, CONN_NEW);
    atomic_init(&r->proven, false);
    r->accepted_ms = clock_now_ms();
    atomic_init(&r->last_active_ms, r->accepted_ms);
    memcpy(r->host, host, sizeof(r->host));
    pthread_mutex_init(&r->send_m, NULL);
    pthread_mutex_init(&r->m, NULL);
    return r;
}

/* Registers r and starts its thread. s->m held; false: r is freed. */
static bool conn_start(rpc_server *s, rpc_replier *r)
{
    pthread_attr_t at;
    pthread_t thr;
    int rc;

    r->seq = s->next_seq++;
    r->next = s->conns;
    if (s->conns)
        s->conns->prev = r;
    s->conns = r;
    s->nconns++;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thr, &at, conn_main, r);
    pthread_attr_destroy(&at);
    if (rc == 0)
        return true;
    s->conns = r->next;
    if (r->next)
        r->next->prev = NULL;
    s->nconns--;
    dlog_limited(&s->log_admit, DLOG_ERR, "refusing connection from %s: cannot start a thread: %s",
                 r->x->peer, strerror(rc));
    r->closed = true;
    rpc_replier_release(r);
    return false;
}

/* Admits a new connection under the caps and starts its thread; closes x
 * when it is refused. */
static void start_conn(rpc_server *s, xport *x)
{
    char host[XPORT_PEER_MAX];
    rpc_replier *r;

    xport_peer_host(x, host);
    pthread_mutex_lock(&s->m);
    if (atomic_load(&s->stopping))
        goto refuse;
    make_room_for_peer(s, host, x->peer);
    if (!make_room(s, x->peer)) {
        atomic_fetch_add(&s->refused, 1);
        dlog_limited(&s->log_admit, DLOG_WARN,
                     "refusing connection from %s: %u connections open, all of them working "
                     "(max_connections)", x->peer, s->nconns);
        goto refuse;
    }
    r = conn_new(s, x, host);
    if (!r) {
        dlog_limited(&s->log_admit, DLOG_ERR, "refusing connection from %s: out of memory", x->peer);
        goto refuse;
    }
    if (conn_start(s, r))
        log_debug("connection from %s", x->peer);
    pthread_mutex_unlock(&s->m);
    return;
refuse:
    pthread_mutex_unlock(&s->m);
    x->ops->close(x);
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
            dlog_limited(&s->log_admit, DLOG_WARN, "accept on %s failed: %s", s->o.address,
                         strerror(-rc));
            clock_sleep_ms(RPC_ACCEPT_BACKOFF_MS); /* e.g. EMFILE: back off */
            continue;
        }
        start_conn(s, x);
    }
    return NULL;
}

/* =========================================================== lifecycle */

static void opts_defaults(rpc_server_opts *o)
{
    if (o->max_connections == 0)
        o->max_connections = RPC_DEFAULT_MAX_CONNECTIONS;
    if (o->max_unproven_per_peer == 0)
        o->max_unproven_per_peer = RPC_DEFAULT_MAX_UNPROVEN_PER_PEER;
    if (o->frame_timeout_ms == 0)
        o->frame_timeout_ms = RPC_DEFAULT_FRAME_TIMEOUT_MS;
    if (o->idle_timeout_ms == 0)
        o->idle_timeout_ms = RPC_DEFAULT_IDLE_TIMEOUT_MS;
    if (o->send_timeout_ms == 0)
        o->send_timeout_ms = RPC_DEFAULT_SEND_TIMEOUT_MS;
    if (o->max_deferred_replies == 0)
        o->max_deferred_replies = RPC_DEFAULT_MAX_DEFERRED_REPLIES;
    if (o->limits.max_header_bytes == 0 && o->limits.max_bulk_bytes == 0)
        frame_limits_default(&o->limits);
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
    opts_defaults(&s->o);
    s->log_admit = (dlog_limit)DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);
    s->log_frame = (dlog_limit)DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);
    s->log_output = (dlog_limit)DLOG_LIMIT_INIT(RPC_LOG_BURST, RPC_LOG_PERIOD_MS);
    atomic_init(&s->stopping, false);
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

void rpc_server_get_stats(rpc_server *s, rpc_server_stats *out)
{
    assert(s && out);
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->m);
    out->connections = s->nconns;
    for (rpc_replier *r = s->conns; r; r = r->next)
        out->unproven += unproven(r);
    pthread_mutex_unlock(&s->m);
    out->rx_buffer_bytes = atomic_load(&s->rx_buffer_bytes);
    out->evicted = atomic_load(&s->evicted);
    out->refused = atomic_load(&s->refused);
    out->timed_out = atomic_load(&s->timed_out);
    out->output_stalled = atomic_load(&s->output_stalled);
}

void rpc_server_stop(rpc_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    xport_listener_shutdown(s->l);
    pthread_join(s->accept_thr, NULL);
    xport_listener_close(s->l);
    pthread_mutex_lock(&s->m);
    for (rpc_replier *r = s->conns; r; r = r->next) {
        r->x->ops->shutdown(r->x);
        pthread_mutex_lock(&r->m);
        wake(r); /* a throttled thread polls only its wake_fd */
        pthread_mutex_unlock(&r->m);
    }
    while (s->nconns > 0)
        pthread_cond_wait(&s->idle_cv, &s->m);
    pthread_mutex_unlock(&s->m);
    assert(atomic_load(&s->rx_buffer_bytes) == 0);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->m);
    free(s);
}
