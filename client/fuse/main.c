/* main.c - depfs-fuse: command line, mount, the multi-threaded session loop
 * and clean unmount.
 *
 *   depfs-fuse MOUNTPOINT [-o opts] [-f] [-d] [-s]
 *
 * Our -o options: config=PATH, layout=N@K[@SU] (the mount's default layout
 * for files created without an inherited directory layout), attr_timeout=S,
 * entry_timeout=S, read_ahead_kb=KB (readahead.h), statahead=0|1 (libdepfs's
 * statahead, its pages kept no longer than the shorter timeout). The rest
 * go to libfuse.
 * We add fsname=depfs:CONFIG, subtype=depfs (mount shows type fuse.depfs),
 * default_permissions, max_read, and allow_other when run as root. */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init_flags.h"
#include "kernel_names.h"
#include "label.h"
#include "log.h"
#include "ops.h"
#include "readahead.h"

#define DFUSE_PROG "depfs-fuse"
#define DFUSE_DEFAULT_TIMEOUT_S 1.0
#define DFUSE_MAX_TIMEOUT_S 3600.0
#define DFUSE_MAX_IDLE_THREADS 10u
#define DFUSE_OPT_BYTES (PATH_MAX + 64)

typedef struct dfuse_cmdline {
    char *config;
    char *layout;
    double attr_timeout_s;
    double entry_timeout_s;
    unsigned read_ahead_kb;
    unsigned statahead;
    int have_fsname;
    int have_subtype;
    int have_allow_other;
} dfuse_cmdline;

enum { KEY_FSNAME, KEY_SUBTYPE, KEY_ALLOW_OTHER };

#define DFUSE_OPT(t, field) { t, offsetof(dfuse_cmdline, field), 1 }
static const struct fuse_opt dfuse_opt_spec[] = {
    DFUSE_OPT("config=%s", config),
    DFUSE_OPT("layout=%s", layout),
    DFUSE_OPT("attr_timeout=%lf", attr_timeout_s),
    DFUSE_OPT("entry_timeout=%lf", entry_timeout_s),
    DFUSE_OPT("read_ahead_kb=%u", read_ahead_kb),
    DFUSE_OPT("statahead=%u", statahead),
    FUSE_OPT_KEY("fsname=", KEY_FSNAME),
    FUSE_OPT_KEY("subtype=", KEY_SUBTYPE),
    FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
    FUSE_OPT_END
};

/* Notes which libfuse options the user gave; keeps them for libfuse. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    (void)arg;
    (void)outargs;
    dfuse_cmdline *cl = data;
    if (key == KEY_FSNAME)
        cl->have_fsname = 1;
    else if (key == KEY_SUBTYPE)
        cl->have_subtype = 1;
    else if (key == KEY_ALLOW_OTHER)
        cl->have_allow_other = 1;
    return 1;
}

static void usage(const char *prog)
{
    printf("usage: %s MOUNTPOINT [options]\n\n"
           "DePFS options:\n"
           "    -o config=PATH         cluster config (default $DEPFS_CONF or %s)\n"
           "    -o layout=N@K[@SU]     default layout of new files (no directory layout)\n"
           "    -o attr_timeout=SECS   attribute cache time (default %.1f)\n"
           "    -o entry_timeout=SECS  name cache time (default %.1f)\n"
           "    -o read_ahead_kb=KB    kernel read-ahead window of the mount, set when\n"
           "                           run as root (default %u; 0: the kernel's)\n"
           "    -o statahead=0|1       look up a directory's names a page at a time\n"
           "                           when they are asked for one after another\n"
           "                           (default 1; kept no longer than the timeouts)\n\n",
           prog, "/etc/depfs/depfs.conf", DFUSE_DEFAULT_TIMEOUT_S, DFUSE_DEFAULT_TIMEOUT_S,
           DFUSE_READ_AHEAD_KB_DEFAULT);
    fuse_cmdline_help();
    fuse_lowlevel_help();
}

static int add_opt(struct fuse_args *args, const char *opt)
{
    char buf[DFUSE_OPT_BYTES];
    if ((size_t)snprintf(buf, sizeof(buf), "-o%s", opt) >= sizeof(buf))
        return -1;
    return fuse_opt_add_arg(args, buf);
}

/* The options we always want, unless the user chose otherwise. */
static int add_default_opts(struct fuse_args *args, const dfuse_cmdline *cl)
{
    /* the source names the config, absolute, so `depfs` run anywhere on a
     * path of this mount finds the cluster (client/cli/mounts.c) */
    char fsname[DFUSE_OPT_BYTES], abs[PATH_MAX];
    const char *config = cl->config && realpath(cl->config, abs) ? abs : cl->config;
    bool plain = !config || strpbrk(config, ",\\") != NULL;
    snprintf(fsname, sizeof(fsname), "fsname=depfs%s%s", plain ? "" : ":", plain ? "" : config);
    char max_read[64];
    snprintf(max_read, sizeof(max_read), "max_read=%u", DFUSE_MAX_IO_BYTES);

    if (!cl->have_fsname && add_opt(args, fsname) != 0)
        return -1;
    if (!cl->have_subtype && add_opt(args, "subtype=depfs") != 0)
        return -1;
    if (!cl->have_allow_other && geteuid() == 0 && add_opt(args, "allow_other") != 0)
        return -1;
    if (add_opt(args, "default_permissions") != 0 || add_opt(args, max_read) != 0)
        return -1;
    return 0;
}

/* The mount's read-ahead window (readahead.h), set once INIT is done. */
typedef struct dfuse_ra_args {
    const char *mountpoint;
    unsigned kb;
} dfuse_ra_args;

static void apply_readahead(void *arg)
{
    const dfuse_ra_args *ra = arg;
    int rc = dfuse_readahead_set(ra->mountpoint, ra->kb);
    if (rc < 0)
        log_warn("read-ahead window of %s: %s; the kernel's stays", ra->mountpoint,
                 strerror(-rc));
    else
        log_info("read-ahead window of %s: %u KiB", ra->mountpoint, ra->kb);
}

/* Root only (sysfs); kb 0 leaves the kernel's window. */
static void plan_readahead(const char *mountpoint, unsigned kb)
{
    static dfuse_ra_args ra; /* read by the hook, after this returns */
    if (kb == 0)
        return;
    if (geteuid() != 0) {
        log_info("not root: the kernel's read-ahead window stays (read_ahead_kb ignored)");
        return;
    }
    ra.mountpoint = mountpoint;
    ra.kb = kb;
    dfuse_io_after_init(apply_readahead, &ra);
}

/* config= becomes absolute: the daemon changes directory to /. */
static int absolute_config(dfuse_cmdline *cl)
{
    if (!cl->config)
        return 0;
    char *abs = realpath(cl->config, NULL);
    if (!abs) {
        fprintf(stderr, "%s: config %s: %s\n", DFUSE_PROG, cl->config, strerror(errno));
        return -1;
    }
    free(cl->config);
    cl->config = abs;
    return 0;
}

static int check_timeout(const char *name, double v)
{
    if (v >= 0 && v <= DFUSE_MAX_TIMEOUT_S)
        return 0;
    fprintf(stderr, "%s: %s must be within 0..%.0f seconds\n", DFUSE_PROG, name,
            DFUSE_MAX_TIMEOUT_S);
    return -1;
}

/* Our options -> the library's. */
static int make_depfs_options(const dfuse_cmdline *cl, depfs_options *dopt)
{
    memset(dopt, 0, sizeof(*dopt));
    dopt->config_path = cl->config;
    dopt->count_lookups = true; /* the kernel's lookups: op_forget gives them back */
    /* the kernel checks search permission itself (default_permissions);
     * a page answers no longer than the kernel would keep an answer */
    double keep_s = cl->attr_timeout_s < cl->entry_timeout_s ? cl->attr_timeout_s
                                                            : cl->entry_timeout_s;
    dopt->statahead_ms = cl->statahead ? (unsigned)(keep_s * DFUSE_MS_PER_S) : 0;
    if (!cl->layout)
        return 0;
    char err[128];
    unsigned n = 0, k = 0;
    uint32_t su = 0;
    if (label_parse_spec(cl->layout, &n, &k, &su, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: layout=%s: %s\n", DFUSE_PROG, cl->layout, err);
        return -1;
    }
    dopt->default_n = n;
    dopt->default_k = k;
    dopt->default_su = su;
    return 0;
}

/* libdepfs's names_moved hook (kernel_names.h): arg is the dfuse_ctx. */
static void names_moved(void *arg, uint64_t ino)
{
    dfuse_names_moved(((dfuse_ctx *)arg)->names, ino);
}

static int connect_cluster(const depfs_options *dopt, depfs_t **fs)
{
    int rc = depfs_mount(dopt, fs);
    if (rc < 0) {
        const char *why = depfs_last_error();
        log_err("cannot reach the DePFS cluster: %s", why && *why ? why : strerror(-rc));
        return -1;
    }
    return 0;
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *copts)
{
    if (copts->singlethread)
        return fuse_session_loop(se);
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    if (!lc)
        return -1;
    fuse_loop_cfg_set_clone_fd(lc, (unsigned)copts->clone_fd);
    fuse_loop_cfg_set_idle_threads(lc, copts->max_idle_threads == UINT_MAX
                                           ? DFUSE_MAX_IDLE_THREADS
                                           : copts->max_idle_threads);
    fuse_loop_cfg_set_max_threads(lc, copts->max_threads);
    int rc = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
    return rc;
}

/* Mounts, serves until unmounted or signalled, then unmounts. The cluster is
 * probed before daemonizing so a bad config or a dead MDS fails the mount
 * command itself; the daemon connects again after the fork (threads and
 * sockets do not survive fuse_daemonize's fork). */
static int serve(struct fuse_args *args, const struct fuse_cmdline_opts *copts,
                 const dfuse_cmdline *cl, const depfs_options *dopt)
{
    static dfuse_ctx ctx; /* fuse userdata: lives as long as the session */
    struct fuse_session *se = NULL;
    int rc = 1;
    bool mounted = false, handlers = false;
    depfs_options opt = *dopt;
    opt.names_moved = names_moved;
    opt.names_moved_arg = &ctx;
    dopt = &opt;

    ctx.attr_timeout_s = cl->attr_timeout_s;
    ctx.entry_timeout_s = cl->entry_timeout_s;
    se = fuse_session_new(args, &dfuse_ops, sizeof(dfuse_ops), &ctx);
    if (!se)
        goto out; /* bad libfuse options: said on stderr */
    ctx.se = se;
    if (connect_cluster(dopt, &ctx.fs) != 0)
        goto out;
    if (!copts->foreground) {
        depfs_unmount(ctx.fs); /* probe only */
        ctx.fs = NULL;
    }
    if (fuse_set_signal_handlers(se) != 0)
        goto out;
    handlers = true;
    if (fuse_session_mount(se, copts->mountpoint) != 0)
        goto out;
    mounted = true;
    /* before the loop reads INIT: see init_flags.c */
    if (dfuse_io_install(se) != 0)
        goto out;
    plan_readahead(copts->mountpoint, cl->read_ahead_kb);
    fuse_daemonize(copts->foreground);
    if (!ctx.fs && connect_cluster(dopt, &ctx.fs) != 0)
        goto out;
    int nrc = dfuse_names_start(se, &ctx.names); /* after the fork: a thread */
    if (nrc < 0) {
        log_err("cannot start the thread that drops moved names: %s", strerror(-nrc));
        goto out;
    }
    ctx.layout_k = dopt->default_k;
    ctx.layout_su = dopt->default_su;
    dfuse_ctx_init(&ctx);
    log_info("mounted DePFS on %s (client id %llu)", copts->mountpoint,
             (unsigned long long)depfs_client_id(ctx.fs));
    /* the loop returns 0 on unmount, the signal number after SIGTERM/INT/HUP
     * (a clean stop too) and -errno on failure */
    rc = run_loop(se, copts) < 0 ? 1 : 0;
out:
    if (mounted)
        fuse_session_unmount(se);
    if (ctx.fs) {
        depfs_unmount(ctx.fs); /* flushes whatever the kernel left open */
        ctx.fs = NULL;
    }
    dfuse_names_stop(ctx.names); /* after the library: its hook names it */
    ctx.names = NULL;
    if (handlers)
        fuse_remove_signal_handlers(se);
    if (se)
        fuse_session_destroy(se);
    if (mounted)
        log_info("unmounted %s", copts->mountpoint);
    return rc;
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts copts;
    dfuse_cmdline cl = {.attr_timeout_s = DFUSE_DEFAULT_TIMEOUT_S,
                        .entry_timeout_s = DFUSE_DEFAULT_TIMEOUT_S,
                        .read_ahead_kb = DFUSE_READ_AHEAD_KB_DEFAULT,
                        .statahead = 1};
    depfs_options dopt;
    int rc = 1;
    memset(&copts, 0, sizeof(copts));

    if (fuse_opt_parse(&args, &cl, dfuse_opt_spec, opt_proc) != 0)
        goto out;
    if (absolute_config(&cl) != 0)
        goto out;
    if (add_default_opts(&args, &cl) != 0)
        goto out;
    if (fuse_parse_cmdline(&args, &copts) != 0)
        goto out;
    if (copts.show_help) {
        usage(argv[0]);
        rc = 0;
        goto out;
    }
    if (copts.show_version) {
        printf("%s 0.1.0 (libfuse %s)\n", DFUSE_PROG, fuse_pkgversion());
        fuse_lowlevel_version();
        rc = 0;
        goto out;
    }
    if (!copts.mountpoint) {
        fprintf(stderr, "usage: %s MOUNTPOINT [-o opts] [-f] [-d]  (--help for more)\n",
                argv[0]);
        goto out;
    }
    if (check_timeout("attr_timeout", cl.attr_timeout_s) != 0 ||
        check_timeout("entry_timeout", cl.entry_timeout_s) != 0)
        goto out;
    if (cl.read_ahead_kb > DFUSE_READ_AHEAD_KB_MAX) {
        fprintf(stderr, "%s: read_ahead_kb must be within 0..%u\n", DFUSE_PROG,
                DFUSE_READ_AHEAD_KB_MAX);
        goto out;
    }
    if (cl.statahead > 1) {
        fprintf(stderr, "%s: statahead must be 0 or 1\n", DFUSE_PROG);
        goto out;
    }
    if (make_depfs_options(&cl, &dopt) != 0)
        goto out;
    /* a daemon's stderr is gone after the fork: print only what makes a
     * mount command fail, unless asked to stay in the foreground */
    dlog_init(DFUSE_PROG, copts.debug ? DLOG_DEBUG : copts.foreground ? DLOG_INFO : DLOG_WARN);
    rc = serve(&args, &copts, &cl, &dopt);
out:
    free(copts.mountpoint);
    free(cl.config);
    free(cl.layout);
    fuse_opt_free_args(&args);
    return rc;
}
