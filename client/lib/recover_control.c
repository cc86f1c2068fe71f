/* recover_control.c - the cluster-control calls of depfs-recovery and
 * other admin tools (depfs_admin.h "cluster control"): the MDS's picture
 * of the servers, a server's state at the MDS, progress reports, and
 * IO_SET_STATE pushed to servers in parallel through the one fan-out. The
 * daemon uses these instead of a connection and retry logic of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "recover.h"
#include "log.h"

int depfs_mds_cluster(depfs_t *fs, depfs_server_state *out, unsigned max, uint64_t *epoch)
{
    if (fs == NULL || (out == NULL && max > 0) || epoch == NULL)
        return -EINVAL;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rc == 0) {
        for (size_t i = 0; i < rep->n_servers && i < max; i++)
            out[i] = (depfs_server_state){
                .id = rep->servers[i]->id,
                .state = (int)rep->servers[i]->state,
                .state_epoch = rep->servers[i]->has_state_epoch ? rep->servers[i]->state_epoch : 0 };
        *epoch = rep->has_cluster_epoch ? rep->cluster_epoch : 0;
        rc = rep->n_servers > INT32_MAX ? INT32_MAX : (int)rep->n_servers;
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_mds_set_state(depfs_t *fs, uint32_t server_id, int state, uint64_t *epoch)
{
    if (fs == NULL || state < 0 || epoch == NULL)
        return -EINVAL;
    return dc_mds_set_state(fs, server_id, state, epoch);
}

int depfs_report_degraded(depfs_t *fs, uint32_t server_id, const uint64_t *done_bytes,
                          uint64_t degraded_files)
{
    if (fs == NULL)
        return -EINVAL;
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    req.has_server_id = true;
    req.server_id = server_id;
    req.has_rebuild_done_bytes = done_bytes != NULL;
    req.rebuild_done_bytes = done_bytes ? *done_bytes : 0;
    req.has_degraded_files = true;
    req.degraded_files = degraded_files;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_SET_SERVER_STATE, &req, &rep);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int depfs_push_state(depfs_t *fs, const uint32_t *ids, unsigned n, int state, uint64_t epoch,
                     depfs_push_result *out)
{
    if (fs == NULL || n > DC_IO_MAX_REQS || (n > 0 && (ids == NULL || out == NULL)))
        return -EINVAL;
    if (n == 0)
        return 0;
    dc_ctl *v = calloc(n, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        dc_ctl_init(&v[i], ids[i], DEPFS__IO_OP__IO_SET_STATE, 0);
        if (epoch != 0) {
            v[i].req.has_cluster_epoch = true;
            v[i].req.cluster_epoch = epoch;
        }
        if (state >= 0) {
            v[i].req.has_server_state = true;
            v[i].req.server_state = (uint32_t)state;
        }
    }
    dc_ctl_run(fs, v, n);
    int took = 0;
    for (unsigned i = 0; i < n; i++) {
        const Depfs__IoReply *rep = v[i].rep;
        out[i] = (depfs_push_result){
            .rc = v[i].rc,
            .answered = rep != NULL,
            .state = rep != NULL && rep->has_state ? (int)rep->state : -1,
            .epoch = rep != NULL && rep->has_cluster_epoch ? rep->cluster_epoch : 0,
        };
        took += v[i].rc == 0;
    }
    dc_ctl_free(v, n);
    free(v);
    return took;
}
