/* transport_rdma.c - owns the RDMA transport: librdmacm connection setup and
 * a byte stream over RC send/recv verbs.
 *
 * Each direction has RDMA_SLOTS registered buffers of RDMA_CHUNK_BYTES. The
 * receiver pre-posts a receive on every slot, so the sender starts with
 * RDMA_SLOTS credits; one message (SEND_WITH_IMM, up to one chunk) uses one
 * credit. The receiver re-posts a slot once recv_all has copied it out and
 * returns the credits in the immediate data of its next send, or in an
 * empty credit-only message once RDMA_CREDIT_RETURN_MIN have piled up. Data
 * sends keep the last credit in reserve so that a credit-only message can
 * always go out (no credit deadlock). One thread at a time polls the CQs
 * (blocking on the completion channel); others wait on a condvar. Deadlines
 * are checked between waits of at most RDMA_WAIT_SLICE_MS. Without an RDMA
 * device listen/connect fail -ENODEV. */
#include "transport.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "clock.h"
#include "log.h"

#define RDMA_CHUNK_BYTES (64u << 10)
#define RDMA_SLOTS 32u
#define RDMA_CREDIT_RETURN_MIN (RDMA_SLOTS / 2)
#define RDMA_SQ_DEPTH (2 * RDMA_SLOTS + 4)
#define RDMA_POLL_BATCH 16
#define RDMA_WAIT_SLICE_MS 100 /* bound on one blocking wait, to notice shutdown */
#define RDMA_CM_TIMEOUT_MS 5000
#define RDMA_ACCEPT_TIMEOUT_MS 5000
#define RDMA_LISTEN_BACKLOG 128
#define RDMA_RETRY_COUNT 7
#define RDMA_RNR_RETRY_INFINITE 7
#define RDMA_HOST_MAX 256
#define RDMA_BUF_ALIGN 4096

enum { WRID_CREDIT = 0, WRID_DATA = 1 };

typedef struct rdma_xport {
    xport base;
    struct rdma_event_channel *ech;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *cch;
    struct ibv_cq *scq, *rcq;
    uint8_t *sbuf, *rbuf;
    struct ibv_mr *smr, *rmr;
    bool qp_created, connected;

    pthread_mutex_t m;
    pthread_cond_t cv;
    int err;          /* sticky negative errno once broken */
    bool poller;      /* a thread is blocked on the channels */
    /* send side */
    unsigned credits;       /* peer receives we may consume */
    unsigned data_inflight; /* send slots posted, not completed */
    unsigned sq_inflight;   /* all send WRs posted, not completed */
    unsigned send_next;     /* next send slot */
    /* receive side */
    unsigned recv_head;     /* oldest received slot */
    unsigned recv_ready;    /* completed receives not yet consumed */
    size_t recv_off;        /* bytes of recv_head consumed */
    uint32_t recv_len[RDMA_SLOTS];
    unsigned to_return;     /* re-posted slots not yet told to the peer */
    /* deadlines (xport_ops), checked between waits of RDMA_WAIT_SLICE_MS */
    uint64_t recv_deadline_ms;
    uint64_t send_deadline_ms;
} rdma_xport;

typedef struct rdma_listener {
    xport_listener base;
    struct rdma_event_channel *ech;
    struct rdma_cm_id *id;
    int wake_pipe[2];
} rdma_listener;

/* --------------------------------------------------------- availability */

int xport_rdma_available(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    if (list)
        ibv_free_device_list(list);
    return list && n > 0;
}

static int rdma_require_device(const char *what, const char *addr)
{
    if (xport_rdma_available())
        return 0;
    log_err("rdma: cannot %s %s: no RDMA device (ibv_get_device_list found none)", what,
            addr ? addr : "(null)");
    return -ENODEV;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* ------------------------------------------------------------ verbs I/O */

static int post_recv(rdma_xport *c, unsigned slot)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(c->rbuf + (size_t)slot * RDMA_CHUNK_BYTES),
        .length = RDMA_CHUNK_BYTES,
        .lkey = c->rmr->lkey,
    };
    struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

    return -ibv_post_recv(c->id->qp, &wr, &bad);
}

/* Posts one send (len 0 = credit-only) carrying the credits owed. m held. */
static int post_send(rdma_xport *c, const uint8_t *slot_buf, uint32_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)slot_buf, .length = len, .lkey = c->smr->lkey};
    struct ibv_send_wr wr, *bad;
    int rc;

    assert(c->credits > 0 && c->sq_inflight < RDMA_SQ_DEPTH);
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = len ? WRID_DATA : WRID_CREDIT;
    wr.sg_list = len ? &sge : NULL;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(c->to_return);
    rc = ibv_post_send(c->id->qp, &wr, &bad);
    if (rc)
        return -rc;
    c->to_return = 0;
    c->credits--;
    c->sq_inflight++;
    if (len)
        c->data_inflight++;
    return 0;
}

/* Sends a credit-only message when enough credits are owed. m held. */
static void maybe_return_credits(rdma_xport *c)
{
    if (c->err || c->to_return < RDMA_CREDIT_RETURN_MIN)
        return;
    if (c->credits == 0 || c->sq_inflight >= RDMA_SQ_DEPTH)
        return; /* retried when credits or send completions arrive */
    if (post_send(c, NULL, 0) < 0)
        c->err = -ECONNRESET;
}

static void fail(rdma_xport *c, int err)
{
    if (!c->err) {
        c->err = err;
        log_warn("rdma: connection to %s broken: %s", c->base.peer, strerror(-err));
    }
}

/* Reaps both CQs; returns how many completions were seen. m held. */
static int progress(rdma_xport *c)
{
    struct ibv_wc wc[RDMA_POLL_BATCH];
    int seen = 0, n;

    while ((n = ibv_poll_cq(c->rcq, RDMA_POLL_BATCH, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                fail(c, -ECONNRESET);
                continue;
            }
            assert(wc[i].wr_id == (c->recv_head + c->recv_ready) % RDMA_SLOTS);
            c->recv_len[wc[i].wr_id] = wc[i].byte_len;
            if (wc[i].wc_flags & IBV_WC_WITH_IMM)
                c->credits += ntohl(wc[i].imm_data);
            assert(c->credits <= RDMA_SLOTS);
            c->recv_ready++;
        }
        seen += n;
    }
    if (n < 0)
        fail(c, -EIO);
    while ((n = ibv_poll_cq(c->scq, RDMA_POLL_BATCH, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS)
                fail(c, -ECONNRESET);
            assert(c->sq_inflight > 0);
            c->sq_inflight--;
            if (wc[i].wr_id == WRID_DATA) {
                assert(c->data_inflight > 0);
                c->data_inflight--;
            }
        }
        seen += n;
    }
    if (n < 0)
        fail(c, -EIO);
    if (seen) {
        maybe_return_credits(c);
        pthread_cond_broadcast(&c->cv);
    }
    return seen;
}

/* Handles connection-manager events (a disconnect breaks the stream). */
static void drain_cm_events(rdma_xport *c)
{
    struct rdma_cm_event *ev;

    while (rdma_get_cm_event(c->ech, &ev) == 0) {
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
            fail(c, -ECONNRESET);
        rdma_ack_cm_event(ev);
    }
}

/* Blocks until something may have changed (completion, CM event, shutdown
 * or a time slice passing). m held on entry and exit. */
static void wait_progress(rdma_xport *c)
{
    struct pollfd pfd[2];
    struct ibv_cq *cq;
    void *cq_ctx;

    if (c->poller) { /* someone else blocks on the channel; wait for news */
        struct timespec ts = clock_deadline_after_ms(RDMA_WAIT_SLICE_MS);
        pthread_cond_timedwait(&c->cv, &c->m, &ts);
        return;
    }
    c->poller = true;
    if (ibv_req_notify_cq(c->rcq, 0) || ibv_req_notify_cq(c->scq, 0))
        fail(c, -EIO);
    if (progress(c) || c->err) { /* raced with a completion */
        c->poller = false;
        return;
    }
    pthread_mutex_unlock(&c->m);
    pfd[0] = (struct pollfd){.fd = c->cch->fd, .events = POLLIN};
    pfd[1] = (struct pollfd){.fd = c->ech->fd, .events = POLLIN};
    (void)poll(pfd, 2, RDMA_WAIT_SLICE_MS);
    while (ibv_get_cq_event(c->cch, &cq, &cq_ctx) == 0)
        ibv_ack_cq_events(cq, 1);
    pthread_mutex_lock(&c->m);
    if (pfd[1].revents)
        drain_cm_events(c);
    c->poller = false;
    progress(c);
    pthread_cond_broadcast(&c->cv);
}

/* Frees the head receive slot and re-posts it. m held. */
static void release_head(rdma_xport *c)
{
    unsigned slot = c->recv_head;

    assert(c->recv_ready > 0);
    c->recv_head = (slot + 1) % RDMA_SLOTS;
    c->recv_ready--;
    c->recv_off = 0;
    if (post_recv(c, slot) < 0) {
        fail(c, -EIO);
        return;
    }
    c->to_return++;
    maybe_return_credits(c);
}

/* ------------------------------------------------------------ stream ops */

/* true once deadline_ms (0: none) has passed */
static bool past(uint64_t deadline_ms)
{
    return deadline_ms && clock_now_ms() >= deadline_ms;
}

static bool can_send(const rdma_xport *c)
{
    return c->credits > 1 && c->data_inflight < RDMA_SLOTS && c->sq_inflight < RDMA_SQ_DEPTH;
}

static int rdma_sendv(xport *x, const struct iovec *iov, int cnt)
{
    rdma_xport *c = (rdma_xport *)x;
    int i = 0, rc = 0;
    size_t off = 0;

    pthread_mutex_lock(&c->m);
    while (i < cnt) {
        uint8_t *slot;
        uint32_t fill = 0;

        progress(c);
        while (!c->err && !can_send(c) && !past(c->send_deadline_ms)) {
            wait_progress(c);
            progress(c);
        }
        if (c->err) {
            rc = c->err;
            break;
        }
        if (!can_send(c)) {
            rc = -ETIMEDOUT;
            break;
        }
        /* a slot is free once fewer than RDMA_SLOTS data sends are in flight */
        slot = c->sbuf + (size_t)c->send_next * RDMA_CHUNK_BYTES;
        while (i < cnt && fill < RDMA_CHUNK_BYTES) {
            size_t n = iov[i].iov_len - off;
            if (n > RDMA_CHUNK_BYTES - fill)
                n = RDMA_CHUNK_BYTES - fill;
            memcpy(slot + fill, (const uint8_t *)iov[i].iov_base + off, n);
            fill += (uint32_t)n;
            off += n;
            if (off == iov[i].iov_len) {
                i++;
                off = 0;
            }
        }
        if (fill == 0)
            break;
        rc = post_send(c, slot, fill);
        if (rc < 0) {
            fail(c, rc);
            break;
        }
        c->send_next = (c->send_next + 1) % RDMA_SLOTS;
    }
    pthread_mutex_unlock(&c->m);
    return rc;
}

static int rdma_recv_all(xport *x, void *buf, size_t len)
{
    rdma_xport *c = (rdma_xport *)x;
    uint8_t *p = buf;
    int rc = 0;

    pthread_mutex_lock(&c->m);
    while (len > 0) {
        size_t n;

        progress(c);
        while (c->recv_ready == 0 && !c->err && !past(c->recv_deadline_ms)) {
            wait_progress(c);
            progress(c);
        }
        if (c->recv_ready == 0) {
            rc = c->err ? c->err : -ETIMEDOUT;
            break;
        }
        n = c->recv_len[c->recv_head] - c->recv_off;
        if (n > len)
            n = len;
        memcpy(p, c->rbuf + (size_t)c->recv_head * RDMA_CHUNK_BYTES + c->recv_off, n);
        p += n;
        len -= n;
        c->recv_off += n;
        if (c->recv_off == c->recv_len[c->recv_head])
            release_head(c);
    }
    pthread_mutex_unlock(&c->m);
    return rc;
}

static void rdma_shutdown(xport *x)
{
    rdma_xport *c = (rdma_xport *)x;

    pthread_mutex_lock(&c->m);
    if (!c->err)
        c->err = -ECONNRESET;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->m);
    if (c->connected)
        (void)rdma_disconnect(c->id);
}

static void rdma_set_recv_deadline(xport *x, uint64_t deadline_ms)
{
    rdma_xport *c = (rdma_xport *)x;

    pthread_mutex_lock(&c->m);
    c->recv_deadline_ms = deadline_ms;
    pthread_mutex_unlock(&c->m);
}

static void rdma_set_send_deadline(xport *x, uint64_t deadline_ms)
{
    rdma_xport *c = (rdma_xport *)x;

    pthread_mutex_lock(&c->m);
    c->send_deadline_ms = deadline_ms;
    pthread_mutex_unlock(&c->m);
}

static void rdma_conn_free(rdma_xport *c)
{
    if (!c)
        return;
    if (c->id && c->connected)
        (void)rdma_disconnect(c->id);
    if (c->qp_created)
        rdma_destroy_qp(c->id);
    if (c->smr)
        ibv_dereg_mr(c->smr);
    if (c->rmr)
        ibv_dereg_mr(c->rmr);
    if (c->scq)
        ibv_destroy_cq(c->scq);
    if (c->rcq)
        ibv_destroy_cq(c->rcq);
    if (c->cch)
        ibv_destroy_comp_channel(c->cch);
    if (c->pd)
        ibv_dealloc_pd(c->pd);
    if (c->id)
        rdma_destroy_id(c->id);
    if (c->ech)
        rdma_destroy_event_channel(c->ech);
    free(c->sbuf);
    free(c->rbuf);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->m);
    free(c);
}

static void rdma_close(xport *x)
{
    rdma_conn_free((rdma_xport *)x);
}

static const struct xport_ops rdma_ops = {
    .sendv = rdma_sendv,
    .recv_all = rdma_recv_all,
    .shutdown = rdma_shutdown,
    .set_recv_deadline = rdma_set_recv_deadline,
    .set_send_deadline = rdma_set_send_deadline,
    .close = rdma_close,
};

/* ------------------------------------------------------ connection setup */

static rdma_xport *rdma_conn_new(void)
{
    rdma_xport *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->base.ops = &rdma_ops;
    c->credits = RDMA_SLOTS;
    pthread_mutex_init(&c->m, NULL);
    clock_cond_init(&c->cv);
    return c;
}

static int alloc_ring(rdma_xport *c, uint8_t **buf, struct ibv_mr **mr)
{
    size_t bytes = (size_t)RDMA_SLOTS * RDMA_CHUNK_BYTES;

    if (posix_memalign((void **)buf, RDMA_BUF_ALIGN, bytes) != 0)
        return -ENOMEM;
    *mr = ibv_reg_mr(c->pd, *buf, bytes, IBV_ACCESS_LOCAL_WRITE);
    return *mr ? 0 : -errno;
}

/* PD, CQs, QP, registered rings and pre-posted receives for c->id. */
static int rdma_conn_setup(rdma_xport *c)
{
    struct ibv_context *verbs = c->id->verbs;
    struct ibv_qp_init_attr qa;
    int rc;

    c->pd = ibv_alloc_pd(verbs);
    c->cch = c->pd ? ibv_create_comp_channel(verbs) : NULL;
    if (!c->cch || set_nonblock(c->cch->fd) < 0 || set_nonblock(c->ech->fd) < 0)
        return -ENOMEM;
    c->scq = ibv_create_cq(verbs, RDMA_SQ_DEPTH, c, c->cch, 0);
    c->rcq = ibv_create_cq(verbs, RDMA_SLOTS, c, c->cch, 0);
    if (!c->scq || !c->rcq)
        return -ENOMEM;
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = c->scq;
    qa.recv_cq = c->rcq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = RDMA_SQ_DEPTH;
    qa.cap.max_recv_wr = RDMA_SLOTS;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(c->id, c->pd, &qa) < 0)
        return -errno;
    c->qp_created = true;
    rc = alloc_ring(c, &c->sbuf, &c->smr);
    if (rc == 0)
        rc = alloc_ring(c, &c->rbuf, &c->rmr);
    for (unsigned s = 0; rc == 0 && s < RDMA_SLOTS; s++)
        rc = post_recv(c, s);
    return rc;
}

static void conn_params(struct rdma_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->retry_count = RDMA_RETRY_COUNT;
    p->rnr_retry_count = RDMA_RNR_RETRY_INFINITE;
}

/* Waits for `want` on ch; maps failure events to errnos. */
static int wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
                         long long deadline_ms)
{
    for (;;) {
        struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
        struct rdma_cm_event *ev;
        long long left_ms = deadline_ms - (long long)clock_now_ms();
        int got, status;

        if (left_ms <= 0)
            return -ETIMEDOUT;
        if (poll(&pfd, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms) <= 0)
            continue;
        if (rdma_get_cm_event(ch, &ev) < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return -errno;
        }
        got = ev->event;
        status = ev->status;
        rdma_ack_cm_event(ev);
        if ((int)want == got)
            return status ? -ECONNREFUSED : 0;
        switch (got) {
        case RDMA_CM_EVENT_REJECTED:
            return -ECONNREFUSED;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
            return -EHOSTUNREACH;
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_DISCONNECTED:
            return -ECONNRESET;
        default:
            continue;
        }
    }
}

static int rdma_resolve(const char *addr, bool passive, struct rdma_addrinfo **res)
{
    char host[RDMA_HOST_MAX], serv[16];
    unsigned port;
    struct rdma_addrinfo hints;

    if (xport_split_addr(addr, host, sizeof(host), &port) < 0) {
        log_err("rdma: bad address '%s' (want HOST:PORT)", addr);
        return -EINVAL;
    }
    snprintf(serv, sizeof(serv), "%u", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_port_space = RDMA_PS_TCP;
    hints.ai_flags = passive ? RAI_PASSIVE : 0;
    if (rdma_getaddrinfo(host, serv, &hints, res) != 0) {
        log_err("rdma: cannot resolve '%s'", addr);
        return -EHOSTUNREACH;
    }
    return 0;
}

int xport_rdma_connect(const char *addr, int timeout_ms, xport **out)
{
    struct rdma_addrinfo *res = NULL;
    struct rdma_conn_param param;
    rdma_xport *c = NULL;
    long long deadline_ms = (long long)clock_now_ms() + (timeout_ms > 0 ? timeout_ms : RDMA_CM_TIMEOUT_MS);
    int rc;

    rc = rdma_require_device("connect to", addr);
    if (rc < 0)
        return rc;
    rc = rdma_resolve(addr, false, &res);
    if (rc < 0)
        return rc;
    c = rdma_conn_new();
    if (!c) {
        rc = -ENOMEM;
        goto out;
    }
    c->ech = rdma_create_event_channel();
    if (!c->ech || rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP) < 0) {
        rc = -errno;
        goto out;
    }
    if (rdma_resolve_addr(c->id, res->ai_src_addr, res->ai_dst_addr, RDMA_CM_TIMEOUT_MS) < 0 ||
        (rc = wait_cm_event(c->ech, RDMA_CM_EVENT_ADDR_RESOLVED, deadline_ms)) < 0)
        goto out_err;
    if (rdma_resolve_route(c->id, RDMA_CM_TIMEOUT_MS) < 0 ||
        (rc = wait_cm_event(c->ech, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline_ms)) < 0)
        goto out_err;
    rc = rdma_conn_setup(c);
    if (rc < 0)
        goto out;
    conn_params(&param);
    if (rdma_connect(c->id, &param) < 0 ||
        (rc = wait_cm_event(c->ech, RDMA_CM_EVENT_ESTABLISHED, deadline_ms)) < 0)
        goto out_err;
    c->connected = true;
    xport_format_sockaddr(rdma_get_peer_addr(c->id), c->base.peer, sizeof(c->base.peer));
    *out = &c->base;
    c = NULL;
    rc = 0;
    goto out;
out_err:
    if (rc == 0)
        rc = errno ? -errno : -EIO;
out:
    if (rc < 0)
        log_err("rdma: connect to %s failed: %s", addr, strerror(-rc));
    rdma_conn_free(c);
    rdma_freeaddrinfo(res);
    return rc;
}

/* ------------------------------------------------------------- listener */

/* Sets up and accepts one connect request id; frees it on failure. */
static int rdma_accept_id(struct rdma_cm_id *id, xport **out)
{
    struct rdma_conn_param param;
    rdma_xport *c = rdma_conn_new();
    int rc;

    if (!c) {
        rdma_reject(id, NULL, 0);
        rdma_destroy_id(id);
        return -ENOMEM;
    }
    c->id = id;
    id->context = c;
    c->ech = rdma_create_event_channel();
    if (!c->ech || rdma_migrate_id(id, c->ech) < 0) {
        rc = -errno;
        rdma_reject(id, NULL, 0);
        goto fail;
    }
    rc = rdma_conn_setup(c);
    if (rc < 0) {
        rdma_reject(id, NULL, 0);
        goto fail;
    }
    conn_params(&param);
    if (rdma_accept(id, &param) < 0) {
        rc = -errno;
        goto fail;
    }
    rc = wait_cm_event(c->ech, RDMA_CM_EVENT_ESTABLISHED, (long long)clock_now_ms() + RDMA_ACCEPT_TIMEOUT_MS);
    if (rc < 0)
        goto fail;
    c->connected = true;
    xport_format_sockaddr(rdma_get_peer_addr(id), c->base.peer, sizeof(c->base.peer));
    *out = &c->base;
    return 0;
fail:
    log_warn("rdma: accepting a connection failed: %s", strerror(-rc));
    rdma_conn_free(c);
    return rc;
}

static int rdma_l_accept(xport_listener *l, xport **out)
{
    rdma_listener *rl = (rdma_listener *)l;

    for (;;) {
        struct pollfd pfd[2] = {
            {.fd = rl->ech->fd, .events = POLLIN},
            {.fd = rl->wake_pipe[0], .events = POLLIN},
        };
        struct rdma_cm_event *ev;
        struct rdma_cm_id *id;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            return -errno;
        if (pfd[1].revents)
            return -ECANCELED;
        if (!pfd[0].revents)
            continue;
        if (rdma_get_cm_event(rl->ech, &ev) < 0)
            continue;
        if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            rdma_ack_cm_event(ev);
            continue;
        }
        id = ev->id;
        rdma_ack_cm_event(ev); /* migrate_id waits for acks */
        if (rdma_accept_id(id, out) == 0)
            return 0;
    }
}

static void rdma_l_shutdown(xport_listener *l)
{
    rdma_listener *rl = (rdma_listener *)l;
    char b = 1;

    while (write(rl->wake_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
}

static void rdma_l_close(xport_listener *l)
{
    rdma_listener *rl = (rdma_listener *)l;

    if (!rl)
        return;
    if (rl->id)
        rdma_destroy_id(rl->id);
    if (rl->ech)
        rdma_destroy_event_channel(rl->ech);
    if (rl->wake_pipe[0] >= 0)
        close(rl->wake_pipe[0]);
    if (rl->wake_pipe[1] >= 0)
        close(rl->wake_pipe[1]);
    free(rl);
}

static int rdma_l_port(const xport_listener *l)
{
    const rdma_listener *rl = (const rdma_listener *)l;

    return ntohs(rdma_get_src_port(rl->id));
}

static const struct xport_listener_ops rdma_listener_ops = {
    .accept = rdma_l_accept,
    .shutdown = rdma_l_shutdown,
    .close = rdma_l_close,
    .port = rdma_l_port,
};

int xport_rdma_listen(const char *addr, xport_listener **out)
{
    struct rdma_addrinfo *res = NULL;
    rdma_listener *rl;
    int rc;

    rc = rdma_require_device("listen on", addr);
    if (rc < 0)
        return rc;
    rc = rdma_resolve(addr, true, &res);
    if (rc < 0)
        return rc;
    rl = calloc(1, sizeof(*rl));
    if (!rl) {
        rc = -ENOMEM;
        goto out;
    }
    rl->base.ops = &rdma_listener_ops;
    rl->wake_pipe[0] = rl->wake_pipe[1] = -1;
    if (pipe2(rl->wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        goto out_errno;
    rl->ech = rdma_create_event_channel();
    if (!rl->ech || rdma_create_id(rl->ech, &rl->id, rl, RDMA_PS_TCP) < 0)
        goto out_errno;
    if (rdma_bind_addr(rl->id, res->ai_src_addr) < 0 ||
        rdma_listen(rl->id, RDMA_LISTEN_BACKLOG) < 0)
        goto out_errno;
    if (set_nonblock(rl->ech->fd) < 0)
        goto out_errno;
    *out = &rl->base;
    rl = NULL;
    goto out;
out_errno:
    rc = errno ? -errno : -EIO;
    log_err("rdma: cannot listen on %s: %s", addr, strerror(-rc));
out:
    rdma_l_close(rl ? &rl->base : NULL);
    rdma_freeaddrinfo(res);
    return rc;
}
