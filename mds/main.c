/* main.c - depfs-mds: loads the cluster config, opens the namespace store
 * (LevelDB at mds_data_dir, synchronous writes), serves MdsRequests on
 * mds_address until SIGTERM/SIGINT, then stops cleanly.
 *
 *   depfs-mds --config PATH [--foreground] [--log-level err|warn|info|debug]
 *
 * Without --foreground it detaches, and the starting process exits 0 only
 * once the store is open and the server listens (non-zero otherwise). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"
#include "daemon.h"
#include "auth.h"
#include "handlers.h"
#include "holds.h"
#include "holds_journal.h"
#include "kvstore.h"
#include "log.h"
#include "namespace.h"
#include "rpc.h"
#include "syncer.h"

#define MDS_PROG "depfs-mds"
#define MDS_ERR_MAX 512u
#define MDS_FDS_RESERVED 256u /* LevelDB files, logs, listener */

typedef struct mds_args {
    const char *config_path;
    bool foreground;
    enum dlog_level level;
} mds_args;

typedef struct mds_daemon {
    depfs_config cfg;
    kvstore *kv;
    mds_ns *ns;
    mds_cluster *cluster;
    mds_holds *holds;
    mds_ctx ctx;
    mds_syncer *syncer;
    rpc_auth_server auth; /* users by MUNGE, daemons and admins by the cluster key */
    rpc_server *srv;
} mds_daemon;

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --config PATH [--foreground] [--log-level err|warn|info|debug]\n", MDS_PROG);
}

static int parse_args(int argc, char **argv, mds_args *a)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    memset(a, 0, sizeof(*a));
    a->level = DLOG_INFO;
    while ((opt = getopt_long(argc, argv, "c:fl:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->config_path = optarg;
            break;
        case 'f':
            a->foreground = true;
            break;
        case 'l':
            if (dlog_level_parse(optarg, &a->level) < 0) {
                fprintf(stderr, "%s: bad log level '%s'\n", MDS_PROG, optarg);
                return -EINVAL;
            }
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", MDS_PROG, argv[optind]);
        usage(stderr);
        return -EINVAL;
    }
    return 0;
}

static int open_store(mds_daemon *d)
{
    char err[MDS_ERR_MAX];
    mds_ns_params params;
    int rc;

    if (!d->cfg.mds_data_dir[0]) {
        log_err("config %s: mds_data_dir is not set", d->cfg.path);
        return -EINVAL;
    }
    rc = daemon_make_dirs(d->cfg.mds_data_dir);
    if (rc < 0) {
        log_err("cannot create %s: %s", d->cfg.mds_data_dir, strerror(-rc));
        return rc;
    }
    rc = kv_open(d->cfg.mds_data_dir, true, &d->kv, err, sizeof(err));
    if (rc < 0) {
        log_err("%s", err);
        return rc;
    }
    mds_ns_params_from_config(&d->cfg, &params);
    rc = mds_ns_open(d->kv, &params, &d->ns, err);
    if (rc < 0) {
        log_err("cannot open the namespace in %s: %s", d->cfg.mds_data_dir, err);
        return rc;
    }
    /* the previous run's holds, journalled (holds_journal.h): no unlinked
     * file is purged while one may still be used */
    char boot_id[MDS_BOOT_ID_MAX + 1];
    mds_boot_id(boot_id);
    rc = mds_holds_open(d->ns, boot_id, (uint64_t)time(NULL), &d->holds, err);
    if (rc < 0) {
        log_err("cannot load the previous run's holds: %s", err);
        return rc;
    }
    mds_ns_set_holds(d->ns, d->holds);
    rc = mds_cluster_open(d->kv, &d->cfg, &d->cluster);
    if (rc < 0) {
        log_err("cannot load cluster membership: %s", strerror(-rc));
        return rc;
    }
    /* group commit: mutations are answered by the syncer once durable */
    rc = mds_syncer_start(d->kv, &d->syncer);
    if (rc < 0) {
        log_err("cannot start the syncer thread: %s", strerror(-rc));
        return rc;
    }
    mds_ns_defer_sync(d->ns);
    return 0;
}

static int start_server(mds_daemon *d)
{
    rpc_server_opts o;
    daemon_server_opts(&d->cfg, &o);
    o.address = d->cfg.mds_address;
    /* no MDS request carries bulk: a frame that declares some is refused
     * before any byte of it is read */
    o.limits.max_bulk_bytes = 0;
    o.handler = mds_handle;
    int rc = daemon_server_auth(&d->cfg, true, false, &d->auth, &o);
    if (rc < 0)
        return rc;
    d->ctx.auth = o.auth; /* its ticket key: MDS_REGISTER issues tickets */
    if (o.auth) /* the inode handles' tags (handles.h) */
        mds_handles_init(&d->ctx.handles, o.auth->handle_key, mds_ns_id(d->ns));
    d->ctx.ns = d->ns;
    d->ctx.cluster = d->cluster;
    d->ctx.syncer = d->syncer;
    d->ctx.kv = d->kv;
    d->ctx.holds = d->holds;
    d->ctx.callers.cfg = &d->cfg; /* client_nodes, root_squash */
    o.ctx = &d->ctx;
    rc = rpc_server_start(&o, &d->srv);
    if (rc < 0)
        log_err("cannot listen on %s (%s): %s", d->cfg.mds_address, d->cfg.transport, strerror(-rc));
    return rc;
}

static void shutdown_daemon(mds_daemon *d)
{
    if (d->srv)
        rpc_server_stop(d->srv);
    mds_syncer_stop(d->syncer); /* answers what is still queued */
    if (d->ns && d->holds) { /* the next run keeps what this one let in */
        char err[MDS_ERR_MAX];
        if (mds_ns_put_holds_until(d->ns, mds_holds_until_max(d->holds, (uint64_t)time(NULL)), err) < 0)
            log_warn("cannot record the holds given: %s (the next start waits a capability's life)",
                     err);
    }
    mds_cluster_close(d->cluster);
    mds_ns_close(d->ns);
    mds_holds_free(d->holds);
    mds_handles_wipe(&d->ctx.handles);
    if (d->kv)
        kv_close(d->kv);
}

/* Detach: the parent waits for one status byte from the child on a pipe
 * and exits with it. Returns the write end in the child (-1 on error). */
static int detach(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        unsigned char status = 1;
        close(fds[1]);
        if (read(fds[0], &status, 1) != 1)
            status = 1;
        _exit(status);
    }
    close(fds[0]);
    if (setsid() < 0)
        log_warn("setsid: %s", strerror(errno));
    if (chdir("/") < 0)
        log_warn("chdir /: %s", strerror(errno));
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        if (devnull != STDIN_FILENO)
            close(devnull);
    }
    return fds[1];
}

static void report_ready(int fd, unsigned char status)
{
    if (fd < 0)
        return;
    if (write(fd, &status, 1) != 1)
        log_warn("cannot report readiness to the starting process");
    close(fd);
}

static int wait_for_signal(void)
{
    sigset_t set;
    int sig = 0;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigwait(&set, &sig) != 0)
        return -1;
    return sig;
}

int main(int argc, char **argv)
{
    mds_args args;
    mds_daemon d;
    sigset_t set;
    int ready_fd = -1;
    int rc;

    if (parse_args(argc, argv, &args) < 0)
        return 2;
    memset(&d, 0, sizeof(d));
    if (daemon_start(MDS_PROG, args.level, args.config_path, &d.cfg) < 0)
        return 1;
    if (!args.foreground) {
        ready_fd = detach();
        if (ready_fd < 0) {
            log_err("cannot detach: %s", strerror(errno));
            return 1;
        }
    }
    /* Block the stop signals in every thread; main collects them. */
    daemon_block_stop_signals(&set);

    unsigned long fds = daemon_raise_fd_limit();
    if (fds < d.cfg.max_connections + MDS_FDS_RESERVED)
        log_warn("descriptor limit %lu is below max_connections (%u) + %u: connections "
                 "beyond it are refused at accept", fds, d.cfg.max_connections, MDS_FDS_RESERVED);
    rc = open_store(&d);
    if (rc == 0)
        rc = start_server(&d);
    if (rc < 0) {
        report_ready(ready_fd, 1);
        shutdown_daemon(&d);
        return 1;
    }
    log_info("serving on %s (%s), store %s, %u ioservers, default layout %u@%u@%u",
             d.cfg.mds_address, d.cfg.transport, d.cfg.mds_data_dir, d.cfg.n_ioservers,
             d.cfg.default_n, d.cfg.default_k, d.cfg.default_su);
    report_ready(ready_fd, 0);

    int sig = wait_for_signal();
    log_info("signal %d: stopping", sig);
    shutdown_daemon(&d);
    log_info("stopped");
    return 0;
}
