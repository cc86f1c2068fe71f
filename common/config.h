/* config.h - the cluster config file, shared by every daemon and client.
 *
 * Format: "key = value" lines, '#' comments. Keys:
 *   mds_address = HOST:PORT           (required)
 *   mds_data_dir = DIR                (the MDS's LevelDB)
 *   ioserver = ID HOST:PORT DATADIR   (one line per I/O server; ids unique)
 *   recovery_data_dir = DIR           (optional; reconstruct resumption state)
 *   transport = tcp|rdma              (default tcp)
 *   default_layout = N@K[@SU]         (default 8@6@64k, clamped to servers)
 *   request_timeout_ms, connect_timeout_ms, heartbeat_period_ms,
 *   lock_lease_ms, server_down_expiry_ms, max_header_bytes, max_bulk_bytes,
 *   scrub_rate, rebuild_rate, rebuild_busy_rate,
 *   frame_timeout_ms, idle_timeout_ms, send_timeout_ms, max_connections,
 *   max_unproven_per_peer   (every daemon's RPC server: rpc.h)
 *   auth = on|off                     (default on: every connection proves
 *                                      who it is, common/auth.h; off only
 *                                      for benchmarks and old clusters)
 *   cluster_key = PATH                (default /etc/depfs/cluster.key; 0600,
 *                                      on server and admin nodes only)
 *   munge_socket = PATH               (default: MUNGE's own)
 *   client_nodes = NET[,NET...]       (IPv4 ADDR or ADDR/BITS; nodes whose
 *                                      root-run depfs-fuse, proven by MUNGE,
 *                                      may act for the uid of each kernel
 *                                      request: mds/caller.h. Default none)
 *   root_squash = on|off              (default on: a MUNGE user acting as
 *                                      uid 0 acts as squash_uid/squash_gid)
 *   squash_uid, squash_gid = ID       (default 65534, "nobody")
 * Unknown keys and bad values are errors naming file and line.
 *
 * Details (config.c):
 *   - '#' starts a comment at the line start or after whitespace (a '#'
 *     inside a word, e.g. a path, is kept).
 *   - Every key except ioserver may appear once; a repeat is an error.
 *   - ioserver ids and addresses must be unique; at most CONFIG_MAX_IOSERVERS.
 *   - *_ms values: 1..86400000. max_*_bytes: sizes (1m, 65536) in 1024..2^32-1.
 *     max_connections, max_unproven_per_peer: counts, 1..2^20.
 *     squash_uid/gid: 0..2^32-2. client_nodes: at most CONFIG_MAX_CLIENT_NETS
 *     entries, separated by commas or blanks.
 *   - default_layout without SU uses LAYOUT_DEFAULT_SU (64 KiB).
 *   - If ioservers are listed and default n exceeds their count, the default
 *     is clamped (with a warning): n = servers, k = min(k, n - 1) so one
 *     failure stays survivable, or k = 1 when there is a single server.
 *   - No ioserver lines is allowed (a client-only config); then no clamping. */
#ifndef DEPFS_CONFIG_H
#define DEPFS_CONFIG_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_IOSERVERS 256u
#define CONFIG_ADDR_MAX 128u
#define CONFIG_DEFAULT_PATH "/etc/depfs/depfs.conf"
#define CONFIG_ENV "DEPFS_CONF"
#define CONFIG_DEFAULT_CLUSTER_KEY "/etc/depfs/cluster.key"
#define CONFIG_MAX_CLIENT_NETS 64u
#define CONFIG_DEFAULT_SQUASH_ID 65534u /* "nobody" on Debian */

/* An IPv4 network of client_nodes (host byte order; a single address has
 * mask 0xffffffff). */
typedef struct config_net {
    uint32_t addr, mask;
} config_net;

typedef struct ioserver_conf {
    uint32_t id;
    char address[CONFIG_ADDR_MAX];
    char data_dir[PATH_MAX];
} ioserver_conf;

typedef struct depfs_config {
    char path[PATH_MAX];               /* file it was loaded from */
    char mds_address[CONFIG_ADDR_MAX];
    char mds_data_dir[PATH_MAX];
    char recovery_data_dir[PATH_MAX];
    char transport[16];
    unsigned n_ioservers;
    ioserver_conf ioservers[CONFIG_MAX_IOSERVERS];
    unsigned default_n, default_k;
    uint32_t default_su;
    unsigned request_timeout_ms;       /* t_T, default 2000 */
    unsigned connect_timeout_ms;       /* default 1000 */
    unsigned heartbeat_period_ms;      /* t_HB, default 500 */
    unsigned lock_lease_ms;            /* default 5000 */
    unsigned server_down_expiry_ms;    /* client status-vector expiry, default 5000 */
    uint32_t max_header_bytes;         /* default 1 MiB */
    uint32_t max_bulk_bytes;           /* default 64 MiB */
    uint32_t scrub_rate;               /* background scrub, bytes/s per I/O server
                                        * (0: off), default 16 MiB/s */
    uint32_t rebuild_rate;             /* every rebuild and reconstruct, bytes/s of
                                        * rebuilt units per file (0: unlimited, the
                                        * default; reconstruct --rate overrides) */
    uint32_t rebuild_busy_rate;        /* the same while clients are busy on its
                                        * servers (0: never yields), default
                                        * 32 MiB/s (client/lib/core_pace.h) */
    /* what one peer may cost a daemon's RPC server (rpc.h, rpc_server_opts) */
    unsigned frame_timeout_ms;         /* a whole request frame, default 30 s */
    unsigned idle_timeout_ms;          /* a silent established connection, default 10 min */
    unsigned send_timeout_ms;          /* a whole reply frame, default 30 s */
    unsigned max_connections;          /* per daemon, default 1024 */
    unsigned max_unproven_per_peer;    /* per address, before a first valid request, default 64 */
    bool auth;                         /* connections authenticated (default on) */
    char cluster_key[PATH_MAX];
    char munge_socket[PATH_MAX];       /* "": MUNGE's default socket */
    unsigned n_client_nodes;           /* client_nodes (mds/caller.h) */
    config_net client_nodes[CONFIG_MAX_CLIENT_NETS];
    bool root_squash;                  /* default on */
    uint32_t squash_uid, squash_gid;   /* default CONFIG_DEFAULT_SQUASH_ID */
} depfs_config;

void config_defaults(depfs_config *c);
/* path NULL: $DEPFS_CONF, else CONFIG_DEFAULT_PATH. 0 or -errno + err text. */
int config_load(const char *path, depfs_config *c, char *err, size_t err_len);
/* NULL when no server has that id. */
const ioserver_conf *config_ioserver(const depfs_config *c, uint32_t id);
/* Whether ipv4 (network byte order, as MUNGE reports it) is in client_nodes. */
bool config_is_client_node(const depfs_config *c, uint32_t ipv4_be);

#endif
