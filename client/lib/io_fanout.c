/* io_fanout.c - the data path's fan-out: build one IoRequest per server, send
 * them all at once on the servers' pipelined connections, wait with the
 * request timeout, resend once what timed out, then mark the server failed
 * in the status vector. Replies are classified here, once: lock NACKs,
 * cluster epochs (a client behind refreshes from the MDS and resends, a
 * server behind is asked again until the epoch push reaches it, for at
 * most one request timeout, then counts as down), servers that refuse reads while they
 * rebuild. Also the stripe-lock helpers (randomized growing
 * back-off, releasing granted locks) and round sizing. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io_fanout.h"
#include "block_crc.h"
#include "invariant.h"
#include "io_caps.h"
#include "log.h"
#include "wire.h"

void dc_req_init(dc_req *r, const layout *lay, unsigned pos, uint16_t op)
{
    assert(pos < lay->n);
    memset(r, 0, sizeof *r);
    r->active = true;
    r->pos = pos;
    r->server_id = lay->servers[pos];
    r->op = op;
    r->n = lay->n;
    r->k = lay->k;
    r->su = lay->su;
    r->layout_servers = lay->servers;
    r->client_io_idle_ms = UINT32_MAX;
}

void dc_req_init_ctl(dc_req *r, uint32_t server_id, uint16_t op, const Depfs__IoRequest *msg)
{
    memset(r, 0, sizeof *r);
    r->active = true;
    r->server_id = server_id;
    r->op = op;
    r->any_state = true;
    r->ctl = msg;
    r->keep_reply = true;
    r->client_io_idle_ms = UINT32_MAX;
}

void dc_req_free_reply(dc_req *r)
{
    if (r->reply)
        depfs__io_reply__free_unpacked(r->reply, NULL);
    r->reply = NULL;
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
                     uint64_t owner_op, dc_lock_mode mode)
{
    assert(count > 0);
    depfs__lock_spec__init(&r->lock);
    r->lock.first_stripe = first_stripe;
    r->lock.stripe_count = count;
    r->lock.owner_client = owner_client;
    r->lock.owner_op = owner_op;
    r->lock.has_read_only = r->lock.read_only = mode == DC_LOCK_READ;
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
    INVARIANT(ext_bytes == r->bytes && iov_bytes == r->bytes,
              "server %u op %u: extents %llu, memory %llu, request %llu bytes", r->server_id,
              r->op, (unsigned long long)ext_bytes, (unsigned long long)iov_bytes,
              (unsigned long long)r->bytes);
    INVARIANT(r->bytes == 0 || r->op == DEPFS__IO_OP__IO_READ || r->op == DEPFS__IO_OP__IO_WRITE,
              "server %u: op %u with %llu bytes of bulk", r->server_id, r->op,
              (unsigned long long)r->bytes);
    INVARIANT(!r->unlock || r->has_lock, "server %u op %u: unlock without a lock", r->server_id,
              r->op);
}

/* ----------------------------------------------------------- fan-out */

/* Resends of requests a server refused as "client behind" (ESTALE with a
 * newer epoch), each after a refresh from the MDS. */
#define DC_EPOCH_RETRIES_MAX 3u

/* A server answering "server behind" may only be a moment away from the
 * epoch push that follows every state change (depfs-recovery updates the
 * MDS first, then pushes to the servers; a client refreshing in between
 * sees the new epoch first). It is asked again every
 * DC_SERVER_BEHIND_POLL_MS for up to one request timeout before it counts
 * as down. */
#define DC_SERVER_BEHIND_POLL_MS 20u

typedef struct dc_pending {
    Depfs__Extent *ext_ptrs[DC_REQ_MAX_EXTENTS];
    Depfs__IoRequest msg;
    Depfs__DataUnits data_units; /* READ with data_only: msg.data_units */
    uint32_t *block_crcs;     /* WRITE: the CRC of each piece (block_crc.h), made once */
    size_t n_block_crcs;
    uint32_t crc_block;       /* WRITE: the block size they are cut at */
    uint32_t bulk_crc;        /* WRITE: the frame's bulk CRC, made with them */
    rpc_call *call;
    bool retry;
    uint64_t stale_epoch;     /* client behind: the epoch the server knows; 0 = not */
    bool server_behind;       /* the server knows an older epoch than we sent */
} dc_pending;

/* The lock/write path carries the client's cluster epoch. */
static bool dc_epoch_guarded(const dc_req *r)
{
    switch (r->op) {
    case DEPFS__IO_OP__IO_READ:
        if (r->ctl != NULL)
            return r->ctl->lock != NULL && !(r->ctl->has_ignore_locks && r->ctl->ignore_locks);
        return r->has_lock && !r->ignore_locks;
    case DEPFS__IO_OP__IO_LOCK:
    case DEPFS__IO_OP__IO_WRITE:
    case DEPFS__IO_OP__IO_TRUNCATE:
        return true;
    default:
        return false;
    }
}

/* A WRITE's block CRCs and bulk CRC in one pass over its bytes (kept for
 * resends). -ENOMEM. */
static int dc_block_crcs(const dc_req *r, dc_pending *p)
{
    if (p->block_crcs != NULL)
        return 0;
    uint32_t b = block_crc_size_for(r->su);
    size_t n = 0;
    for (size_t i = 0; i < r->n_ext; i++)
        n += block_crc_pieces(r->ext[i].offset, r->ext[i].length, b);
    p->block_crcs = malloc((n ? n : 1) * sizeof *p->block_crcs);
    if (p->block_crcs == NULL)
        return -ENOMEM;
    block_crc_cursor cur = {.iov = r->iov, .n_iov = r->n_iov};
    uint32_t crc = 0, *out = p->block_crcs;
    for (size_t i = 0; i < r->n_ext; i++) {
        crc = block_crc_extent(b, r->ext[i].offset, r->ext[i].length, &cur, out, crc);
        out += block_crc_pieces(r->ext[i].offset, r->ext[i].length, b);
    }
    p->n_block_crcs = n;
    p->crc_block = b;
    p->bulk_crc = crc;
    return 0;
}

static void dc_build_msg(const dc_req *r, uint64_t ino, uint64_t epoch, dc_pending *p)
{
    Depfs__IoRequest *m = &p->msg;
    if (r->ctl != NULL) {
        *m = *r->ctl; /* shallow: the caller's arrays outlive the call */
        if (dc_epoch_guarded(r) && !m->has_cluster_epoch) {
            m->has_cluster_epoch = true;
            m->cluster_epoch = epoch;
        }
        return;
    }
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
    if (r->op == DEPFS__IO_OP__IO_WRITE || r->op == DEPFS__IO_OP__IO_DIRTY) {
        m->has_unlock = r->unlock;
        m->unlock = r->unlock;
        m->has_sync = r->sync;
        m->sync = r->sync;
    }
    if (r->op == DEPFS__IO_OP__IO_WRITE) {
        m->has_stripe_unit = r->su != 0;
        m->stripe_unit = r->su;
        m->n_down_servers = r->n_down;
        m->down_servers = r->n_down ? (uint32_t *)r->down : NULL;
        if (r->bytes > 0) { /* dc_prepare made them */
            m->has_crc_block = true;
            m->crc_block = p->crc_block;
            m->n_block_crcs = p->n_block_crcs;
            m->block_crcs = p->block_crcs;
        }
    }
    if (r->ignore_locks) {
        m->has_ignore_locks = true;
        m->ignore_locks = true;
    }
    if (r->unverified) {
        assert(r->op == DEPFS__IO_OP__IO_READ && r->ignore_locks);
        m->has_unverified = true;
        m->unverified = true;
    }
    if (r->background) {
        m->has_background = true;
        m->background = true;
    }
    if (r->data_only) {
        assert(r->op == DEPFS__IO_OP__IO_READ && r->su != 0);
        depfs__data_units__init(&p->data_units);
        p->data_units.n = r->n;
        p->data_units.k = r->k;
        p->data_units.position = r->pos;
        m->data_units = &p->data_units;
        m->has_stripe_unit = true;
        m->stripe_unit = r->su;
    }
    if (r->has_local_size) {
        m->has_local_size = true;
        m->local_size = r->local_size;
    }
    if (dc_epoch_guarded(r)) {
        m->has_cluster_epoch = true;
        m->cluster_epoch = epoch;
    }
}

/* A WRITE planned while a server it lists as down was down, which is no
 * longer down: the picture it was planned on is stale. */
static bool dc_plan_stale(depfs_t *fs, const dc_req *r)
{
    if (r->op != DEPFS__IO_OP__IO_WRITE)
        return false;
    for (unsigned i = 0; i < r->n_down; i++)
        if (!dc_server_is_down_write(fs, r->down[i]))
            return true;
    return false;
}

/* What a request refused for a stale epoch/plan reports to its caller. */
static int dc_stale_result(const dc_req *r)
{
    return r->op == DEPFS__IO_OP__IO_WRITE && r->has_lock && !r->ignore_locks ? DC_ERR_STALE_PLAN
                                                                                : -EAGAIN;
}

/* Start one request; 0, a connection-class error (retry), or another error. */
static int dc_start_one(depfs_t *fs, dc_req *r, dc_pending *p)
{
    rpc_conn *c = r->any_state ? dc_server_conn_any(fs, r->server_id)
                               : dc_server_conn(fs, r->server_id, r->op == DEPFS__IO_OP__IO_READ);
    if (c == NULL)
        return DC_ERR_DOWN;
    bool is_write = r->op == DEPFS__IO_OP__IO_WRITE;
    bool is_read = r->op == DEPFS__IO_OP__IO_READ;
    if (is_write && p->msg.has_crc_block)
        return rpc_call_start_msg_crc(c, r->op, &p->msg.base, r->iov, r->n_iov, p->bulk_crc,
                                      NULL, 0, &p->call);
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

static bool dc_state_refuses_reads(uint32_t state)
{
    return state == DEPFS__SERVER_STATE__SERVER_REBUILDING ||
           state == DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING;
}

/* The one place replies are classified: errno, epochs, server states. */
static void dc_classify(depfs_t *fs, dc_req *r, dc_pending *p, const Depfs__IoReply *rep)
{
    r->result = rep->err > 0 ? -rep->err : (rep->err < 0 ? rep->err : 0);
    if (r->result == -ESTALE) {
        uint64_t sent = p->msg.has_cluster_epoch ? p->msg.cluster_epoch : 0;
        uint64_t known = rep->has_cluster_epoch ? rep->cluster_epoch : sent + 1;
        if (known > sent) {
            p->stale_epoch = known; /* we are behind: refresh and resend */
        } else {
            p->server_behind = true; /* dc_io_run waits for the push, then marks it down */
        }
    } else if (r->result == -EIO && r->op == DEPFS__IO_OP__IO_READ && rep->has_state &&
               dc_state_refuses_reads(rep->state)) {
        dc_server_note_state(fs, r->server_id, (int)rep->state);
        r->result = DC_ERR_DOWN; /* decode around it; not marked failed */
    } else if (r->op == DEPFS__IO_OP__IO_READ && dc_unit_damaged(r->result)) {
        /* the readers decode around it like around a failed server */
        log_warn("libdepfs: I/O server %u: %s reading inode %llu (%s): reading around it",
                 r->server_id, strerror(-r->result), (unsigned long long)p->msg.file_id,
                 rep->message ? rep->message : "");
    }
}

/* The positions of r's layout a granted lock's reply calls untrusted. */
static uint32_t dc_untrusted_positions(const dc_req *r, const Depfs__IoReply *rep)
{
    uint32_t m = 0;
    if (r->result != 0 || !r->has_lock || r->layout_servers == NULL)
        return 0;
    for (size_t i = 0; i < rep->n_untrusted_servers; i++)
        for (unsigned p = 0; p < r->n; p++)
            if (r->layout_servers[p] == rep->untrusted_servers[i])
                m |= 1u << p;
    return m;
}

uint32_t dc_reqs_untrusted(const dc_req *reqs, unsigned n)
{
    uint32_t m = 0;
    for (unsigned i = 0; i < n; i++)
        if (reqs[i].active)
            m |= reqs[i].untrusted;
    return m;
}

/* Collect a finished call's outcome into r->result. */
static void dc_finish_one(depfs_t *fs, dc_req *r, dc_pending *p)
{
    Depfs__IoReply *rep = NULL;
    int rc = rpc_call_unpack(p->call, &depfs__io_reply__descriptor, (ProtobufCMessage **)&rep);
    if (rc < 0) {
        r->result = -EPROTO;
        return;
    }
    dc_classify(fs, r, p, rep);
    r->untrusted = dc_untrusted_positions(r, rep);
    if (rep->has_client_io_idle_ms)
        r->client_io_idle_ms = rep->client_io_idle_ms;
    if (r->result != 0 && r->result != -EAGAIN)
        log_debug("ioserver %u op %u: %s (%s)", r->server_id, r->op, strerror(-r->result),
                  rep->message ? rep->message : "");
    r->reply_bulk = rpc_call_reply_bulk_len(p->call);
    if (r->result == 0 && r->op == DEPFS__IO_OP__IO_READ && r->reply_bulk < r->bytes)
        dc_zero_tail(r, r->reply_bulk);
    if (r->keep_reply) {
        dc_req_free_reply(r); /* an earlier attempt's */
        r->reply = rep;
        return;
    }
    protobuf_c_message_free_unpacked(&rep->base, NULL);
}

static unsigned dc_timeout_ms(const depfs_t *fs)
{
    return fs->cfg.request_timeout_ms ? fs->cfg.request_timeout_ms : DC_DEFAULT_TIMEOUT_MS;
}

/* The connections the requests flagged in `todo` need and lack, made at
 * the same time before any is sent (a new client's first batch). */
static void dc_connect_ahead(depfs_t *fs, const dc_req *reqs, const bool *todo, unsigned nreq)
{
    dc_conn_want want[DC_IO_MAX_REQS];
    unsigned n = 0;
    for (unsigned i = 0; i < nreq; i++)
        if (todo[i])
            want[n++] = (dc_conn_want){.id = reqs[i].server_id,
                                       .any_state = reqs[i].any_state,
                                       .reading = reqs[i].op == DEPFS__IO_OP__IO_READ};
    dc_servers_connect(fs, want, n);
}

/* One attempt over the requests flagged in `todo`; marks p->retry for the
 * ones that need another try. */
static void dc_attempt(depfs_t *fs, dc_req *reqs, dc_pending *pend, const bool *todo,
                       unsigned nreq)
{
    dc_connect_ahead(fs, reqs, todo, nreq);
    for (unsigned i = 0; i < nreq; i++) {
        if (!todo[i])
            continue;
        pend[i].retry = false;
        pend[i].call = NULL;
        pend[i].stale_epoch = 0;
        pend[i].server_behind = false;
        int rc = dc_start_one(fs, &reqs[i], &pend[i]);
        if (rc == DC_ERR_DOWN) {
            reqs[i].result = DC_ERR_DOWN;
        } else if (rc < 0) {
            reqs[i].result = rc;
            pend[i].retry = rpc_err_is_transport(rc) || rpc_err_is_timeout(rc);
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
            dc_finish_one(fs, &reqs[i], &pend[i]);
        } else {
            reqs[i].result = rc;
            /* a server silent for a request timeout is retried like a lost one */
            pend[i].retry = rpc_err_is_transport(rc) || rpc_err_is_timeout(rc);
        }
        rpc_call_free(pend[i].call);
        pend[i].call = NULL;
    }
}

/* Send the requests flagged in `sent`: one attempt, one resend of what
 * timed out or lost its connection, then mark those servers failed. */
static void dc_send(depfs_t *fs, dc_req *reqs, dc_pending *pend, const bool *sent, unsigned nreq)
{
    bool todo[DC_IO_MAX_REQS] = {0};
    dc_attempt(fs, reqs, pend, sent, nreq);
    bool again = false;
    for (unsigned i = 0; i < nreq; i++) {
        todo[i] = sent[i] && pend[i].retry;
        again = again || todo[i];
    }
    if (!again)
        return;
    dc_attempt(fs, reqs, pend, todo, nreq);
    for (unsigned i = 0; i < nreq; i++) {
        if (todo[i] && pend[i].retry) {
            log_warn("ioserver %u: %s twice, marking it failed", reqs[i].server_id,
                     strerror(-reqs[i].result));
            dc_server_mark_failed(fs, reqs[i].server_id, reqs[i].result);
            reqs[i].result = DC_ERR_DOWN;
        }
    }
}

/* Ready one request for sending with `epoch`; false when it is not sent
 * (its result says why). */
static bool dc_prepare(depfs_t *fs, uint64_t ino, uint64_t epoch, dc_req *r, dc_pending *p)
{
    r->result = 0;
    r->reply_bulk = 0;
    r->untrusted = 0;
    p->stale_epoch = 0;
    p->server_behind = false;
    bool reading = r->op == DEPFS__IO_OP__IO_READ;
    if (!r->any_state && (reading ? dc_server_is_down(fs, r->server_id)
                                  : dc_server_is_down_write(fs, r->server_id))) {
        r->result = DC_ERR_DOWN;
        return false;
    }
    if (!r->keep_down && dc_plan_stale(fs, r)) {
        r->result = dc_stale_result(r);
        return false;
    }
    if (r->op == DEPFS__IO_OP__IO_WRITE && r->ctl == NULL && r->bytes > 0 &&
        dc_block_crcs(r, p) < 0) {
        r->result = -ENOMEM;
        return false;
    }
    dc_build_msg(r, ino, epoch, p);
    return true;
}

/* After a round, keep in `sent` the requests refused for an epoch mismatch
 * and get ready to resend them: refresh from the MDS when we are behind
 * (at most DC_EPOCH_RETRIES_MAX times), wait a little when a server is
 * (until *behind_deadline_ms, then it counts as down). False: nothing to
 * resend. */
static bool dc_resend_plan(depfs_t *fs, dc_req *reqs, dc_pending *pend, bool *sent,
                           unsigned nreq, unsigned *refreshes, uint64_t *behind_deadline_ms)
{
    uint64_t want = 0;
    bool behind = false;
    uint64_t now_ms = dc_now_ms();
    if (*behind_deadline_ms == 0)
        *behind_deadline_ms = now_ms + dc_timeout_ms(fs);
    for (unsigned i = 0; i < nreq; i++) {
        dc_pending *p = &pend[i];
        sent[i] = sent[i] && reqs[i].result == -ESTALE && (p->stale_epoch != 0 || p->server_behind);
        if (!sent[i])
            continue;
        if (p->stale_epoch != 0 && *refreshes >= DC_EPOCH_RETRIES_MAX) {
            reqs[i].result = dc_stale_result(&reqs[i]);
            sent[i] = false;
        } else if (p->server_behind && now_ms >= *behind_deadline_ms) {
            log_warn("ioserver %u is behind cluster epoch %llu: treating it as down",
                     reqs[i].server_id, (unsigned long long)p->msg.cluster_epoch);
            dc_server_mark_failed(fs, reqs[i].server_id, -ESTALE);
            reqs[i].result = DC_ERR_DOWN;
            sent[i] = false;
        } else if (p->stale_epoch > want) {
            want = p->stale_epoch;
        } else if (p->server_behind) {
            behind = true;
        }
    }
    if (want != 0) {
        (*refreshes)++;
        (void)dc_cluster_refresh_to(fs, want);
    } else if (behind) {
        struct timespec ts = {.tv_nsec = (long)DC_SERVER_BEHIND_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return want != 0 || behind;
}

/* The rights the prepared requests need at their servers (io_caps.h). */
static uint32_t dc_caps_need(const dc_pending *pend, const dc_req *reqs, const bool *sent,
                             unsigned nreq)
{
    uint32_t need = 0;
    for (unsigned i = 0; i < nreq; i++)
        if (sent[i])
            need |= io_caps_needed(reqs[i].op, &pend[i].msg);
    return need;
}

/* Show cap (none when cap->ino is 0) with every prepared request on its
 * file; it outlives the requests (dc_io_run's own copy). */
static void dc_cap_attach(const dc_cap *cap, dc_pending *pend, const bool *sent, unsigned nreq)
{
    if (cap->ino == 0)
        return;
    for (unsigned i = 0; i < nreq; i++) {
        if (!sent[i] || pend[i].msg.file_id != cap->ino)
            continue;
        pend[i].msg.has_capability = true;
        pend[i].msg.capability = (ProtobufCBinaryData){ AUTH_CAP_BYTES, (uint8_t *)cap->bytes };
    }
}

/* Get the capability the prepared requests need and show it with them;
 * without one (the MDS refused) none is sent, each failing with why. */
static void dc_cap_for(depfs_t *fs, uint64_t ino, dc_req *reqs, dc_pending *pend, bool *sent,
                       unsigned nreq, dc_cap *cap)
{
    int rc = dc_cap_get(fs, ino, dc_caps_need(pend, reqs, sent, nreq), cap);
    if (rc < 0) {
        for (unsigned i = 0; i < nreq; i++) {
            if (sent[i])
                reqs[i].result = rc;
            sent[i] = false;
        }
        return;
    }
    dc_cap_attach(cap, pend, sent, nreq);
}

/* Ready every active request (flagged in sent) and get the capability they
 * need; NULL (every result -ENOMEM) when out of memory. */
static dc_pending *dc_io_begin(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq,
                               bool *sent, dc_cap *cap)
{
    assert(nreq <= DC_IO_MAX_REQS);
    dc_pending *pend = calloc(nreq ? nreq : 1, sizeof *pend);
    if (pend == NULL) {
        for (unsigned i = 0; i < nreq; i++)
            reqs[i].result = -ENOMEM;
        return NULL;
    }
    /* the epoch first, then the states it is checked against (they are
     * stored in the other order) */
    uint64_t epoch = atomic_load(&fs->cluster_epoch);
    for (unsigned i = 0; i < nreq; i++) {
        if (!reqs[i].active)
            continue;
        dc_req_check(&reqs[i]);
        sent[i] = dc_prepare(fs, ino, epoch, &reqs[i], &pend[i]);
    }
    dc_cap_for(fs, ino, reqs, pend, sent, nreq, cap);
    return pend;
}

static void dc_io_end(dc_pending *pend, unsigned nreq)
{
    for (unsigned i = 0; i < nreq; i++)
        free(pend[i].block_crcs);
    free(pend);
}

void dc_io_run(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq)
{
    dc_cap cap;
    bool sent[DC_IO_MAX_REQS] = {0};
    dc_pending *pend = dc_io_begin(fs, ino, reqs, nreq, sent, &cap);
    if (pend == NULL)
        return;
    dc_send(fs, reqs, pend, sent, nreq);
    unsigned refreshes = 0;
    uint64_t behind_deadline_ms = 0;
    while (dc_resend_plan(fs, reqs, pend, sent, nreq, &refreshes, &behind_deadline_ms)) {
        uint64_t epoch = atomic_load(&fs->cluster_epoch);
        for (unsigned i = 0; i < nreq; i++)
            if (sent[i])
                sent[i] = dc_prepare(fs, ino, epoch, &reqs[i], &pend[i]);
        dc_cap_attach(&cap, pend, sent, nreq);
        dc_send(fs, reqs, pend, sent, nreq);
    }
    dc_io_end(pend, nreq);
}

static void dc_set_lock_wait(dc_req *r, uint32_t wait_ms)
{
    if (!r->active || !r->has_lock)
        return;
    r->lock.has_wait_ms = wait_ms > 0;
    r->lock.wait_ms = wait_ms;
}

/* The file's gate: the layout position of its lowest server id not in
 * `down` (a mask of positions); -1 when all are. */
static int dc_lock_gate_pos(const layout *lay, uint32_t down)
{
    int gate = -1;
    for (unsigned p = 0; p < lay->n; p++)
        if (!((down >> p) & 1u) && (gate < 0 || lay->servers[p] < lay->servers[gate]))
            gate = (int)p;
    return gate;
}

void dc_io_run_gated(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t down, dc_req *reqs)
{
    const dc_req *any = NULL;
    for (unsigned p = 0; p < lay->n && any == NULL; p++)
        if (reqs[p].active && reqs[p].has_lock)
            any = &reqs[p];
    int gate = dc_lock_gate_pos(lay, down);
    if (any == NULL || gate < 0) {
        dc_io_run(fs, ino, reqs, lay->n);
        return;
    }
    if (!reqs[gate].active) { /* locked to read where the round does nothing else */
        Depfs__LockSpec l = any->lock;
        uint32_t attempt = any->lock_attempt;
        dc_req_init(&reqs[gate], lay, (unsigned)gate, DEPFS__IO_OP__IO_LOCK);
        dc_req_set_lock(&reqs[gate], l.first_stripe, l.stripe_count, l.owner_client,
                        l.owner_op, DC_LOCK_READ);
        reqs[gate].lock_attempt = attempt;
    }
    uint32_t gate_ms = dc_timeout_ms(fs) / DC_LOCK_GATE_WAIT_DIV;
    if (gate_ms > WIRE_LOCK_WAIT_MAX_MS)
        gate_ms = WIRE_LOCK_WAIT_MAX_MS;
    dc_set_lock_wait(&reqs[gate], gate_ms);
    dc_io_run(fs, ino, &reqs[gate], 1);
    dc_set_lock_wait(&reqs[gate], 0);
    if (reqs[gate].result != 0) {
        for (unsigned p = 0; p < lay->n; p++)
            if (p != (unsigned)gate && reqs[p].active)
                reqs[p].result = -EAGAIN;
        return;
    }
    for (unsigned p = 0; p < lay->n; p++)
        if (p != (unsigned)gate)
            dc_set_lock_wait(&reqs[p], gate_ms / DC_LOCK_REST_WAIT_DIV);
    reqs[gate].active = false; /* granted: the others alone */
    dc_io_run(fs, ino, reqs, lay->n);
    reqs[gate].active = true;
    reqs[gate].result = 0; /* whatever a failed start wrote over it */
    for (unsigned p = 0; p < lay->n; p++)
        dc_set_lock_wait(&reqs[p], 0);
}

/* Send every active request once and wait for no reply (a late one is
 * drained and dropped by the rpc layer): for requests whose outcome the
 * caller does not need. Each goes on the connection its server's earlier
 * requests from this client went on, so the server acts on it before any
 * request this client sends there later. Results: 0 once sent, else why
 * not. */
static void dc_io_post(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq)
{
    dc_cap cap;
    bool sent[DC_IO_MAX_REQS] = {0};
    dc_pending *pend = dc_io_begin(fs, ino, reqs, nreq, sent, &cap);
    if (pend == NULL)
        return;
    for (unsigned i = 0; i < nreq; i++) {
        if (!sent[i])
            continue;
        reqs[i].result = dc_start_one(fs, &reqs[i], &pend[i]);
        rpc_call_free(pend[i].call);
    }
    dc_io_end(pend, nreq);
}

void dc_io_unlock_granted(depfs_t *fs, uint64_t ino, const dc_req *reqs, unsigned nreq)
{
    assert(nreq <= DC_IO_MAX_REQS);
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
        un[i].any_state = r->any_state;
        un[i].has_lock = true;
        un[i].lock = r->lock;
    }
    dc_io_post(fs, ino, un, nreq);
    free(un);
}

bool dc_unit_damaged(int result)
{
    return result == -EBADMSG || result == -ENODATA || result == -EIO;
}

bool dc_write_not_applied(int result)
{
    /* EINVAL, EFBIG and ERANGE: refused where the request is decoded
     * (ioserver/req_check.h), EACCES for its capability (ioserver/authz.h),
     * before anything is stored */
    return result == -EPERM || result == -EACCES || result == -ESTALE || result == -EINVAL || result == -EAGAIN ||
           result == -EFBIG || result == -ERANGE;
}

int dc_record_down(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t *down)
{
    dc_req *reqs = calloc(lay->n, sizeof *reqs);
    if (reqs == NULL)
        return -ENOMEM;
    for (unsigned p = 0; p < lay->n; p++) {
        if ((*down >> p) & 1u)
            continue;
        dc_req_init(&reqs[p], lay, p, DEPFS__IO_OP__IO_WRITE);
        reqs[p].keep_down = true; /* records of a miss, whatever they are now */
        for (unsigned q = 0; q < lay->n; q++)
            if ((*down >> q) & 1u)
                reqs[p].down[reqs[p].n_down++] = lay->servers[q];
    }
    dc_io_run(fs, ino, reqs, lay->n);
    int rc = 0;
    unsigned stored = 0;
    for (unsigned p = 0; p < lay->n; p++) {
        if (!reqs[p].active)
            continue;
        if (reqs[p].result == DC_ERR_DOWN) {
            *down |= 1u << p;
        } else if (reqs[p].result < 0 && rc == 0) {
            rc = reqs[p].result;
            dc_set_error("inode %llu: server %u cannot record the servers that missed a change: "
                         "%s", (unsigned long long)ino, lay->servers[p], strerror(-rc));
        } else if (reqs[p].result == 0) {
            stored++;
        }
    }
    free(reqs);
    if (rc == 0 && stored == 0) {
        dc_set_error("inode %llu: no surviving server recorded the servers that missed a change",
                     (unsigned long long)ino);
        rc = -EIO;
    }
    return rc;
}

/* ---------------------------------------------------- control requests */

void dc_ctl_init(dc_ctl *c, uint32_t server_id, uint16_t op, uint64_t file_id)
{
    memset(c, 0, sizeof *c);
    c->server_id = server_id;
    c->op = op;
    depfs__io_request__init(&c->req);
    c->req.file_id = file_id;
}

void dc_ctl_run(depfs_t *fs, dc_ctl *v, unsigned n)
{
    assert(n <= DC_IO_MAX_REQS);
    if (n == 0)
        return;
    dc_req *reqs = calloc(n, sizeof *reqs);
    if (reqs == NULL) {
        for (unsigned i = 0; i < n; i++)
            v[i].rc = -ENOMEM;
        return;
    }
    for (unsigned i = 0; i < n; i++)
        dc_req_init_ctl(&reqs[i], v[i].server_id, v[i].op, &v[i].req);
    dc_io_run(fs, v[0].req.file_id, reqs, n);
    for (unsigned i = 0; i < n; i++) {
        v[i].rc = reqs[i].result;
        v[i].rep = reqs[i].result == DC_ERR_DOWN ? NULL : reqs[i].reply;
        if (v[i].rep == NULL)
            dc_req_free_reply(&reqs[i]);
        else if (v[i].rc == 0 && v[i].rep->err != 0)
            v[i].rc = v[i].rep->err > 0 ? -v[i].rep->err : v[i].rep->err;
    }
    free(reqs);
}

void dc_ctl_free(dc_ctl *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rep)
            depfs__io_reply__free_unpacked(v[i].rep, NULL);
        v[i].rep = NULL;
    }
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

static uint32_t dc_marked_only_mask(depfs_t *fs, const layout *lay, uint32_t down)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (((down >> p) & 1u) && dc_server_marked_only(fs, lay->servers[p]))
            m |= 1u << p;
    return m;
}

static uint32_t dc_down_mask_write(depfs_t *fs, const layout *lay)
{
    uint32_t m = 0;
    for (unsigned p = 0; p < lay->n; p++)
        if (dc_server_is_down_write(fs, lay->servers[p]))
            m |= 1u << p;
    return m;
}

uint32_t dc_write_down_mask(depfs_t *fs, const layout *lay, uint32_t *around_up)
{
    uint32_t down = dc_down_mask_write(fs, lay);
    uint32_t undecided = dc_marked_only_mask(fs, lay, down);
    *around_up = 0;
    if (undecided == 0)
        return down;
    uint64_t deadline_ms = dc_now_ms() + DC_WRITE_AROUND_WAIT_MS;
    for (;;) {
        (void)dc_cluster_refresh(fs); /* states as the MDS has them */
        dc_status_recheck_now(fs);    /* and marks it has lifted */
        down = dc_down_mask_write(fs, lay);
        undecided = dc_marked_only_mask(fs, lay, down);
        if (undecided == 0)
            return down;
        if (dc_now_ms() >= deadline_ms) {
            log_warn("libdepfs: I/O servers (positions %#x) still fail here while the cluster "
                     "calls them up after %u ms: writing around them", undecided,
                     DC_WRITE_AROUND_WAIT_MS);
            *around_up = undecided;
            return down;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)DC_WRITE_AROUND_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int dc_dirty_probe(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t *recorded,
                   uint32_t *silent, uint32_t *refusing)
{
    dc_ctl v[LAYOUT_MAX_N];
    uint32_t ids[LAYOUT_MAX_N];
    unsigned n = 0;
    for (unsigned p = 0; p < lay->n; p++)
        ids[p] = lay->servers[p];
    for (unsigned p = 0; p < lay->n; p++) {
        dc_server *s = dc_server_by_id(fs, lay->servers[p]);
        if (s == NULL)
            continue;
        pthread_mutex_lock(&s->lock);
        bool dead = s->state == DEPFS__SERVER_STATE__SERVER_DOWN;
        pthread_mutex_unlock(&s->lock);
        if (dead)
            continue;
        dc_ctl_init(&v[n], lay->servers[p], DEPFS__IO_OP__IO_DIRTY, ino);
        v[n].req.has_dirty_action = true;
        v[n].req.dirty_action = DEPFS__DIRTY_ACTION__DIRTY_PROBE;
        v[n].req.n_down_servers = lay->n;
        v[n].req.down_servers = ids;
        n++;
    }
    dc_ctl_run(fs, v, n);
    int rc = 0;
    *recorded = 0;
    if (silent)
        *silent = 0;
    if (refusing)
        *refusing = 0;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].rc == DC_ERR_DOWN) {
            for (unsigned p = 0; silent && p < lay->n; p++)
                if (lay->servers[p] == v[i].server_id)
                    *silent |= 1u << p;
            continue;
        }
        for (unsigned p = 0; refusing && p < lay->n; p++)
            if (lay->servers[p] == v[i].server_id && v[i].rep && v[i].rep->has_state &&
                dc_state_refuses_reads(v[i].rep->state))
                *refusing |= 1u << p;
        if (v[i].rc < 0) {
            dc_set_error("dirty records of inode %llu on server %u: %s", (unsigned long long)ino,
                         v[i].server_id, strerror(-v[i].rc));
            if (rc == 0)
                rc = v[i].rc;
            continue;
        }
        for (size_t j = 0; j < v[i].rep->n_dirty_files; j++) {
            for (unsigned p = 0; p < lay->n; p++)
                if (lay->servers[p] == (uint32_t)v[i].rep->dirty_files[j])
                    *recorded |= 1u << p;
        }
    }
    dc_ctl_free(v, n);
    return rc;
}

int dc_wait_missed_settled(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t missed)
{
    uint64_t deadline_ms = dc_now_ms() + DC_WRITE_AROUND_WAIT_MS;
    for (;;) {
        (void)dc_cluster_refresh(fs); /* states as the MDS has them now */
        uint32_t up = 0, recorded = 0, refusing = 0;
        for (unsigned p = 0; p < lay->n; p++) {
            dc_server *s = ((missed >> p) & 1u) ? dc_server_by_id(fs, lay->servers[p]) : NULL;
            if (s == NULL)
                continue;
            pthread_mutex_lock(&s->lock);
            if (s->state == DEPFS__SERVER_STATE__SERVER_UP)
                up |= 1u << p;
            pthread_mutex_unlock(&s->lock);
        }
        int rc = up ? dc_dirty_probe(fs, lay, ino, &recorded, NULL, &refusing) : 0;
        /* out of service by its own word (a stalled server demoted itself)
         * is as good as by the MDS's: it serves no reads until a rejoin */
        uint32_t pending = (rc < 0 ? up : up & recorded) & ~refusing;
        if (pending == 0)
            return 0;
        if (dc_now_ms() >= deadline_ms) {
            dc_set_error("write of inode %llu: servers at positions %#x, which the write went "
                         "around, still serve old units of its stripes after %u ms",
                         (unsigned long long)ino, pending, DC_WRITE_AROUND_WAIT_MS);
            return -EIO;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)DC_WRITE_AROUND_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
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
