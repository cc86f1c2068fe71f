/* mds_handlers.h - the MDS request handlers for unit tests: a context on a
 * tms_store (mds_store.h) with the cluster table and a holds table, and
 * one request through mds_process as the daemon calls it (auth off).
 * Each call fails the running Check test on error.
 *
 *   tmh_up(&h, &store, 2, 0);   handlers over store.ns, 2 servers, no floor
 *   err = tmh_req(&h, DEPFS__MDS_OP__MDS_OPEN, &q, NULL);
 *   tmh_down(&h); */
#ifndef DEPFS_TEST_MDS_HANDLERS_H
#define DEPFS_TEST_MDS_HANDLERS_H
#include <stdint.h>
#include "depfs.pb-c.h"
#include "mds/cluster.h"
#include "mds/handlers.h"
#include "tests/lib/mds_store.h"

typedef struct tmh {
    mds_ctx ctx;
    mds_cluster *cluster;
    tms_store *store;
} tmh;

/* n_servers I/O servers with ids 10, 11, ...; floor_s: the holds' start
 * floor (holds.h; 0: none). The holds table is set on the namespace too. */
void tmh_up(tmh *h, tms_store *s, unsigned n_servers, uint64_t floor_s);
/* The same with the daemon's holds table (mds/holds_journal.h): the
 * previous run's journalled holds loaded, the floor it decides, the
 * journal on, as a start in kernel boot boot_id. */
void tmh_up_journal(tmh *h, tms_store *s, unsigned n_servers, const char *boot_id);
void tmh_down(tmh *h);
/* The reply's err (0 or a positive errno); the reply in *out when asked
 * (free with mds_result_free). */
int tmh_req(tmh *h, Depfs__MdsOp op, Depfs__MdsRequest *q, mds_result **out);
/* The same from peer who (auth.h; NULL: auth off, as tmh_req). */
int tmh_req_as(tmh *h, const auth_identity *who, Depfs__MdsOp op, Depfs__MdsRequest *q,
               mds_result **out);

#endif
