/* cluster.h - a real DePFS cluster inside a test: depfs-mds and N
 * depfs-ioserver daemons (binaries from $DEPFS_BIN_DIR, default build/bin)
 * on free 127.0.0.1 ports, with a temp dir holding the config, LevelDB and
 * strip files. The one harness of the component tests (tests/component).
 *
 *   td_cluster_up(&cl, 8, "lock_lease_ms = 300\n");  ...  td_cluster_down(&cl);
 *   td_ios_kill(&cl, 3); td_ios_start(&cl, 3, "--rebuild");
 *   depfs_t *fs = td_mount(&cl);
 *
 * The config gets the harness's defaults (default_layout 4@2@4k,
 * request_timeout_ms 1000, connect_timeout_ms 500, server_down_expiry_ms
 * 60000, lock_lease_ms 5000) for every key extra_conf does not set itself;
 * I/O server i has id i and its data in DIR/io<i>.
 *
 * Daemons log to DIR/<program>-<pid>.log, never to the test's stdout.
 * Daemons started by the process that brought the cluster up die with it
 * (PR_SET_PDEATHSIG); so do daemons a forked test case starts, with the
 * case, unless the cluster lives in shared memory (td_cluster_shared()):
 * then they outlive the case (a test that restarts the MDS leaves the
 * cluster whole for the next one) and td_cluster_down stops them.
 * DEPFS_KEEP_TEST_DIR (or keep_dir) keeps the temp dir. */
#ifndef DEPFS_TEST_CLUSTER_H
#define DEPFS_TEST_CLUSTER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "depfs.h"

#define TD_MAX_SERVERS 16u

typedef struct td_cluster {
    char dir[256];                      /* temp dir: config, data, logs */
    char conf[300];                     /* DIR/depfs.conf */
    unsigned nservers;                  /* I/O servers, ids 0..nservers-1 */
    unsigned ports[TD_MAX_SERVERS + 1]; /* mds, then ioservers */
    pid_t mds;                          /* 0: not running */
    pid_t ios[TD_MAX_SERVERS];          /* 0: not running */
    pid_t owner;                        /* the process that brought it up */
    bool shared;                        /* MAP_SHARED (td_cluster_shared) */
    bool keep_dir;                      /* td_cluster_down keeps DIR */
} td_cluster;

const char *td_bin_dir(void);

/* A zeroed cluster in shared memory, seen by forked test cases and their
 * parent alike; exits the test program when there is none. */
td_cluster *td_cluster_shared(void);

/* Writes the config and starts the MDS and every I/O server; exits the
 * test program when the cluster cannot be started. */
void td_cluster_up(td_cluster *cl, unsigned nservers, const char *extra_conf);
/* Stops every daemon (SIGTERM, SIGKILL after 5 s), removes DIR. */
void td_cluster_down(td_cluster *cl);

/* Starts the MDS / I/O server i (extra_arg e.g. "--rebuild" or NULL); true
 * once its port answers, false when it died or did not answer in time. */
bool td_mds_start(td_cluster *cl);
bool td_ios_start(td_cluster *cl, unsigned i, const char *extra_arg);
/* SIGTERM the MDS and wait until it is gone. */
void td_mds_stop(td_cluster *cl);
/* SIGKILL I/O server i and wait until it is gone and its port closed. */
void td_ios_kill(td_cluster *cl, unsigned i);

/* A client mounted on the cluster; the test fails when it cannot mount. */
depfs_t *td_mount(const td_cluster *cl);
/* The cluster key's credentials, for requests made by hand (rpc_conn_open). */
struct rpc_auth_creds;
const struct rpc_auth_creds *td_creds(const td_cluster *cl);

/* The strip file of file_id on I/O server i. */
void td_strip_path(const td_cluster *cl, unsigned i, uint64_t file_id, char *out, size_t len);

#endif
