/* status.c - `depfs status [--json|--prometheus]`: every I/O server's state (up, down,
 * rebuilding, reconstructing: its own word, or the MDS's when it cannot be
 * reached), the MDS's state, degraded files and rebuild progress, whether
 * this client reaches it, space used/free and stripe lock counters, from
 * depfs_cluster_status, plus cluster totals and the MDS's purge queue
 * (depfs_purge_queue). */
#include "cli.h"
#include "json.h"
#include "status_prom.h"
#include "wire.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATUS_CMD "status"
#define STATUS_OPT_PROMETHEUS 'p'
#define STATUS_INITIAL_SERVERS 256u
#define SIZE_TEXT_MAX 32u
#define BYTES_PER_KIB 1024.0

#define PERCENT 100.0
#define RECOVERY_TEXT_MAX 192u /* fits the longest recovery_text with SPEED_TEXT_MAX */
#define SPEED_TEXT_MAX 64u
#define BYTES_PER_MB 1e6 /* rates in MB/s, like depfs reconstruct */
#define SECONDS_PER_MIN 60u
#define CLOCK_TEXT_MAX 32u /* "2026-11-25 12:34:56" */

typedef struct status_totals {
    unsigned servers, up, down, rebuilding, reconstructing, reachable;
    uint64_t degraded_files;
    uint64_t bytes_used, bytes_free;
    uint64_t locks_granted, locks_nacked, locks_retried, locks_held, lock_hold_ms_total;
    uint64_t locks_waiting;
    uint64_t damaged_blocks;
    uint64_t scrub_bytes_verified, scrub_blocks_damaged, scrub_blocks_repaired;
    depfs_purge_status purge; /* the MDS's purge queue */
} status_totals;

static void status_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s status [--json | --prometheus]\n"
            "\n"
            "Show each I/O server: id, address, state (up, down, rebuilding,\n"
            "reconstructing; from the MDS when the server cannot be reached), the\n"
            "state the MDS holds, degraded files and rebuild progress (RECOVERY: percent,\n"
            "bytes done/total, rate and ETA while a rebuild or reconstruction runs), whether\n"
            "this client reaches it, bytes used and free, and its stripe-lock counters\n"
            "(granted, nacked, retried after a NACK, currently held, total hold time\n"
            "in ms); then each server's background scrub (rate, bytes verified, damaged\n"
            "ranges found and repaired since it started, full passes, when the last one\n"
            "ended); then totals, and the MDS's purge queue: files unlinked whose strip\n"
            "files are not removed yet (open somewhere, or waiting for depfs-recovery)\n"
            "and their bytes, and until when files unlinked now are kept whatever\n"
            "their handles (after a crash of the MDS's machine, whose holds journal\n"
            "may have lost some: a capability's life; or past a full holds table).\n"
            "\n"
            "Options:\n"
            "  -c, --config PATH  cluster config\n"
            "  -j, --json         print JSON\n"
            "  -p, --prometheus   print OpenMetrics text (for node_exporter's textfile\n"
            "                     collector; README \"Monitoring\" lists the metrics)\n"
            "  -h, --help         show this help\n",
            CLI_PROG);
}

/* 1536 -> "1.5K", like df -h. */
static void human_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "BKMGTPE";
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= BYTES_PER_KIB && u + 1 < sizeof(units) - 1) {
        v /= BYTES_PER_KIB;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%lluB", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f%c", v, units[u]);
}

static void add_totals(status_totals *t, const depfs_server_status *s)
{
    t->servers++;
    t->up += s->state == DEPFS_SERVER_UP;
    t->down += s->state == DEPFS_SERVER_DOWN;
    t->rebuilding += s->state == DEPFS_SERVER_REBUILDING;
    t->reconstructing += s->state == DEPFS_SERVER_RECONSTRUCTING;
    t->reachable += s->reachable;
    t->degraded_files += s->degraded_files;
    t->bytes_used += s->bytes_used;
    t->bytes_free += s->bytes_free;
    t->locks_granted += s->locks_granted;
    t->locks_nacked += s->locks_nacked;
    t->locks_retried += s->locks_retried;
    t->locks_held += s->locks_held;
    t->locks_waiting += s->locks_waiting;
    t->damaged_blocks += s->damaged_blocks;
    t->lock_hold_ms_total += s->lock_hold_ms_total;
    t->scrub_bytes_verified += s->scrub_bytes_verified;
    t->scrub_blocks_damaged += s->scrub_blocks_damaged;
    t->scrub_blocks_repaired += s->scrub_blocks_repaired;
}

/* Seconds left at the reported rate; false when unknown (no rate). */
static bool rebuild_eta_s(const depfs_server_status *s, uint64_t *eta)
{
    if (s->rebuild_rate_bps == 0 || s->rebuild_total_bytes == 0)
        return false;
    uint64_t left = s->rebuild_total_bytes > s->rebuild_done_bytes
                        ? s->rebuild_total_bytes - s->rebuild_done_bytes
                        : 0;
    *eta = (left + s->rebuild_rate_bps - 1) / s->rebuild_rate_bps;
    return true;
}

/* "-", "3 degraded" or "45% 1.2G/2.7G 1.1 MB/s ETA 0:12, 3 degraded": the
 * MDS's recovery view (rate and ETA while the rebuild reports a rate). */
static void recovery_text(char *buf, size_t len, const depfs_server_status *s)
{
    char done[SIZE_TEXT_MAX], total[SIZE_TEXT_MAX], speed[SPEED_TEXT_MAX] = "";
    uint64_t eta = 0;
    if (s->rebuild_total_bytes > 0) {
        human_bytes(done, sizeof(done), s->rebuild_done_bytes);
        human_bytes(total, sizeof(total), s->rebuild_total_bytes);
        if (rebuild_eta_s(s, &eta))
            snprintf(speed, sizeof(speed), " %.1f MB/s ETA %llu:%02llu",
                     (double)s->rebuild_rate_bps / BYTES_PER_MB,
                     (unsigned long long)(eta / SECONDS_PER_MIN),
                     (unsigned long long)(eta % SECONDS_PER_MIN));
        /* an integer percent (0..100) keeps the text's length bounded */
        double frac = (double)s->rebuild_done_bytes / (double)s->rebuild_total_bytes;
        unsigned pct = frac >= 1.0 ? (unsigned)PERCENT : (unsigned)(PERCENT * frac + 0.5);
        snprintf(buf, len, "%u%% %s/%s%s, %llu degraded", pct, done, total, speed,
                 (unsigned long long)s->degraded_files);
    } else if (s->degraded_files > 0) {
        snprintf(buf, len, "%llu degraded", (unsigned long long)s->degraded_files);
    } else {
        snprintf(buf, len, "-");
    }
}

/* "12:34:56" (UTC) of a wall-clock second, "-" for 0. */
static void clock_text(char *buf, size_t len, uint64_t s)
{
    time_t t = (time_t)s;
    struct tm tm;
    if (s == 0 || gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%F %T", &tm) == 0)
        snprintf(buf, len, "-");
}

static void print_scrub_text(const depfs_server_status *v, unsigned n)
{
    char rate[SIZE_TEXT_MAX], done[SIZE_TEXT_MAX], last[CLOCK_TEXT_MAX];
    printf("%-4s %10s %10s %8s %9s %7s  %s\n", "ID", "SCRUB_RATE", "VERIFIED", "DAMAGED",
           "REPAIRED", "PASSES", "LAST_PASS_END (UTC)");
    for (unsigned i = 0; i < n; i++) {
        const depfs_server_status *s = &v[i];
        if (s->scrub_rate == 0)
            snprintf(rate, sizeof rate, "off");
        else
            human_bytes(rate, sizeof rate, s->scrub_rate);
        human_bytes(done, sizeof done, s->scrub_bytes_verified);
        clock_text(last, sizeof last, s->scrub_last_pass_end_s);
        printf("%-4u %8s/s %10s %8llu %9llu %7llu  %s\n", s->id, rate, done,
               (unsigned long long)s->scrub_blocks_damaged,
               (unsigned long long)s->scrub_blocks_repaired, (unsigned long long)s->scrub_passes,
               last);
    }
}

static void print_text(const depfs_server_status *v, unsigned n, const status_totals *t)
{
    char used[SIZE_TEXT_MAX], freeb[SIZE_TEXT_MAX], rec[RECOVERY_TEXT_MAX];

    printf("%-4s %-22s %-14s %-14s %-5s %9s %9s %10s %8s %8s %6s %10s  %s\n", "ID", "ADDRESS",
           "STATE", "MDS_STATE", "REACH", "USED", "FREE", "GRANTED", "NACKED", "RETRIED", "HELD",
           "HOLD_MS", "RECOVERY");
    for (unsigned i = 0; i < n; i++) {
        const depfs_server_status *s = &v[i];
        human_bytes(used, sizeof(used), s->bytes_used);
        human_bytes(freeb, sizeof(freeb), s->bytes_free);
        recovery_text(rec, sizeof(rec), s);
        printf("%-4u %-22s %-14s %-14s %-5s %9s %9s %10llu %8llu %8llu %6llu %10llu  %s\n", s->id,
               s->address, depfs_state_name(s->state), depfs_state_name(s->mds_state),
               s->reachable ? "yes" : "no", used, freeb,
               (unsigned long long)s->locks_granted, (unsigned long long)s->locks_nacked,
               (unsigned long long)s->locks_retried, (unsigned long long)s->locks_held,
               (unsigned long long)s->lock_hold_ms_total, rec);
    }
    print_scrub_text(v, n);
    human_bytes(used, sizeof(used), t->bytes_used);
    human_bytes(freeb, sizeof(freeb), t->bytes_free);
    printf("total: %u servers (%u up, %u down, %u rebuilding, %u reconstructing, %u reachable), "
           "%llu degraded files, used %s, free %s, "
           "locks granted %llu, nacked %llu, retried %llu, held %llu, waiting %llu, hold %llu ms, "
           "damaged blocks read %llu, scrub verified %llu bytes, found %llu damaged, "
           "repaired %llu\n",
           t->servers, t->up, t->down, t->rebuilding, t->reconstructing, t->reachable,
           (unsigned long long)t->degraded_files, used, freeb,
           (unsigned long long)t->locks_granted, (unsigned long long)t->locks_nacked,
           (unsigned long long)t->locks_retried, (unsigned long long)t->locks_held,
           (unsigned long long)t->locks_waiting,
           (unsigned long long)t->lock_hold_ms_total, (unsigned long long)t->damaged_blocks,
           (unsigned long long)t->scrub_bytes_verified, (unsigned long long)t->scrub_blocks_damaged,
           (unsigned long long)t->scrub_blocks_repaired);
    human_bytes(used, sizeof(used), t->purge.bytes);
    printf("purge queue: %llu files, %s (%llu bytes) pending\n", (unsigned long long)t->purge.files,
           used, (unsigned long long)t->purge.bytes);
    if (t->purge.floor_s) {
        char until[CLOCK_TEXT_MAX];
        clock_text(until, sizeof(until), t->purge.floor_s);
        printf("purge floor: files unlinked now are kept until %s UTC (handles the MDS cannot "
               "name, from before its restart or past a full holds table, may still use "
               "them)\n", until);
    }
}

static void json_locks(cli_json *j, uint64_t granted, uint64_t nacked, uint64_t retried,
                       uint64_t held, uint64_t waiting, uint64_t hold_ms)
{
    cli_json_uint(j, "locks_granted", granted);
    cli_json_uint(j, "locks_nacked", nacked);
    cli_json_uint(j, "locks_retried", retried);
    cli_json_uint(j, "locks_held", held);
    cli_json_uint(j, "locks_waiting", waiting);
    cli_json_uint(j, "lock_hold_ms_total", hold_ms);
}

static void print_json(const depfs_server_status *v, unsigned n, const status_totals *t)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_object(&j, NULL);
    cli_json_begin_array(&j, "servers");
    for (unsigned i = 0; i < n; i++) {
        const depfs_server_status *s = &v[i];
        cli_json_begin_object(&j, NULL);
        cli_json_uint(&j, "id", s->id);
        cli_json_string(&j, "address", s->address);
        cli_json_string(&j, "state", depfs_state_name(s->state));
        cli_json_string(&j, "mds_state", depfs_state_name(s->mds_state));
        cli_json_bool(&j, "reachable", s->reachable);
        cli_json_uint(&j, "degraded_files", s->degraded_files);
        cli_json_uint(&j, "rebuild_done_bytes", s->rebuild_done_bytes);
        cli_json_uint(&j, "rebuild_total_bytes", s->rebuild_total_bytes);
        cli_json_uint(&j, "rebuild_rate_bps", s->rebuild_rate_bps);
        uint64_t eta = 0;
        if (rebuild_eta_s(s, &eta))
            cli_json_uint(&j, "rebuild_eta_s", eta);
        else
            cli_json_null(&j, "rebuild_eta_s");
        cli_json_uint(&j, "bytes_used", s->bytes_used);
        cli_json_uint(&j, "bytes_free", s->bytes_free);
        json_locks(&j, s->locks_granted, s->locks_nacked, s->locks_retried, s->locks_held,
                   s->locks_waiting, s->lock_hold_ms_total);
        cli_json_uint(&j, "damaged_blocks", s->damaged_blocks);
        cli_json_begin_object(&j, "scrub");
        cli_json_uint(&j, "rate", s->scrub_rate);
        cli_json_uint(&j, "bytes_verified", s->scrub_bytes_verified);
        cli_json_uint(&j, "blocks_damaged", s->scrub_blocks_damaged);
        cli_json_uint(&j, "blocks_repaired", s->scrub_blocks_repaired);
        cli_json_uint(&j, "passes", s->scrub_passes);
        cli_json_uint(&j, "last_pass_bytes", s->scrub_last_pass_bytes);
        cli_json_uint(&j, "last_pass_ms", s->scrub_last_pass_ms);
        if (s->scrub_last_pass_end_s)
            cli_json_uint(&j, "last_pass_end_s", s->scrub_last_pass_end_s);
        else
            cli_json_null(&j, "last_pass_end_s");
        cli_json_end_object(&j);
        cli_json_end_object(&j);
    }
    cli_json_end_array(&j);
    cli_json_begin_object(&j, "totals");
    cli_json_uint(&j, "servers", t->servers);
    cli_json_uint(&j, "up", t->up);
    cli_json_uint(&j, "down", t->down);
    cli_json_uint(&j, "rebuilding", t->rebuilding);
    cli_json_uint(&j, "reconstructing", t->reconstructing);
    cli_json_uint(&j, "reachable", t->reachable);
    cli_json_uint(&j, "degraded_files", t->degraded_files);
    cli_json_uint(&j, "bytes_used", t->bytes_used);
    cli_json_uint(&j, "bytes_free", t->bytes_free);
    json_locks(&j, t->locks_granted, t->locks_nacked, t->locks_retried, t->locks_held,
               t->locks_waiting, t->lock_hold_ms_total);
    cli_json_uint(&j, "damaged_blocks", t->damaged_blocks);
    cli_json_uint(&j, "scrub_bytes_verified", t->scrub_bytes_verified);
    cli_json_uint(&j, "scrub_blocks_damaged", t->scrub_blocks_damaged);
    cli_json_uint(&j, "scrub_blocks_repaired", t->scrub_blocks_repaired);
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "purge_queue");
    cli_json_uint(&j, "files", t->purge.files);
    cli_json_uint(&j, "bytes", t->purge.bytes);
    cli_json_uint(&j, "floor_s", t->purge.floor_s);
    cli_json_end_object(&j);
    cli_json_end_object(&j);
    cli_json_finish(&j);
}

/* Fetches the status of every server into a malloc'd array. */
static int fetch(depfs_t *fs, depfs_server_status **out, unsigned *count)
{
    unsigned cap = STATUS_INITIAL_SERVERS;
    for (;;) {
        depfs_server_status *v = calloc(cap, sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        int rc = depfs_cluster_status(fs, v, cap);
        if (rc < 0) {
            free(v);
            return rc;
        }
        if ((unsigned)rc <= cap) {
            *out = v;
            *count = (unsigned)rc;
            return 0;
        }
        free(v);
        cap = (unsigned)rc; /* the cluster grew past our guess: ask again */
    }
}

int cli_cmd_status(int argc, char **argv, const char *config_path)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, CLI_OPT_CONFIG},
        {"help", no_argument, NULL, CLI_OPT_HELP},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"prometheus", no_argument, NULL, STATUS_OPT_PROMETHEUS},
        {NULL, 0, NULL, 0},
    };
    bool json = false, prometheus = false;
    depfs_t *fs = NULL;
    depfs_server_status *v = NULL;
    unsigned n = 0;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:hjp", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_CONFIG: config_path = optarg; break;
        case CLI_OPT_HELP: status_usage(stdout); return CLI_EXIT_OK;
        case CLI_OPT_JSON: json = true; break;
        case STATUS_OPT_PROMETHEUS: prometheus = true; break;
        case ':': return cli_usage_err(STATUS_CMD, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage_err(STATUS_CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc)
        return cli_usage_err(STATUS_CMD, "unexpected argument '%s'", argv[optind]);
    if (json && prometheus)
        return cli_usage_err(STATUS_CMD, "--json and --prometheus exclude each other");
    if (cli_connect(config_path, &fs) < 0)
        return CLI_EXIT_FAIL;
    status_totals t;
    memset(&t, 0, sizeof(t));
    int rc = fetch(fs, &v, &n);
    if (rc < 0) {
        cli_err_rc(rc, "cannot get the cluster status");
        depfs_unmount(fs);
        return CLI_EXIT_FAIL;
    }
    rc = depfs_purge_queue(fs, &t.purge);
    if (rc < 0) {
        cli_err_rc(rc, "cannot get the purge queue");
        free(v);
        depfs_unmount(fs);
        return CLI_EXIT_FAIL;
    }
    depfs_unmount(fs);
    for (unsigned i = 0; i < n; i++)
        add_totals(&t, &v[i]);
    if (json)
        print_json(v, n, &t);
    else if (prometheus)
        status_print_prometheus(stdout, v, n, &t.purge);
    else
        print_text(v, n, &t);
    free(v);
    return CLI_EXIT_OK;
}
