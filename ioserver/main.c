/* main.c - depfs-ioserver: startup, data directory layout, RPC server,
 * clean stop on SIGTERM/SIGINT.
 *
 *   depfs-ioserver --config PATH --id N [--rebuild|--reconstruct] [--log-level L]
 *
 * The server's address and data directory come from the config line
 * "ioserver = N HOST:PORT DATADIR". DATADIR/strips holds strip files,
 * DATADIR/state the LevelDB with the server state, epoch and dirty log.
 * With --rebuild the server comes back as REBUILDING (durably) until the
 * recovery module's rejoin sends IO_SET_STATE(UP) (see handlers.c).
 * --reconstruct is for a replacement node with an empty data dir: it comes
 * up as RECONSTRUCTING, which only `depfs reconstruct` ends. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "handlers.h"
#include "client_io.h"
#include "lock_intents.h"
#include "lease.h"
#include "scrubber.h"
#include "unstored.h"
#include "stall.h"
#include "wire.h"
#include "log.h"

#define IOS_PROG "depfs-ioserver"
#define FDS_RESERVED 256u /* sockets, LevelDB files, logs */

typedef struct ios_args {
    const char *config_path;
    uint32_t id;
    int have_id;
    int rebuild;
    int reconstruct;
    enum dlog_level level;
} ios_args;

static void usage(FILE *f)
{
    fprintf(f, "usage: %s --config PATH --id N [--rebuild|--reconstruct]"
               " [--log-level err|warn|info|debug]\n"
               "  --rebuild      back after a crash: REBUILDING until recovery rejoins it\n"
               "  --reconstruct  replacement node (empty data dir): RECONSTRUCTING until\n"
               "                 `depfs reconstruct ID` has rebuilt every unit\n",
            IOS_PROG);
}

static int parse_args(int argc, char **argv, ios_args *a)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "id", required_argument, NULL, 'i' },
        { "rebuild", no_argument, NULL, 'r' },
        { "reconstruct", no_argument, NULL, 'R' },
        { "log-level", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    memset(a, 0, sizeof(*a));
    a->level = DLOG_INFO;
    int ch;
    while ((ch = getopt_long(argc, argv, "c:i:rl:h", opts, NULL)) != -1) {
        char *end;
        unsigned long v;
        switch (ch) {
        case 'c': a->config_path = optarg; break;
        case 'i':
            errno = 0;
            v = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || v > UINT32_MAX || optarg[0] == '-') {
                fprintf(stderr, "%s: bad --id '%s'\n", IOS_PROG, optarg);
                return -EINVAL;
            }
            a->id = (uint32_t)v;
            a->have_id = 1;
            break;
        case 'r': a->rebuild = 1; break;
        case 'R': a->reconstruct = 1; break;
        case 'l':
            if (dlog_level_parse(optarg, &a->level)) {
                fprintf(stderr, "%s: bad --log-level '%s'\n", IOS_PROG, optarg);
                return -EINVAL;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -EINVAL;
        }
    }
    if (a->rebuild && a->reconstruct) {
        fprintf(stderr, "%s: --rebuild and --reconstruct exclude each other\n", IOS_PROG);
        return -EINVAL;
    }
    if (optind != argc || !a->have_id) {
        usage(stderr);
        return -EINVAL;
    }
    return 0;
}

/* Raises the descriptor limit to its hard maximum; returns the strip cache
 * size that fits under it. */
static unsigned fd_budget(void)
{
    unsigned long limit = daemon_raise_fd_limit();
    if (limit == 0)
        return IOS_STRIPS_DEFAULT_OPEN_FILES / 4;
    unsigned long usable = limit > 2 * FDS_RESERVED ? limit / 2 : FDS_RESERVED / 4;
    return usable > IOS_STRIPS_DEFAULT_OPEN_FILES ? IOS_STRIPS_DEFAULT_OPEN_FILES
                                                  : (unsigned)usable;
}

/* --rebuild / --reconstruct, stored durably before the first request. A
 * RECONSTRUCTING server stays so across plain restarts: only a finished
 * reconstruction may bring it up, never a --rebuild (its data is partial). */
static int apply_start_state(const ios_args *a, ios_state *st)
{
    uint32_t now = ios_state_get(st), want = now;
    if (a->reconstruct)
        want = DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING;
    else if (a->rebuild && now != DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING)
        want = DEPFS__SERVER_STATE__SERVER_REBUILDING;
    if (want == now)
        return 0;
    int rc = ios_state_set(st, want);
    if (rc)
        log_err("cannot store state %s: %s", depfs_state_name(want), strerror(-rc));
    return rc;
}

static int run(const ios_args *a, const depfs_config *cfg, const ioserver_conf *me)
{
    ios_client_io client_io;
    ios_client_io_init(&client_io);
    ios_ctx ctx = { .server_id = me->id, .cfg = cfg, .max_bulk_bytes = cfg->max_bulk_bytes,
                    .lock_lease_ms = cfg->lock_lease_ms, .client_io = &client_io };
    rpc_server *srv = NULL;
    char err[512];
    int rc = daemon_make_dirs(me->data_dir);
    if (rc) {
        log_err("cannot create data dir %s: %s", me->data_dir, strerror(-rc));
        return rc;
    }
    if ((rc = ios_strips_open(me->data_dir, fd_budget(), &ctx.strips))) {
        log_err("cannot open strips under %s: %s", me->data_dir, strerror(-rc));
        goto out;
    }
    if ((rc = ios_state_open(me->data_dir, &ctx.state, err, sizeof(err)))) {
        log_err("cannot open state store: %s", err);
        goto out;
    }
    if ((rc = ios_locks_create(IOS_LOCKS_DEFAULT_MAX_ENTRIES, &ctx.locks))) {
        log_err("cannot create the lock table: %s", strerror(-rc));
        goto out;
    }
    rc = ios_lock_intents_restore(ctx.locks, ctx.state, clock_now_ms(), ctx.lock_lease_ms);
    if (rc < 0) {
        log_err("cannot restore the lock intents: %s", strerror(-rc));
        goto out;
    }
    if (rc > 0)
        log_warn("%d lock intents left by a crash: their stripes stay locked until "
                 "depfs-recovery repairs them", rc);
    ios_lock_intents_attach(ctx.locks, ctx.state);
    if ((rc = ios_unstored_create(&ctx.unstored))) {
        log_err("cannot create the failed-store notes: %s", strerror(-rc));
        goto out;
    }
    if ((rc = apply_start_state(a, ctx.state)))
        goto out;

    /* block the stop signals in every thread; main waits for them */
    sigset_t stop;
    daemon_block_stop_signals(&stop);

    /* a gap of one request timeout: clients give up on a server after two */
    if ((rc = ios_stall_start(ctx.state, me->id, cfg->request_timeout_ms, &ctx.stall))) {
        log_err("cannot start the stall detector: %s", strerror(-rc));
        goto out;
    }
    if ((rc = ios_lease_start(ctx.state, me->id, cfg, &ctx.lease))) {
        log_err("cannot start the recovery lease: %s", strerror(-rc));
        goto out;
    }
    if ((rc = ios_lease_confirm_start(ctx.lease)))
        goto out;
    if ((rc = ios_scrubber_start(ctx.strips, cfg->scrub_rate, &client_io, &ctx.scrubber))) {
        log_err("cannot start the background scrub: %s", strerror(-rc));
        goto out;
    }
    if ((rc = ios_lock_waits_start(IOS_LOCK_WAITS_MAX, ios_retry_parked, &ctx, &ctx.waits))) {
        log_err("cannot start the lock waits: %s", strerror(-rc));
        goto out;
    }
    rpc_server_opts o;
    rpc_auth_server auth; /* daemons and admins by the cluster key, clients by ticket */
    daemon_server_opts(cfg, &o);
    o.address = me->address;
    o.handler = ios_handle;
    o.ctx = &ctx;
    if ((rc = daemon_server_auth(cfg, false, true, &auth, &o)))
        goto out;
    ctx.cap_key = o.auth ? auth.cap_key : NULL; /* capabilities from ticket holders */
    if ((rc = rpc_server_start(&o, &srv))) {
        log_err("cannot listen on %s (%s): %s", me->address, cfg->transport, strerror(-rc));
        goto out;
    }
    uint32_t state = ios_state_get(ctx.state);
    log_info("server %u listening on %s, data %s, state %s, epoch %llu", me->id, me->address,
             me->data_dir, depfs_state_name(state), (unsigned long long)ios_state_epoch(ctx.state));
    int sig = 0;
    sigwait(&stop, &sig);
    log_info("signal %d: stopping", sig);
    rpc_server_stop(srv);
out:
    ios_lock_waits_stop(ctx.waits); /* after the server: nothing parks any more */
    ios_scrubber_stop(ctx.scrubber);
    ios_lease_stop(ctx.lease);
    ios_stall_stop(ctx.stall);
    ios_unstored_free(ctx.unstored);
    ios_locks_free(ctx.locks);
    ios_state_close(ctx.state);
    ios_strips_close(ctx.strips);
    return rc;
}

int main(int argc, char **argv)
{
    ios_args a;
    static depfs_config cfg; /* large: keep it off the stack */
    if (parse_args(argc, argv, &a))
        return 2;
    if (daemon_start(IOS_PROG, a.level, a.config_path, &cfg) < 0)
        return 1;
    const ioserver_conf *me = config_ioserver(&cfg, a.id);
    if (!me) {
        log_err("config %s has no ioserver with id %u", cfg.path, a.id);
        return 1;
    }
    return run(&a, &cfg, me) ? 1 : 0;
}
