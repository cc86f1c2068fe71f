/* data_io.c - the data path's fan-out: build one IoRequest per server, send
 * them all at once on the servers' pipelined connections, wait with the
 * request timeout, resend once what timed out, then mark the server failed
 * in the status vector. Also the stripe-lock helpers (randomized growing
 * back-off, releasing granted locks) and round sizing. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "data_io.h"
#include "log.h"

void dc_req_init(dc_req *r, const layout *lay, unsigned pos, uint16_t op)
{
    assert(pos < lay->n);
    memset(r, 0, sizeof *r);
    r->active = true;
    r->pos = pos;
    r->server_id = lay->servers[pos];
    r->op = op;
}

int dc_req_add(dc_req *r, uint64_t local_off, uint64_t len, void *buf)
{
    if (len == 0)
        return 0;
    bool ext_merge = r->n_ext > 0 &&
                     r->ext[r->n_ext - 1].offset + r->ext[r->n_ext - 1].length == local_off;
    bool iov_merge = r->n_iov > 0 && buf != NULL &&
                     (uint8_t *)r->iov[r->n_iov - 1].iov_base + r->iov[r->n_iov - 1].iov_len ==
                         (uint8_t *)buf;
    if ((!ext_merge && r->n_ext >= DC_REQ_MAX_EXTENTS) || (!iov_merge && r->n_iov >= RPC_MAX_IOV))
        return -E2BIG;
    if (ext_merge) {
        r->ext[r->n_ext - 1].length += len;
    } else {
        Depfs__Extent *e = &r->ext[r->n_ext++];
        depfs__extent__init(e);
        e->offset = local_off;
        e->length = len;
    }
    if (iov_merge) {
        r->iov[r->n_iov - 1].iov_len += len;
    } else {
        r->iov[r->n_iov].iov_base = buf;
        r->iov[r->n_iov].iov_len = len;
        r->n_iov++;
    }
    r->bytes += len;
    return 0;
}

void dc_req_set_lock(dc_req *r, uint64_t first_stripe, uint64_t count, uint64_t owner_client,
                     uint64_t owner_op)
{
    assert(count > 0);
    depfs__lock_spec__init(&r->lock);
    r->lock.first_stripe = first_stripe;
    r->lock.stripe_count = count;
    r->lock.owner_client = owner_client;
    r->lock.owner_op = owner_op;
    r->has_lock = true;
}

/* Invariant of a built request: extents and memory segments describe the
 * same number of bytes, and bulk only travels with READ/WRITE. */
static void dc_req_check(const dc_req *r)
{
    uint64_t ext_bytes = 0, iov_bytes = 0;
    for (size_t i = 0; i < r->n_ext; i++)
        ext_bytes += r->ext[i].length;
    for (int i = 0; i < r->n_iov; i++)
        iov_bytes += r->iov[i].iov_len;
    assert(ext_bytes == r->bytes && iov_bytes == r->bytes);
    assert(r->bytes == 0 || r->op == DEPFS__IO_OP__IO_READ || r->op == DEPFS__IO_OP__IO_WRITE);
    assert(!r->unlock || r->has_lock);
    (void)ext_bytes;
    (void)iov_bytes;
}

/* ----------------------------------------------------------- fan-out */

typedef struct dc_pending {
    Depfs__Extent *ext_ptrs[DC_REQ_MAX_EXTENTS];
    Depfs__IoRequest msg;
    rpc_call *call;
    bool retry;
} dc_pending;

static bool dc_is_conn_error(int err)
{
    return err == -ETIMEDOUT || err == -ECONNRESET || err == -ECONNABORTED || err == -EPIPE ||
           err == -ENOTCONN || err == -ECONNREFUSED || err == -EPROTO || err == -EHOSTUNREACH ||
           err == -ENETUNREACH || err == -EBADF || err == -ESHUTDOWN;
}

static void dc_build_msg(const dc_req *r, uint64_t ino, dc_pending *p)
{
    Depfs__IoRequest *m = &p->msg;
    depfs__io_request__init(m);
    m->file_id = ino;
    for (size_t i = 0; i < r->n_ext; i++)
        p->ext_ptrs[i] = (Depfs__Extent *)&r->ext[i];
    m->n_extents = r->n_ext;
    m->extents = r->n_ext ? p->ext_ptrs : NULL;
    m->lock = r->has_lock ? (Depfs__LockSpec *)&r->lock : NULL;
    if (r->has_lock && r->lock_attempt > 0) {
        m->has_lock_attempt = true;
        m->lock_attempt = r->lock_attempt;
    }
    if (r->op == DEPFS__IO_OP__IO_WRITE) {
        m->has_unlock = r->unlock;
        m->unlock = r->unlock;
        m->has_sync = r->sync;
        m->sync = r->sync;
        m->n_down_servers = r->n_down;
        m->down_servers = r->n_down ? (uint32_t *)r->down : NULL;
    }
    if (r->ignore_locks) {
        m->has_ignore_locks = true;
        m->ignore_locks = true;
    }
    if (r->has_local_size) {
        m->has_local_size = true;
        m->local_size = r->local_size;
    }
}

/* Start one request; 0, a connection-class error (retry), or another error. */
static int dc_start_one(depfs_t *fs, dc_req *r, dc_pending *p)
{
    rpc_conn *c = dc_server_conn(fs, r->server_id);
    if (c == NULL)
        return DC_ERR_DOWN;
    bool is_write = r->op == DEPFS__IO_OP__IO_WRITE;
    bool is_read = r->op == DEPFS__IO_OP__IO_READ;
    return rpc_call_start_msg(c, r->op, &p->msg.base, is_write ? r->iov : NULL,
                              is_write ? r->n_iov : 0, is_read ? r->iov : NULL,
                              is_read ? r->n_iov : 0, &p->call);
}

static void dc_zero_tail(dc_req *r, uint64_t got)
{
    uint64_t skip = got;
    for (int i = 0; i < r->n_iov; i++) {
        size_t l = r->iov[i].iov_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        memset((uint8_t *)r->iov[i].iov_base + skip, 0, l - skip);
        skip = 0;
    }
}

/* Collect a finished call's outcome into r->result. */
static void dc_finish_one(dc_req *r, dc_pending *p)
{
    Depfs__IoReply *rep = NULL;
    int rc = rpc_call_unpack(p->call, &depfs__io_reply__descriptor, (ProtobufCMessage **)&rep);
    if (rc < 0) {
        r->result = -EPROTO;
        return;
    }
    r->result = rep->err > 0 ? -rep->err : (rep->err < 0 ? rep->err : 0);
    if (r->result != 0 && r->result != -EAGAIN)
        log_debug("ioserver %u op %u: %s (%s)", r->server_id, r->op, strerror(-r->result),
                  rep->message ? rep->message : "");
    r->reply_bulk = rpc_call_reply_bulk_len(p->call);
    if (r->result == 0 && r->op == DEPFS__IO_OP__IO_READ && r->reply_bulk < r->bytes)
        dc_zero_tail(r, r->reply_bulk);
    protobuf_c_message_free_unpacked(&rep->base, NULL);
}

static unsigned dc_timeout_ms(const depfs_t *fs)
{
    return fs->cfg.request_timeout_ms ? fs->cfg.request_timeout_ms : DC_DEFAULT_TIMEOUT_MS;
}

/* One attempt over the requests flagged in `todo`; marks p->retry for the
 * ones that need another try. */
static void dc_attempt(depfs_t *fs, dc_req *reqs, dc_pending *pend, const bool *todo,
                       unsigned nreq)
{
    for (unsigned i = 0; i < nreq; i++) {
        if (!todo[i])
            continue;
        pend[i].retry = false;
        pend[i].call = NULL;
        int rc = dc_start_one(fs, &reqs[i], &pend[i]);
        if (rc == DC_ERR_DOWN) {
            reqs[i].result = DC_ERR_DOWN;
        } else if (rc < 0) {
            reqs[i].result = rc;
            pend[i].retry = dc_is_conn_error(rc);
            rpc_call_free(pend[i].call);
            pend[i].call = NULL;
        }
    }
    uint64_t deadline_ms = dc_now_ms() + dc_timeout_ms(fs);
    for (unsigned i = 0; i < nreq; i++) {
        if (!todo[i] || pend[i].call == NULL)
            continue;
        uint64_t now_ms = dc_now_ms();
        int left_ms = now_ms >= deadline_ms ? 0 : (int)(deadline_ms - now_ms);
        int rc = rpc_call_wait(pend[i].call, left_ms);
        if (rc == 0) {
            dc_finish_one(&reqs[i], &pend[i]);
        } else {
            reqs[i].result = rc;
            pend[i].retry = dc_is_conn_error(rc);
        }
        rpc_call_free(pend[i].call);
        pend[i].call = NULL;
    }
}

void dc_io_run(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq)
{
    assert(nreq <= LAYOUT_MAX_N);
    dc_pending *pend = calloc(nreq ? nreq : 1, sizeof *pend);
    bool todo[LAYOUT_MAX_N] = {0};
    if (pend == NULL) {
        for (unsigned i = 0; i < nreq; i++)
            reqs[i].result = -ENOMEM;
        return;
    }
    for (unsigned i = 0; i < nreq; i++) {
        dc_req *r = &reqs[i];
        if (!r->active)
            continue;
        dc_req_check(r);
        r->result = 0;
        r->reply_bulk = 0;
        if (dc_server_is_down(fs, r->server_id)) {
            r->result = DC_ERR_DOWN;
            continue;
        }
        dc_build_msg(r, ino, &pend[i]);
        todo[i] = true;
    }
    dc_attempt(fs, reqs, pend, todo, nreq);
    bool again = false;
    for (unsigned i = 0; i < nreq; i++) {
        todo[i] = todo[i] && pend[i].retry;
        again = again || todo[i];
    }
    if (again) {
        dc_attempt(fs, reqs, pend, todo, nreq);
        for (unsigned i = 0; i < nreq; i++) {
            if (todo[i] && pend[i].retry) {
                log_warn("ioserver %u: %s twice, marking it failed", reqs[i].server_id,
                         strerror(-reqs[i].result));
                dc_server_mark_failed(fs, reqs[i].server_id);
                reqs[i].result = DC_ERR_DOWN;
            }
        }
    }
    free(pend);
}

void dc_io_unlock_granted(depfs_t *fs, uint64_t ino, const dc_req *reqs, unsigned nreq)
{
    assert(nreq <= LAYOUT_MAX_N);
    dc_req *un = calloc(nreq ? nreq : 1, sizeof *un);
    if (un == NULL)
        return; /* the servers' lock lease and the recovery module clean up */
    for (unsigned i = 0; i < nreq; i++) {
        const dc_req *r = &reqs[i];
        if (!r->active || !r->has_lock || r->result != 0)
            continue;
        un[i].active = true;
        un[i].pos = r->pos;
        un[i].server_id = r->server_id;
        un[i].op = DEPFS__IO_OP__IO_UNLOCK;
        un[i].has_lock = true;
        un[i].lock = r->lock;
    }
    dc_io_run(fs, ino, un, nreq);
    free(un);
}

/* ------------------------------------------------------------- helpers */

static uint64_t dc_rand_next(void)
{
    static _Thread_local uint64_t state;
    if (state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)&state ^ (uint64_t)ts.tv_sec;
        state |= 1;
    }
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

void dc_lock_backoff(unsigned attempt)
{
    uint64_t cap_us = DC_LOCK_BACKOFF_MIN_US;
    for (unsigned i = 0; i < attempt && cap_us < DC_LOCK_BACKOFF_MAX_US; i++)
        cap_us *= 2;
    if (cap_us > DC_LOCK_BACKOFF_MAX_US)
        cap_us = DC_LOCK_BACKOFF_MAX_US;
    uint64_t us = cap_us / 2 + dc_rand_next() % (cap_us / 2 + 1);
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

uint32_t dc_down_mask(depfs_t *fs, const layout *lay)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (dc_server_is_down(fs, lay->servers[p]))
            m |= 1u << p;
    return m;
}

unsigned dc_popcount32(uint32_t v) { return (unsigned)__builtin_popcount(v); }

uint64_t dc_round_stripes(const depfs_t *fs, const layout *lay)
{
    /* data and parity (or decode) buffers: n units per stripe */
    uint64_t by_mem = DC_ROUND_BYTES_MAX / ((uint64_t)lay->n * lay->su);
    uint32_t max_bulk = fs->limits.max_bulk_bytes ? fs->limits.max_bulk_bytes
                                                  : FRAME_DEFAULT_MAX_BULK_BYTES;
    uint64_t by_bulk = max_bulk / lay->su; /* one unit per stripe per server */
    uint64_t r = DC_ROUND_STRIPES_MAX;
    if (by_mem < r)
        r = by_mem;
    if (by_bulk < r)
        r = by_bulk;
    return r ? r : 1;
}
