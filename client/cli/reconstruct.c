/* reconstruct.c - `depfs reconstruct SERVER [--rate MB/s] [--restart]
 * [--state-file PATH] [--jobs N]`: node replacement. The new server was
 * started with --reconstruct on an empty data dir (RECONSTRUCTING); this
 * rebuilds every unit it must hold (depfs_files_on_server, then
 * depfs_rebuild_file per file, several files at once so every other server
 * is read in parallel), rate limited by a token bucket in the progress
 * callback, with a progress bar on a terminal and periodic lines otherwise.
 * Finished files go to a state file so a re-run resumes; at the end the
 * server rejoins (depfs_server_rejoin) and the state file is removed.
 * Progress (bytes done/total, rate) also goes to the MDS once a second
 * (depfs_report_progress), so `depfs status` anywhere shows it; the MDS
 * state is RECONSTRUCTING meanwhile (set here if the server says so and the
 * MDS does not know yet) and UP after the rejoin, which clears the
 * progress. */
#include "clock.h"
#include "cli.h"
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RC_CMD "reconstruct"
#define RC_JOBS_DEFAULT 4u
#define RC_JOBS_MAX 64u
#define RC_DEFAULT_STATE_DIR "/var/tmp"
#define RC_TTY_PERIOD_MS 200u
#define RC_LINE_PERIOD_MS 5000u
#define RC_BAR_WIDTH 30u
#define RC_BYTES_PER_MB 1e6
#define RC_MS_PER_S 1000u
#define RC_BURST_S 0.25        /* token bucket depth: this many seconds of rate */
#define RC_SERVER_STATUS_MAX 1024u
#define RC_PERCENT 100.0
#define RC_S_PER_MIN 60u
#define RC_PUBLISH_PERIOD_MS 1000u /* progress to the MDS at most this often */
#define RC_RATE_EMA_NEW 0.5        /* weight of the latest period in the reported rate */

/* server states as depfs_server_status gives them (depfs.h) */

typedef struct rc_file {
    uint64_t ino, size, unit_bytes; /* unit_bytes: what the server holds of it */
} rc_file;

typedef struct rc_ctx {
    depfs_t *fs;
    uint32_t server;
    rc_file *files;
    size_t nfiles, cap;
    uint64_t *done_inos;      /* from the state file, sorted */
    size_t ndone;
    FILE *state;              /* appended: one finished ino per line */
    pthread_mutex_t lock;     /* guards state, tokens, first_err */
    _Atomic size_t next;      /* next file for a worker */
    _Atomic uint64_t bytes_done;
    _Atomic size_t files_done;
    _Atomic unsigned workers_left;
    _Atomic bool abort;
    uint64_t total_bytes;
    double rate_bps;          /* 0: unlimited */
    double tokens;
    uint64_t tokens_ms;
    uint64_t start_ms;
    bool publish_failed;      /* warned once; reports go on being tried */
    uint64_t pub_ms, pub_done; /* last progress report to the MDS (main thread) */
    double pub_rate;          /* bytes/s it carried */
    int first_err;
    char first_err_text[256];
} rc_ctx;

static void rc_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s reconstruct SERVER [--rate MB/s] [--restart] [--state-file PATH] [--jobs N]\n"
            "\n"
            "Node replacement: rebuild every unit I/O server SERVER holds (data and\n"
            "parity of every file whose layout includes it) from the other servers,\n"
            "then let it rejoin the cluster. Start the replacement first with\n"
            "'depfs-ioserver --id SERVER --reconstruct' on an empty data directory.\n"
            "\n"
            "Progress (bytes, MB/s, ETA) goes to stderr. Finished files are recorded in\n"
            "a state file, so an interrupted run resumes where it stopped.\n"
            "\n"
            "Options:\n"
            "  -r, --rate MB/s        limit the rebuild to this many MB (10^6 bytes) per second\n"
            "  -R, --restart          ignore the state file and start over\n"
            "  -s, --state-file PATH  state file (default: recovery_data_dir of the config,\n"
            "                         else %s, file depfs-reconstruct-SERVER.state)\n"
            "  -J, --jobs N           files rebuilt at once (default %u)\n"
            "  -c, --config PATH      cluster config\n"
            "  -h, --help             show this help\n",
            CLI_PROG, RC_DEFAULT_STATE_DIR, RC_JOBS_DEFAULT);
}

/* ------------------------------------------------------------ state file */

static int rc_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool rc_is_done(const rc_ctx *c, uint64_t ino)
{
    return c->ndone && bsearch(&ino, c->done_inos, c->ndone, sizeof ino, rc_u64_cmp) != NULL;
}

/* Read finished inos (unless restart), then open the file for appending. */
static int rc_state_open(rc_ctx *c, const char *path, bool restart)
{
    FILE *f = restart ? NULL : fopen(path, "r");
    if (f != NULL) {
        size_t cap = 0;
        unsigned long long ino;
        while (fscanf(f, "%llu", &ino) == 1) {
            if (c->ndone == cap) {
                cap = cap ? cap * 2 : 1024;
                uint64_t *v = realloc(c->done_inos, cap * sizeof *v);
                if (v == NULL) {
                    fclose(f);
                    return -ENOMEM;
                }
                c->done_inos = v;
            }
            c->done_inos[c->ndone++] = ino;
        }
        fclose(f);
        qsort(c->done_inos, c->ndone, sizeof *c->done_inos, rc_u64_cmp);
    }
    c->state = fopen(path, restart ? "w" : "a");
    if (c->state == NULL) {
        int rc = -errno;
        cli_err_rc(rc, "cannot open the state file %s", path);
        return rc;
    }
    return 0;
}

static void rc_state_record(rc_ctx *c, uint64_t ino)
{
    pthread_mutex_lock(&c->lock);
    fprintf(c->state, "%llu\n", (unsigned long long)ino);
    fflush(c->state);
    fdatasync(fileno(c->state));
    pthread_mutex_unlock(&c->lock);
}

static void rc_state_path(char *buf, size_t len, const char *config_path, const char *given,
                          uint32_t server)
{
    if (given) {
        snprintf(buf, len, "%s", given);
        return;
    }
    const char *dir = RC_DEFAULT_STATE_DIR;
    depfs_config *cfg = calloc(1, sizeof *cfg);
    char err[256];
    if (cfg && config_load(config_path, cfg, err, sizeof err) == 0 && cfg->recovery_data_dir[0])
        dir = cfg->recovery_data_dir;
    if (snprintf(buf, len, "%s/depfs-reconstruct-%u.state", dir, server) >= (int)len)
        snprintf(buf, len, "%s/depfs-reconstruct-%u.state", RC_DEFAULT_STATE_DIR, server);
    free(cfg);
}

/* ------------------------------------------------------------ file list */

static int rc_collect(void *arg, uint64_t ino, uint64_t size)
{
    rc_ctx *c = arg;
    if (rc_is_done(c, ino))
        return 0;
    if (c->nfiles == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        rc_file *v = realloc(c->files, cap * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        c->files = v;
        c->cap = cap;
    }
    c->files[c->nfiles++] = (rc_file){.ino = ino, .size = size};
    return 0;
}

/* Bytes the server holds of each file: one whole unit per stripe. */
static void rc_sizes(rc_ctx *c)
{
    c->total_bytes = 0;
    for (size_t i = 0; i < c->nfiles; i++) {
        depfs_layout_info li;
        rc_file *f = &c->files[i];
        if (depfs_get_layout(c->fs, f->ino, &li) == 0 && li.k > 0) {
            uint64_t sb = (uint64_t)li.k * li.stripe_unit;
            f->unit_bytes = (f->size + sb - 1) / sb * li.stripe_unit;
        }
        c->total_bytes += f->unit_bytes;
    }
}

/* ----------------------------------------------------------- throttling */

/* Take n bytes from the bucket, sleeping off any debt. */
static void rc_throttle(rc_ctx *c, uint64_t n)
{
    if (c->rate_bps <= 0)
        return;
    pthread_mutex_lock(&c->lock);
    uint64_t now_ms = clock_now_ms();
    double burst = c->rate_bps * RC_BURST_S;
    c->tokens += (double)(now_ms - c->tokens_ms) * c->rate_bps / RC_MS_PER_S;
    if (c->tokens > burst)
        c->tokens = burst;
    c->tokens_ms = now_ms;
    c->tokens -= (double)n;
    double debt = c->tokens < 0 ? -c->tokens : 0;
    pthread_mutex_unlock(&c->lock);
    if (debt > 0)
        clock_sleep_ms((uint64_t)(debt * RC_MS_PER_S / c->rate_bps));
}

typedef struct rc_file_progress {
    rc_ctx *c;
    uint64_t last;
} rc_file_progress;

static int rc_on_progress(void *arg, uint64_t bytes_done)
{
    rc_file_progress *p = arg;
    uint64_t delta = bytes_done > p->last ? bytes_done - p->last : 0;
    p->last = bytes_done;
    atomic_fetch_add(&p->c->bytes_done, delta);
    rc_throttle(p->c, delta);
    return atomic_load(&p->c->abort) ? 1 : 0;
}

/* --------------------------------------------------------------- workers */

static void rc_fail(rc_ctx *c, uint64_t ino, int rc)
{
    pthread_mutex_lock(&c->lock);
    if (c->first_err == 0) {
        c->first_err = rc;
        snprintf(c->first_err_text, sizeof c->first_err_text, "inode %llu: %s (%s)",
                 (unsigned long long)ino, strerror(-rc), depfs_last_error());
    }
    pthread_mutex_unlock(&c->lock);
}

static void *rc_worker(void *arg)
{
    rc_ctx *c = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->nfiles || atomic_load(&c->abort))
            break;
        rc_file_progress p = {.c = c};
        int rc = depfs_rebuild_file(c->fs, c->files[i].ino, c->server, rc_on_progress, &p);
        /* a file removed meanwhile has nothing left to rebuild */
        if (rc == 0 || rc == -ENOENT) {
            rc_state_record(c, c->files[i].ino);
            if (p.last < c->files[i].unit_bytes) /* shrunk or gone: keep the total honest */
                atomic_fetch_add(&c->bytes_done, c->files[i].unit_bytes - p.last);
            atomic_fetch_add(&c->files_done, 1);
        } else {
            rc_fail(c, c->files[i].ino, rc);
        }
    }
    atomic_fetch_sub(&c->workers_left, 1);
    return NULL;
}

/* ------------------------------------------------------------- progress */

static void rc_human(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "BKMGTPE";
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(units) - 1) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void rc_report(rc_ctx *c, bool tty, bool final)
{
    uint64_t done = atomic_load(&c->bytes_done), total = c->total_bytes;
    if (done > total)
        total = done;
    double secs = (double)(clock_now_ms() - c->start_ms) / RC_MS_PER_S;
    double mbps = secs > 0 ? (double)done / RC_BYTES_PER_MB / secs : 0;
    double frac = total ? (double)done / (double)total : 1.0;
    unsigned eta_s = mbps > 0 ? (unsigned)((double)(total - done) / RC_BYTES_PER_MB / mbps) : 0;
    char d[32], t[32];
    rc_human(d, sizeof d, done);
    rc_human(t, sizeof t, total);
    if (tty) {
        char bar[RC_BAR_WIDTH + 1];
        unsigned fill = (unsigned)(frac * RC_BAR_WIDTH);
        for (unsigned i = 0; i < RC_BAR_WIDTH; i++)
            bar[i] = i < fill ? '#' : '-';
        bar[RC_BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %5.1f%% %s/%s %.1f MB/s ETA %u:%02u files %zu/%zu%s", bar,
                frac * RC_PERCENT, d, t, mbps, eta_s / RC_S_PER_MIN, eta_s % RC_S_PER_MIN,
                atomic_load(&c->files_done), c->nfiles, final ? "\n" : "  ");
    } else {
        fprintf(stderr, "%s: reconstruct server %u: %.1f%% %s/%s %.1f MB/s ETA %u:%02u files %zu/%zu\n",
                CLI_PROG, c->server, frac * RC_PERCENT, d, t, mbps, eta_s / RC_S_PER_MIN,
                eta_s % RC_S_PER_MIN, atomic_load(&c->files_done), c->nfiles);
    }
    fflush(stderr);
}

/* Bytes/s lately: the rate since the previous report, smoothed (weight
 * RC_RATE_EMA_NEW) over earlier ones; 0 (unknown) at the first report. */
static uint64_t rc_rate_bps(rc_ctx *c, uint64_t done)
{
    uint64_t now_ms = clock_now_ms();
    if (c->pub_ms != 0 && now_ms > c->pub_ms) {
        double recent = (double)(done - c->pub_done) * RC_MS_PER_S / (double)(now_ms - c->pub_ms);
        c->pub_rate = c->pub_rate > 0 ? RC_RATE_EMA_NEW * recent + (1.0 - RC_RATE_EMA_NEW) * c->pub_rate
                                      : recent;
    }
    c->pub_ms = now_ms;
    c->pub_done = done;
    return (uint64_t)c->pub_rate;
}

/* Progress to the MDS for `depfs status`; `running` false: the final word
 * (no rate, so no ETA, once nothing moves). Failures only warn. */
static void rc_publish(rc_ctx *c, bool running)
{
    uint64_t done = atomic_load(&c->bytes_done), total = c->total_bytes;
    if (done > total)
        total = done;
    int rc = depfs_report_progress(c->fs, c->server, done, total,
                                   running ? rc_rate_bps(c, done) : 0);
    if (rc < 0 && !c->publish_failed)
        fprintf(stderr, "%s: reconstruct server %u: cannot report progress to the MDS: %s (%s)\n",
                CLI_PROG, c->server, strerror(-rc), depfs_last_error());
    c->publish_failed = rc < 0;
}

static int rc_run_workers(rc_ctx *c, unsigned jobs)
{
    pthread_t th[RC_JOBS_MAX];
    unsigned started = 0;
    atomic_store(&c->workers_left, jobs);
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, rc_worker, c) != 0)
            break;
    atomic_fetch_sub(&c->workers_left, jobs - started);
    if (started == 0)
        return -EAGAIN;
    bool tty = isatty(STDERR_FILENO);
    uint64_t period_ms = tty ? RC_TTY_PERIOD_MS : RC_LINE_PERIOD_MS, last_ms = clock_now_ms();
    uint64_t published_ms = last_ms;
    rc_publish(c, true);
    while (atomic_load(&c->workers_left) > 0) {
        clock_sleep_ms(RC_TTY_PERIOD_MS);
        if (clock_now_ms() - last_ms >= period_ms) {
            rc_report(c, tty, false);
            last_ms = clock_now_ms();
        }
        if (clock_now_ms() - published_ms >= RC_PUBLISH_PERIOD_MS) {
            rc_publish(c, true);
            published_ms = clock_now_ms();
        }
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    rc_report(c, tty, true);
    rc_publish(c, false);
    return 0;
}

/* ----------------------------------------------------------------- main */

/* The server says it is RECONSTRUCTING and the MDS has not heard yet (no
 * depfs-recovery, or not its turn yet): tell it, so every client and
 * `depfs status` see the reconstruction from the start. */
static void rc_mds_reconstructing(depfs_t *fs, const depfs_server_status *st)
{
    if (!st->reachable || st->state != DEPFS_SERVER_RECONSTRUCTING ||
        st->mds_state == DEPFS_SERVER_RECONSTRUCTING)
        return;
    int rc = depfs_set_server_state(fs, st->id, DEPFS_SERVER_RECONSTRUCTING);
    if (rc < 0)
        fprintf(stderr, "%s: reconstruct server %u: cannot set its MDS state: %s (%s)\n", CLI_PROG,
                st->id, strerror(-rc), depfs_last_error());
}

/* 0 when the server may be reconstructed (not plainly up). */
static int rc_check_server(depfs_t *fs, uint32_t server)
{
    depfs_server_status *v = calloc(RC_SERVER_STATUS_MAX, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    int n = depfs_cluster_status(fs, v, RC_SERVER_STATUS_MAX);
    int rc = -ENOENT;
    for (int i = 0; i < n && i < (int)RC_SERVER_STATUS_MAX; i++) {
        if (v[i].id != server)
            continue;
        rc = 0;
        if (v[i].state == DEPFS_SERVER_UP && v[i].reachable) {
            cli_err("I/O server %u is up; reconstruct a replacement started with "
                    "'depfs-ioserver --id %u --reconstruct' on an empty data directory",
                    server, server);
            rc = -EBUSY;
        } else {
            rc_mds_reconstructing(fs, &v[i]);
        }
    }
    if (rc == -ENOENT)
        cli_err("no I/O server with id %u in the cluster", server);
    free(v);
    return n < 0 ? n : rc;
}

static int rc_parse_args(int argc, char **argv, const char **config_path, uint32_t *server,
                         double *rate_mbps, bool *restart, const char **state_file, unsigned *jobs)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"rate", required_argument, NULL, 'r'},
        {"restart", no_argument, NULL, 'R'},
        {"state-file", required_argument, NULL, 's'},
        {"jobs", required_argument, NULL, 'J'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    char *end;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:hr:Rs:J:", opts, NULL)) != -1) {
        switch (ch) {
        case CLI_OPT_CONFIG: *config_path = optarg; break;
        case CLI_OPT_HELP: rc_usage(stdout); return 1;
        case 'r':
            *rate_mbps = strtod(optarg, &end);
            if (*end != '\0' || *rate_mbps <= 0)
                return cli_usage_err(RC_CMD, "--rate needs a positive number of MB/s: '%s'", optarg);
            break;
        case 'R': *restart = true; break;
        case 's': *state_file = optarg; break;
        case 'J': {
            unsigned long j = strtoul(optarg, &end, 10);
            if (*end != '\0' || j == 0 || j > RC_JOBS_MAX)
                return cli_usage_err(RC_CMD, "--jobs needs 1..%u: '%s'", RC_JOBS_MAX, optarg);
            *jobs = (unsigned)j;
            break;
        }
        case ':': return cli_usage_err(RC_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(RC_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_err(RC_CMD, "missing SERVER");
    if (optind + 1 < argc)
        return cli_usage_err(RC_CMD, "unexpected argument '%s'", argv[optind + 1]);
    unsigned long id = strtoul(argv[optind], &end, 10);
    if (*end != '\0' || end == argv[optind] || id > UINT32_MAX)
        return cli_usage_err(RC_CMD, "SERVER must be an I/O server id: '%s'", argv[optind]);
    *server = (uint32_t)id;
    return 0;
}

static int rc_finish(rc_ctx *c, const char *state_path)
{
    if (c->first_err != 0) {
        cli_err("reconstruct of server %u: %s; re-run to resume (state in %s)", c->server,
                c->first_err_text, state_path);
        return CLI_EXIT_FAIL;
    }
    int rc = depfs_server_rejoin(c->fs, c->server, NULL, NULL);
    if (rc < 0) {
        cli_err_rc(rc, "server %u: rejoin failed; re-run to retry (state in %s)", c->server,
                   state_path);
        return CLI_EXIT_FAIL;
    }
    if (c->state) {
        fclose(c->state);
        c->state = NULL;
    }
    unlink(state_path);
    double secs = (double)(clock_now_ms() - c->start_ms) / RC_MS_PER_S;
    uint64_t bytes = atomic_load(&c->bytes_done);
    printf("reconstructed server %u: %zu files, %" PRIu64 " bytes in %.1f s (%.1f MB/s); it is up\n",
           c->server, c->nfiles, bytes, secs,
           secs > 0 ? (double)bytes / RC_BYTES_PER_MB / secs : 0.0);
    return CLI_EXIT_OK;
}

int cli_cmd_reconstruct(int argc, char **argv, const char *config_path)
{
    uint32_t server = 0;
    double rate_mbps = 0;
    bool restart = false;
    const char *state_file = NULL;
    unsigned jobs = RC_JOBS_DEFAULT;
    int prc = rc_parse_args(argc, argv, &config_path, &server, &rate_mbps, &restart, &state_file,
                            &jobs);
    if (prc != 0)
        return prc == 1 ? CLI_EXIT_OK : prc;
    rc_ctx c = {.server = server, .rate_bps = rate_mbps * RC_BYTES_PER_MB};
    pthread_mutex_init(&c.lock, NULL);
    char state_path[CLI_PATH_MAX];
    rc_state_path(state_path, sizeof state_path, config_path, state_file, server);
    int ret = CLI_EXIT_FAIL;
    if (cli_connect(config_path, &c.fs) < 0)
        goto out;
    if (rc_check_server(c.fs, server) < 0 || rc_state_open(&c, state_path, restart) < 0)
        goto out;
    c.start_ms = c.tokens_ms = clock_now_ms();
    int rc = depfs_files_on_server(c.fs, server, rc_collect, &c);
    if (rc < 0) {
        cli_err_rc(rc, "listing the files on server %u", server);
        goto out;
    }
    rc_sizes(&c);
    fprintf(stderr, "%s: reconstruct server %u: %zu files to rebuild (%zu done before), %" PRIu64
                    " bytes\n",
            CLI_PROG, server, c.nfiles, c.ndone, c.total_bytes);
    rc = rc_run_workers(&c, jobs);
    if (rc < 0) {
        cli_err_rc(rc, "cannot start workers");
        goto out;
    }
    ret = rc_finish(&c, state_path);
out:
    if (c.state)
        fclose(c.state);
    if (c.fs)
        depfs_unmount(c.fs);
    free(c.files);
    free(c.done_inos);
    pthread_mutex_destroy(&c.lock);
    return ret;
}
