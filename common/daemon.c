/* daemon.c - daemon startup: logging, config, directories, signals, RPC
 * server limits, descriptor limit (daemon.h). */
#include "daemon.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define DAEMON_ERR_MAX 512u

int daemon_start(const char *prog, enum dlog_level level, const char *config_path,
                 depfs_config *cfg)
{
    char err[DAEMON_ERR_MAX];
    dlog_init(prog, level);
    int rc = config_load(config_path, cfg, err, sizeof(err));
    if (rc != 0) {
        log_err("config: %s", err);
        return rc < 0 ? rc : -EINVAL;
    }
    return 0;
}

int daemon_make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, DAEMON_DIR_MODE) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, DAEMON_DIR_MODE) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

void daemon_block_stop_signals(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGTERM);
    sigaddset(stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, stop, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void daemon_server_opts(const depfs_config *cfg, rpc_server_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->transport = cfg->transport;
    o->limits.max_header_bytes = cfg->max_header_bytes;
    o->limits.max_bulk_bytes = cfg->max_bulk_bytes;
    o->frame_timeout_ms = cfg->frame_timeout_ms;
    o->idle_timeout_ms = cfg->idle_timeout_ms;
    o->send_timeout_ms = cfg->send_timeout_ms;
    o->max_connections = cfg->max_connections;
    o->max_unproven_per_peer = cfg->max_unproven_per_peer;
}

int daemon_server_auth(const depfs_config *cfg, bool munge, bool tickets, rpc_auth_server *a,
                       rpc_server_opts *o)
{
    char err[RPC_ERROR_TEXT_MAX];
    int rc = rpc_auth_server_init(cfg->auth, cfg->cluster_key, munge, tickets,
                                  cfg->munge_socket, a, err, sizeof(err));
    if (rc < 0) {
        log_err("%s (auth = on in %s; the cluster key is made with: head -c %u /dev/urandom "
                "> KEY; chmod 600 KEY)", err, cfg->path, AUTH_KEY_BYTES);
        return rc;
    }
    o->auth = cfg->auth ? a : NULL;
    if (!cfg->auth)
        log_warn("auth = off in %s: anyone who reaches this port is trusted", cfg->path);
    return 0;
}

int daemon_peer_creds(const depfs_config *cfg, rpc_auth_creds *cr)
{
    char err[RPC_ERROR_TEXT_MAX];
    memset(cr, 0, sizeof(*cr));
    if (!cfg->auth)
        return 0;
    int rc = rpc_auth_creds_key(cfg->cluster_key, cr, err, sizeof(err));
    if (rc < 0)
        log_err("%s", err);
    return rc;
}

unsigned long daemon_raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
            log_warn("cannot raise the descriptor limit: %s", strerror(errno));
    }
    return (unsigned long)rl.rlim_cur;
}
