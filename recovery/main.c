/* main.c - depfs-recovery: the stateless recovery daemon. Any number may
 * run; each heartbeats every I/O server and reports health to the MDS. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "heartbeat.h"
#include "log.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: depfs-recovery --config PATH [--log-level err|warn|info|debug]\n"
               "Heartbeats every I/O server of the cluster and reports up/down/rebuilding\n"
               "to the MDS (failure detection within t_HB + 2*t_T).\n");
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_requested)
        ;
}

int main(int argc, char **argv)
{
    const char *config_path = NULL;
    enum dlog_level level = DLOG_INFO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            config_path = argv[++i];
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            const char *l = argv[++i];
            level = !strcmp(l, "err") ? DLOG_ERR : !strcmp(l, "warn") ? DLOG_WARN
                  : !strcmp(l, "debug") ? DLOG_DEBUG : DLOG_INFO;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    dlog_init("depfs-recovery", level);
    static depfs_config cfg;
    char err[512];
    if (config_load(config_path, &cfg, err, sizeof(err)) != 0) {
        log_err("%s", err);
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rec_ctx rc;
    if (rec_init(&rc, &cfg) != 0) {
        log_err("out of memory");
        return 1;
    }
    log_info("watching %u I/O servers every %u ms (timeout %u ms)", rc.nservers, cfg.heartbeat_period_ms,
             cfg.request_timeout_ms);
    while (!stop_requested) {
        uint64_t start = rec_now_ms();
        rec_heartbeat_round(&rc);
        uint64_t spent = rec_now_ms() - start;
        if (spent < cfg.heartbeat_period_ms)
            sleep_ms(cfg.heartbeat_period_ms - (unsigned)spent);
    }
    log_info("stopping");
    rec_fini(&rc);
    return 0;
}
