/* status_prom.c - the cluster status as OpenMetrics text (status_prom.h). */
#include "status_prom.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

#define MS_PER_S 1000u

typedef enum prom_type { PROM_GAUGE, PROM_COUNTER } prom_type;

/* A per-server metric read from a uint64_t field of depfs_server_status. */
typedef struct prom_metric {
    const char *name;  /* family name; a counter's samples add _total */
    prom_type type;
    const char *help;
    size_t offset;     /* of the uint64_t field */
    unsigned divisor;  /* 1, or MS_PER_S for a field in ms shown in seconds */
} prom_metric;

/* The offset of a uint64_t field (any other type does not compile). */
#define FIELD(f)                                                                   \
    (offsetof(depfs_server_status, f) +                                            \
     0 * sizeof(_Generic(((depfs_server_status *)0)->f, uint64_t: 1)))

static const prom_metric server_metrics[] = {
    { "depfs_server_used_bytes", PROM_GAUGE, "Bytes of strip files on the server",
      FIELD(bytes_used), 1 },
    { "depfs_server_free_bytes", PROM_GAUGE, "Bytes free in the server's data directory",
      FIELD(bytes_free), 1 },
    { "depfs_server_locks_held", PROM_GAUGE, "Stripe locks held now", FIELD(locks_held), 1 },
    { "depfs_server_locks_waiting", PROM_GAUGE,
      "Lock requests waiting at the server for their stripes now", FIELD(locks_waiting), 1 },
    { "depfs_server_locks_granted", PROM_COUNTER, "Stripe locks granted since the server started",
      FIELD(locks_granted), 1 },
    { "depfs_server_locks_nacked", PROM_COUNTER,
      "Lock requests refused (NACK: another owner held a stripe) since the server started",
      FIELD(locks_nacked), 1 },
    { "depfs_server_locks_retried", PROM_COUNTER,
      "Lock requests that were retries after a NACK, since the server started",
      FIELD(locks_retried), 1 },
    { "depfs_server_lock_hold_seconds", PROM_COUNTER,
      "Time stripe locks were held, summed over the locks released, since the server started",
      FIELD(lock_hold_ms_total), MS_PER_S },
    { "depfs_server_degraded_files", PROM_GAUGE,
      "Files with units missing on the server (the MDS's count)", FIELD(degraded_files), 1 },
    { "depfs_server_rebuild_done_bytes", PROM_GAUGE,
      "Bytes rebuilt so far by the running rebuild or reconstruction (0: none)",
      FIELD(rebuild_done_bytes), 1 },
    { "depfs_server_rebuild_total_bytes", PROM_GAUGE,
      "Bytes the running rebuild or reconstruction has to rebuild (0: none)",
      FIELD(rebuild_total_bytes), 1 },
    { "depfs_server_rebuild_rate_bytes_per_second", PROM_GAUGE,
      "Rate of the running rebuild or reconstruction as last reported (0: unknown)",
      FIELD(rebuild_rate_bps), 1 },
    { "depfs_server_damaged_blocks", PROM_COUNTER,
      "Blocks the server's reads found damaged (checksum mismatch) since it started",
      FIELD(damaged_blocks), 1 },
    { "depfs_server_scrub_verified_bytes", PROM_COUNTER,
      "Bytes the background scrub verified since the server started",
      FIELD(scrub_bytes_verified), 1 },
    { "depfs_server_scrub_damaged_blocks", PROM_COUNTER,
      "Damaged ranges and lost strip files the background scrub found since the server started",
      FIELD(scrub_blocks_damaged), 1 },
    { "depfs_server_scrub_repaired_blocks", PROM_COUNTER,
      "Damaged ranges found by the scrub and rewritten since the server started",
      FIELD(scrub_blocks_repaired), 1 },
    { "depfs_server_scrub_passes", PROM_COUNTER,
      "Full passes of the background scrub since the server started", FIELD(scrub_passes), 1 },
    { "depfs_server_scrub_last_pass_bytes", PROM_GAUGE,
      "Bytes the last full scrub pass verified (0: none yet)", FIELD(scrub_last_pass_bytes), 1 },
    { "depfs_server_scrub_last_pass_seconds", PROM_GAUGE,
      "How long the last full scrub pass took (0: none yet)", FIELD(scrub_last_pass_ms),
      MS_PER_S },
    { "depfs_server_scrub_last_pass_end_timestamp_seconds", PROM_GAUGE,
      "When the last full scrub pass ended, seconds since the epoch (0: none yet)",
      FIELD(scrub_last_pass_end_s), 1 },
};

static void family(FILE *out, const char *name, prom_type type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
            type == PROM_COUNTER ? "counter" : "gauge");
}

/* A label value with \, " and newline escaped. */
static void label_value(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

/* name[_total]{id="..",address=".."[,state=".."]} (the value follows). */
static void sample_start(FILE *out, const char *name, prom_type type, const depfs_server_status *s,
                         const char *state)
{
    fprintf(out, "%s%s{id=\"%u\",address=\"", name, type == PROM_COUNTER ? "_total" : "",
            (unsigned)s->id);
    label_value(out, s->address);
    fputc('"', out);
    if (state)
        fprintf(out, ",state=\"%s\"", state);
    fputs("} ", out);
}

static void value(FILE *out, uint64_t v, unsigned divisor)
{
    if (divisor <= 1)
        fprintf(out, "%llu\n", (unsigned long long)v);
    else
        fprintf(out, "%llu.%03llu\n", (unsigned long long)(v / divisor),
                (unsigned long long)((v % divisor) * MS_PER_S / divisor));
}

/* One sample per server and state, 1 for the state it is in: a gauge
 * (the text format has no stateset). */
static void states(FILE *out, const char *name, const char *help, const depfs_server_status *v,
                   unsigned n, bool mds_view)
{
    family(out, name, PROM_GAUGE, help);
    for (unsigned i = 0; i < n; i++)
        for (uint32_t st = 0; st <= DEPFS_SERVER_STATE_MAX; st++) {
            int now = mds_view ? v[i].mds_state : v[i].state;
            sample_start(out, name, PROM_GAUGE, &v[i], depfs_state_name(st));
            value(out, now >= 0 && (uint32_t)now == st, 1);
        }
}

static uint64_t is_up(const depfs_server_status *s) { return s->state == DEPFS_SERVER_UP; }
static uint64_t is_reachable(const depfs_server_status *s) { return s->reachable; }
static uint64_t scrub_rate(const depfs_server_status *s) { return s->scrub_rate; }

/* The per-server gauges that are not a uint64_t field as they are. */
static const struct {
    const char *name, *help;
    uint64_t (*get)(const depfs_server_status *s);
} server_gauges[] = {
    { "depfs_server_up", "1 when the server is up (its own word, else the MDS's)", is_up },
    { "depfs_server_reachable", "1 when this client reached the server", is_reachable },
    { "depfs_server_scrub_rate_bytes_per_second", "The background scrub's configured rate (0: off)",
      scrub_rate },
};

static void server_flags(FILE *out, const depfs_server_status *v, unsigned n)
{
    for (size_t g = 0; g < sizeof(server_gauges) / sizeof(server_gauges[0]); g++) {
        family(out, server_gauges[g].name, PROM_GAUGE, server_gauges[g].help);
        for (unsigned i = 0; i < n; i++) {
            sample_start(out, server_gauges[g].name, PROM_GAUGE, &v[i], NULL);
            value(out, server_gauges[g].get(&v[i]), 1);
        }
    }
}

static void cluster_counts(FILE *out, const depfs_server_status *v, unsigned n)
{
    family(out, "depfs_cluster_servers", PROM_GAUGE, "I/O servers by state");
    for (uint32_t st = 0; st <= DEPFS_SERVER_STATE_MAX; st++) {
        unsigned count = 0;
        for (unsigned i = 0; i < n; i++)
            count += v[i].state >= 0 && (uint32_t)v[i].state == st;
        fprintf(out, "depfs_cluster_servers{state=\"%s\"} %u\n", depfs_state_name(st), count);
    }
}

/* The MDS's purge queue: files unlinked whose strip files are not yet
 * removed, and their bytes. */
static void purge_queue(FILE *out, const depfs_purge_status *purge)
{
    family(out, "depfs_purge_queue_files", PROM_GAUGE,
           "Files unlinked whose strip files are not removed yet (open somewhere, or waiting "
           "for depfs-recovery)");
    fputs("depfs_purge_queue_files ", out);
    value(out, purge->files, 1);
    family(out, "depfs_purge_queue_bytes", PROM_GAUGE, "The sizes of those files");
    fputs("depfs_purge_queue_bytes ", out);
    value(out, purge->bytes, 1);
    family(out, "depfs_purge_floor_seconds", PROM_GAUGE,
           "Files unlinked now are kept until this time (seconds since the epoch; 0: no such "
           "floor): handles the MDS cannot name, from before its restart or past a full holds "
           "table, may still use them");
    fputs("depfs_purge_floor_seconds ", out);
    value(out, purge->floor_s, 1);
}

void status_print_prometheus(FILE *out, const depfs_server_status *v, unsigned n,
                             const depfs_purge_status *purge)
{
    states(out, "depfs_server_state", "The server's state (its own word, else the MDS's): 1 for "
           "the state it is in", v, n, false);
    states(out, "depfs_server_mds_state", "The state the MDS holds for the server: 1 for the "
           "state it is in", v, n, true);
    server_flags(out, v, n);
    for (size_t m = 0; m < sizeof(server_metrics) / sizeof(server_metrics[0]); m++) {
        const prom_metric *pm = &server_metrics[m];
        family(out, pm->name, pm->type, pm->help);
        for (unsigned i = 0; i < n; i++) {
            uint64_t field;
            memcpy(&field, (const char *)&v[i] + pm->offset, sizeof(field));
            sample_start(out, pm->name, pm->type, &v[i], NULL);
            value(out, field, pm->divisor);
        }
    }
    cluster_counts(out, v, n);
    purge_queue(out, purge);
    fputs("# EOF\n", out);
}
