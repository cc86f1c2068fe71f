/* heartbeat.c - failure detection by heartbeat (thesis 3.2.1): probes every
 * I/O server each round, keeps up/down/rebuilding, and tells the MDS. */
#include "heartbeat.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "depfs.pb-c.h"
#include "log.h"

#define REC_HEARTBEAT_TRIES 2 /* one retry: t_D <= t_HB + 2*t_T */

uint64_t rec_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *state_name(int s)
{
    switch (s) {
    case DEPFS__SERVER_STATE__SERVER_UP: return "up";
    case DEPFS__SERVER_STATE__SERVER_DOWN: return "down";
    case DEPFS__SERVER_STATE__SERVER_REBUILDING: return "rebuilding";
    default: return "?";
    }
}

static rpc_conn *ensure_conn(rec_ctx *rc, rpc_conn **slot, const char *address)
{
    if (*slot && rpc_conn_broken(*slot)) {
        rpc_conn_close(*slot);
        *slot = NULL;
    }
    if (!*slot &&
        rpc_conn_open(rc->cfg->transport, address, &rc->limits, (int)rc->cfg->connect_timeout_ms, slot) != 0)
        *slot = NULL;
    return *slot;
}

static int tell_mds(rec_ctx *rc, uint32_t id, int state)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    req.has_server_id = true;
    req.server_id = id;
    req.has_server_state = true;
    req.server_state = (uint32_t)state;
    rpc_conn *c = ensure_conn(rc, &rc->mds, rc->cfg->mds_address);
    if (!c)
        return -ECONNREFUSED;
    int rv = rpc_call_msg(c, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req.base, NULL, 0, NULL, 0,
                          (int)rc->cfg->request_timeout_ms, &depfs__mds_reply__descriptor,
                          (ProtobufCMessage **)&rep, NULL);
    if (rv == 0 && rep->err != 0)
        rv = -rep->err;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rv;
}

/* 0 and the server's own state, or a negative errno when it did not answer. */
static int probe(rec_ctx *rc, rec_server *s, int *server_state)
{
    Depfs__IoRequest req = DEPFS__IO_REQUEST__INIT;
    for (int attempt = 0; attempt < REC_HEARTBEAT_TRIES; attempt++) {
        rpc_conn *c = ensure_conn(rc, &s->conn, s->address);
        if (!c)
            continue;
        Depfs__IoReply *rep = NULL;
        int rv = rpc_call_msg(c, DEPFS__IO_OP__IO_HEARTBEAT, &req.base, NULL, 0, NULL, 0,
                              (int)rc->cfg->request_timeout_ms, &depfs__io_reply__descriptor,
                              (ProtobufCMessage **)&rep, NULL);
        if (rv == 0) {
            *server_state = rep->has_state ? (int)rep->state : DEPFS__SERVER_STATE__SERVER_UP;
            depfs__io_reply__free_unpacked(rep, NULL);
            return 0;
        }
        if (rv == -ETIMEDOUT && s->conn) { /* a stuck connection: start afresh */
            rpc_conn_close(s->conn);
            s->conn = NULL;
        }
    }
    return -ETIMEDOUT;
}

void rec_heartbeat_round(rec_ctx *rc)
{
    for (unsigned i = 0; i < rc->nservers; i++) {
        rec_server *s = &rc->servers[i];
        int server_state = DEPFS__SERVER_STATE__SERVER_DOWN;
        int want;
        if (probe(rc, s, &server_state) == 0) {
            s->misses = 0;
            s->last_ok_ms = rec_now_ms();
            want = server_state;
        } else {
            s->misses++;
            want = DEPFS__SERVER_STATE__SERVER_DOWN;
        }
        if (want == s->state)
            continue;
        if (tell_mds(rc, s->id, want) == 0) {
            log_info("ioserver %u (%s): %s -> %s", s->id, s->address, state_name(s->state), state_name(want));
            s->state = want;
        } else {
            log_warn("ioserver %u is %s but the MDS could not be told; will retry", s->id, state_name(want));
        }
    }
}

int rec_init(rec_ctx *rc, const depfs_config *cfg)
{
    memset(rc, 0, sizeof(*rc));
    rc->cfg = cfg;
    rc->limits.max_header_bytes = cfg->max_header_bytes;
    rc->limits.max_bulk_bytes = cfg->max_bulk_bytes;
    rc->nservers = cfg->n_ioservers;
    rc->servers = calloc(cfg->n_ioservers ? cfg->n_ioservers : 1, sizeof(*rc->servers));
    if (!rc->servers)
        return -ENOMEM;
    for (unsigned i = 0; i < cfg->n_ioservers; i++) {
        rc->servers[i].id = cfg->ioservers[i].id;
        rc->servers[i].address = cfg->ioservers[i].address;
        rc->servers[i].state = -1; /* unknown: the first round always reports */
    }
    return 0;
}

void rec_fini(rec_ctx *rc)
{
    for (unsigned i = 0; i < rc->nservers; i++)
        if (rc->servers[i].conn)
            rpc_conn_close(rc->servers[i].conn);
    if (rc->mds)
        rpc_conn_close(rc->mds);
    free(rc->servers);
    memset(rc, 0, sizeof(*rc));
}
