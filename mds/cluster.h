/* cluster.h - cluster membership as the MDS knows it: the I/O servers from
 * the config with a state (up/down/rebuilding) set by depfs-recovery through
 * MDS_SET_SERVER_STATE, persisted in the store. Thread-safe.
 * Return convention: 0 or a negative errno. */
#ifndef DEPFS_MDS_CLUSTER_H
#define DEPFS_MDS_CLUSTER_H
#include <stdint.h>
#include "config.h"
#include "kvstore.h"

#define MDS_SERVER_UP 0u
#define MDS_SERVER_DOWN 1u
#define MDS_SERVER_REBUILDING 2u
#define MDS_SERVER_STATE_MAX MDS_SERVER_REBUILDING

typedef struct mds_server {
    uint32_t id;
    char address[CONFIG_ADDR_MAX];
    uint32_t state;
} mds_server;

typedef struct mds_cluster mds_cluster;

/* kv stays owned by the caller. Persisted states of servers no longer in
 * the config are ignored. */
int mds_cluster_open(kvstore *kv, const depfs_config *cfg, mds_cluster **out);
void mds_cluster_close(mds_cluster *c);

/* Copies up to max servers into out; returns the number of servers. */
unsigned mds_cluster_servers(mds_cluster *c, mds_server *out, unsigned max);
/* -ENOENT unknown id, -EINVAL bad state, -EIO store error. */
int mds_cluster_set_state(mds_cluster *c, uint32_t id, uint32_t state);
void mds_cluster_default_layout(const mds_cluster *c, unsigned *n, unsigned *k, uint32_t *su);
const char *mds_server_state_name(uint32_t state);

#endif
