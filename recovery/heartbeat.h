/* heartbeat.h - the recovery module's view of I/O server health.
 *
 * Every heartbeat_period_ms (t_HB) each I/O server gets an IO_HEARTBEAT
 * with request_timeout_ms (t_T) to answer; one retry, so a crashed or cut
 * off server is declared down within t_D <= t_HB + 2*t_T. Changes of state
 * are pushed to the MDS (MDS_SET_SERVER_STATE), where clients and
 * `depfs status` read them. */
#ifndef DEPFS_RECOVERY_HEARTBEAT_H
#define DEPFS_RECOVERY_HEARTBEAT_H
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "rpc.h"

typedef struct rec_server {
    uint32_t id;
    const char *address;
    rpc_conn *conn;
    int state;               /* DEPFS__SERVER_STATE__*: what we last told the MDS */
    int reported_state;      /* what the server itself reports (rebuilding) */
    uint64_t last_ok_ms;     /* monotonic time of the last answer */
    unsigned misses;         /* consecutive unanswered heartbeats */
} rec_server;

typedef struct rec_ctx {
    const depfs_config *cfg;
    frame_limits limits;
    rpc_conn *mds;
    unsigned nservers;
    rec_server *servers;
} rec_ctx;

int rec_init(rec_ctx *rc, const depfs_config *cfg);
void rec_fini(rec_ctx *rc);
/* One heartbeat round over every server; pushes state changes to the MDS. */
void rec_heartbeat_round(rec_ctx *rc);
uint64_t rec_now_ms(void);

#endif
