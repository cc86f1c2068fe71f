/* cluster.h - cluster membership as the MDS knows it: the I/O servers from
 * the config with a state (up/down/rebuilding/reconstructing) set by
 * depfs-recovery through MDS_SET_SERVER_STATE, persisted in the store, and
 * the cluster epoch (recovery/README.md), persisted too, which grows by one
 * with every change of any server's state. Rebuild progress and degraded
 * file counts are kept in memory only (a restarted MDS learns them again
 * from the next report). Thread-safe. Return convention: 0 or a negative
 * errno. */
#ifndef DEPFS_MDS_CLUSTER_H
#define DEPFS_MDS_CLUSTER_H
#include <stdint.h>
#include "config.h"
#include "kvstore.h"
#include "wire.h" /* DEPFS_SERVER_* states, depfs_state_name */


/* Progress of a rebuild or reconstruction, as last reported. */
typedef struct mds_progress {
    uint64_t rebuild_done_bytes;
    uint64_t rebuild_total_bytes; /* 0 = unknown */
    uint64_t degraded_files;      /* files with units missing on the server */
    uint64_t rebuild_rate_bps;    /* bytes/s as last reported, 0 = unknown */
    uint64_t rate_ms;             /* when it was reported (monotonic ms) */
} mds_progress;

typedef struct mds_server {
    uint32_t id;
    char address[CONFIG_ADDR_MAX];
    uint32_t state;
    uint64_t state_epoch;         /* epoch of its last state change (0: none since
                                   * this MDS started; clients then keep their marks) */
    mds_progress progress;
} mds_server;

typedef struct mds_cluster mds_cluster;

/* kv stays owned by the caller. Persisted states of servers no longer in
 * the config are ignored. */
int mds_cluster_open(kvstore *kv, const depfs_config *cfg, mds_cluster **out);
void mds_cluster_close(mds_cluster *c);

/* Copies up to max servers into out and (if non-NULL) the epoch of that
 * same snapshot; returns the number of servers. A rate not reported again
 * for MDS_RATE_STALE_MS reads as 0 (its reporter stopped or died). */
#define MDS_RATE_STALE_MS 5000u
unsigned mds_cluster_servers(mds_cluster *c, mds_server *out, unsigned max, uint64_t *epoch);
uint64_t mds_cluster_epoch(mds_cluster *c);
/* Sets a server's state; a change bumps the epoch (state and epoch are
 * stored in one synced batch) and zeroes its progress. *epoch (if non-NULL)
 * gets the epoch after the call. -ENOENT unknown id, -EINVAL bad state,
 * -EIO store error (nothing changed). */
int mds_cluster_set_state(mds_cluster *c, uint32_t id, uint32_t state, uint64_t *epoch);
/* Replaces the progress fields that are given (NULL: keep). -ENOENT. */
int mds_cluster_set_progress(mds_cluster *c, uint32_t id, const uint64_t *done_bytes,
                             const uint64_t *total_bytes, const uint64_t *degraded_files);
/* Replaces the reported rebuild rate (bytes/s). -ENOENT. */
int mds_cluster_set_rate(mds_cluster *c, uint32_t id, uint64_t rate_bps);
void mds_cluster_default_layout(const mds_cluster *c, unsigned *n, unsigned *k, uint32_t *su);

#endif
