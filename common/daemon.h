/* daemon.h - what every DePFS daemon (depfs-mds, depfs-ioserver,
 * depfs-recovery) does before its own work: start logging at the level its
 * command line asked for (log.h dlog_level_parse; DEPFS_LOG_LEVEL still
 * overrides), load the cluster config, create its data directories, route
 * SIGTERM/SIGINT to the thread that waits for them, and, for the daemons
 * that serve RPCs, take the server's limits from the config and raise the
 * descriptor limit those connections need.
 * Return convention: 0 or a negative errno. */
#ifndef DEPFS_DAEMON_H
#define DEPFS_DAEMON_H
#include <signal.h>
#include <sys/types.h>

#include "config.h"
#include "log.h"
#include "rpc.h"

#define DAEMON_DIR_MODE 0700 /* data directories: the daemon's user only */

/* dlog_init(prog, level), then config_load(config_path) into cfg; a config
 * error is logged ("config: <reason>") and returned. */
int daemon_start(const char *prog, enum dlog_level level, const char *config_path,
                 depfs_config *cfg);
/* mkdir -p path with DAEMON_DIR_MODE; existing directories are fine. */
int daemon_make_dirs(const char *path);
/* Blocks SIGTERM and SIGINT in the calling thread and every thread it starts
 * later (one thread collects them with sigwait(stop)), ignores SIGPIPE (a
 * peer that went away is an error return, not a death). */
void daemon_block_stop_signals(sigset_t *stop);
/* The RPC server options every daemon takes from the config: frame limits,
 * time outs and connection caps (transport, address, handler and ctx are
 * the caller's). */
void daemon_server_opts(const depfs_config *cfg, rpc_server_opts *o);
/* What the daemon's server accepts (auth on: the cluster key always, and
 * MUNGE users and/or ticket holders as asked); o->auth points at *a. 0, or
 * -errno logged (a missing or loose cluster key stops the daemon). */
int daemon_server_auth(const depfs_config *cfg, bool munge, bool tickets, rpc_auth_server *a,
                       rpc_server_opts *o);
/* The credentials a daemon connects to its peers with: the cluster key
 * (nothing when auth is off). 0, or -errno logged. */
int daemon_peer_creds(const depfs_config *cfg, rpc_auth_creds *cr);
/* Raises the soft descriptor limit to the hard one (each connection holds
 * a descriptor, and an eventfd once replies are queued for it); returns
 * the limit now in force. */
unsigned long daemon_raise_fd_limit(void);

#endif
