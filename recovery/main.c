/* main.c - depfs-recovery: the stateless recovery daemon (recovery/README.md,
 * rec.h). Probers heartbeat every I/O server in parallel; this thread runs
 * a decision round whenever a prober sees a change, and at least every
 * t_HB; rejoins and orphan repairs run on worker threads.
 *
 *   depfs-recovery [--config PATH] [--once] [--log-level err|warn|info|debug]
 *
 * --once: one heartbeat of every server, one decision round, then wait for
 * the rejoins and repairs it started and exit (for tests and cron).
 * SIGTERM/SIGINT: clean stop (a running rejoin is cancelled between files). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "rec.h"

#define REC_PROG "depfs-recovery"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: %s [--config PATH] [--once] [--log-level err|warn|info|debug]\n"
               "Heartbeats every I/O server, keeps their states (up/down/rebuilding/\n"
               "reconstructing) and the cluster epoch at the MDS, rejoins servers that\n"
               "come back, and repairs the orphan locks of dead clients.\n"
               "Run one per cluster. --once: one round, then wait for its work and exit.\n",
            REC_PROG);
}

/* Waits for a prober's news or the period, waking on a stop request. */
static void wait_for_news(rec_ctx *c, unsigned period_ms)
{
    struct timespec ts = clock_deadline_after_ms(period_ms);
    pthread_mutex_lock(&c->mu);
    while (!c->wake && !stop_requested)
        if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT)
            break;
    c->wake = false;
    pthread_mutex_unlock(&c->mu);
}

static int run_once(rec_ctx *c)
{
    int rc = rec_probers_start(c);
    for (unsigned i = 0; i < c->nservers; i++)
        if (c->servers[i].prober_started) {
            pthread_join(c->servers[i].prober, NULL);
            c->servers[i].prober_started = false;
        }
    if (rc)
        return rc;
    rec_decide_round(c);
    rec_workers_drain(c);
    return 0;
}

static int run_daemon(rec_ctx *c)
{
    int rc = rec_probers_start(c);
    if (rc)
        return rc;
    /* the stop signal must wake the condition wait: poll it at least this often */
    unsigned period_ms = c->cfg->heartbeat_period_ms;
    while (!stop_requested) {
        wait_for_news(c, period_ms);
        if (stop_requested)
            break;
        rec_decide_round(c);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *config_path = NULL;
    enum dlog_level level = DLOG_INFO;
    bool once = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            config_path = argv[++i];
        } else if (!strcmp(argv[i], "--once")) {
            once = true;
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            if (dlog_level_parse(argv[++i], &level)) {
                fprintf(stderr, "%s: bad --log-level '%s'\n", REC_PROG, argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    static depfs_config cfg; /* large: keep it off the stack */
    if (daemon_start(REC_PROG, level, config_path, &cfg) < 0)
        return 1;
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    static rec_ctx rc;
    if (rec_init(&rc, &cfg, once) != 0) {
        log_err("out of memory");
        return 1;
    }
    log_info("watching %u I/O servers: heartbeat every %u ms, timeout %u ms (detection bound "
             "%u ms), lock lease %u ms", rc.nservers, cfg.heartbeat_period_ms,
             cfg.request_timeout_ms, cfg.heartbeat_period_ms + 2 * cfg.request_timeout_ms,
             cfg.lock_lease_ms);
    int status = rec_workers_start(&rc);
    if (status == 0 && !once)
        status = rec_purger_start(&rc);
    if (status == 0)
        status = once ? run_once(&rc) : run_daemon(&rc);
    if (status)
        log_err("cannot start threads: %s", strerror(-status));
    log_info("stopping");
    rec_purger_stop(&rc);
    rec_fini(&rc);
    return status ? 1 : 0;
}
