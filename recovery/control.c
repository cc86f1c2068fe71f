/* control.c - the calls depfs-recovery's main thread makes: to the MDS
 * (cluster view, state changes, progress reports) and IO_SET_STATE to the
 * I/O servers (one server's state, or a new epoch pushed to all at once). */
#include "rec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "depfs.pb-c.h"
#include "log.h"

static int mds_call(rec_ctx *c, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                    Depfs__MdsReply **out)
{
    *out = NULL;
    for (unsigned attempt = 0; attempt < REC_HEARTBEAT_TRIES && !c->stopping; attempt++) {
        rpc_conn *conn = rec_conn(c, &c->mds, c->cfg->mds_address);
        if (!conn)
            continue;
        int rv = rpc_call_msg(conn, (uint16_t)op, &req->base, NULL, 0, NULL, 0,
                              (int)c->cfg->request_timeout_ms, &depfs__mds_reply__descriptor,
                              (ProtobufCMessage **)out, NULL);
        if (rv == 0) {
            rv = (*out)->err ? -(*out)->err : 0;
            if (rv) {
                log_warn("MDS refused %s: %s", op == DEPFS__MDS_OP__MDS_CLUSTER ? "CLUSTER"
                                               : "SET_SERVER_STATE",
                         (*out)->message ? (*out)->message : strerror(-rv));
                depfs__mds_reply__free_unpacked(*out, NULL);
                *out = NULL;
            }
            return rv;
        }
        rpc_conn_close(c->mds);
        c->mds = NULL;
    }
    return -ETIMEDOUT;
}

int rec_mds_cluster(rec_ctx *c, rec_mds_server *out, unsigned max, unsigned *n, uint64_t *epoch)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep;
    int rv = mds_call(c, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rv)
        return rv;
    *n = 0;
    for (size_t i = 0; i < rep->n_servers && *n < max; i++)
        out[(*n)++] = (rec_mds_server){ .id = rep->servers[i]->id,
                                        .state = rep->servers[i]->state };
    *epoch = rep->has_cluster_epoch ? rep->cluster_epoch : 0;
    depfs__mds_reply__free_unpacked(rep, NULL);
    return 0;
}

int rec_mds_set_state(rec_ctx *c, uint32_t id, uint32_t state, uint64_t *epoch)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep;
    req.has_server_id = req.has_server_state = true;
    req.server_id = id;
    req.server_state = state;
    int rv = mds_call(c, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req, &rep);
    if (rv)
        return rv;
    *epoch = rep->has_cluster_epoch ? rep->cluster_epoch : 0;
    if (*epoch > c->mds_epoch)
        c->mds_epoch = *epoch;
    depfs__mds_reply__free_unpacked(rep, NULL);
    return 0;
}

int rec_mds_progress(rec_ctx *c, uint32_t id, const uint64_t *done_bytes,
                     uint64_t degraded_files)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep;
    req.has_server_id = true;
    req.server_id = id;
    req.has_rebuild_done_bytes = done_bytes != NULL;
    req.rebuild_done_bytes = done_bytes ? *done_bytes : 0;
    req.has_degraded_files = true;
    req.degraded_files = degraded_files;
    int rv = mds_call(c, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req, &rep);
    if (rv == 0)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rv;
}

static void set_state_req(Depfs__IoRequest *req, int state, uint64_t epoch)
{
    depfs__io_request__init(req);
    if (state >= 0) {
        req->has_server_state = true;
        req->server_state = (uint32_t)state;
    }
    if (epoch) {
        req->has_cluster_epoch = true;
        req->cluster_epoch = epoch;
    }
}

/* What a server just answered is newer than its prober's last heartbeat:
 * the next decision round must not act on the older picture. */
static void note_reply(rec_ctx *c, rec_server *s, const Depfs__IoReply *rep)
{
    pthread_mutex_lock(&c->mu);
    if (rep->has_state)
        s->obs.state = rep->state;
    if (rep->has_cluster_epoch)
        s->obs.epoch = rep->cluster_epoch;
    pthread_mutex_unlock(&c->mu);
}

int rec_io_set_state(rec_ctx *c, rec_server *s, int state, uint64_t epoch)
{
    Depfs__IoRequest req;
    set_state_req(&req, state, epoch);
    int rv = -ETIMEDOUT;
    for (unsigned attempt = 0; attempt < REC_HEARTBEAT_TRIES && !c->stopping; attempt++) {
        rpc_conn *conn = rec_conn(c, &s->ctl, s->address);
        if (!conn) {
            rv = -ECONNREFUSED;
            continue;
        }
        Depfs__IoReply *rep = NULL;
        rv = rpc_call_msg(conn, DEPFS__IO_OP__IO_SET_STATE, &req.base, NULL, 0, NULL, 0,
                          (int)c->cfg->request_timeout_ms, &depfs__io_reply__descriptor,
                          (ProtobufCMessage **)&rep, NULL);
        if (rv == 0) {
            rv = rep->err ? -rep->err : 0;
            note_reply(c, s, rep);
            depfs__io_reply__free_unpacked(rep, NULL);
            return rv;
        }
        rpc_conn_close(s->ctl);
        s->ctl = NULL;
    }
    return rv;
}

unsigned rec_push_epoch(rec_ctx *c, uint64_t epoch)
{
    Depfs__IoRequest req;
    rpc_call **calls = calloc(c->nservers ? c->nservers : 1, sizeof(*calls));
    unsigned took = 0;
    if (!calls)
        return 0;
    set_state_req(&req, -1, epoch);
    /* start every call, then wait: one slow server costs t_T once */
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        pthread_mutex_lock(&c->mu);
        bool answered = s->obs.answered;
        pthread_mutex_unlock(&c->mu);
        rpc_conn *conn = answered ? rec_conn(c, &s->ctl, s->address) : NULL;
        if (conn && rpc_call_start_msg(conn, DEPFS__IO_OP__IO_SET_STATE, &req.base, NULL, 0,
                                       NULL, 0, &calls[i]) != 0)
            calls[i] = NULL;
    }
    uint64_t deadline_ms = clock_now_ms() + c->cfg->request_timeout_ms;
    for (unsigned i = 0; i < c->nservers; i++) {
        if (!calls[i])
            continue;
        uint64_t now_ms = clock_now_ms();
        int left_ms = deadline_ms > now_ms ? (int)(deadline_ms - now_ms) : 0;
        Depfs__IoReply *rep = NULL;
        if (rpc_call_wait(calls[i], left_ms) == 0 &&
            rpc_call_unpack(calls[i], &depfs__io_reply__descriptor, (ProtobufCMessage **)&rep) == 0) {
            took += rep->err == 0;
            note_reply(c, &c->servers[i], rep);
            depfs__io_reply__free_unpacked(rep, NULL);
        } else {
            log_debug("ioserver %u did not take epoch %llu", c->servers[i].id,
                      (unsigned long long)epoch);
        }
        rpc_call_free(calls[i]);
    }
    free(calls);
    log_debug("epoch %llu pushed to %u servers", (unsigned long long)epoch, took);
    return took;
}
