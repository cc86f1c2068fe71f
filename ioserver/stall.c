/* stall.c - stall detection of the ioserver (see stall.h). */
#include "stall.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "depfs.pb-c.h"
#include "handlers.h"
#include "log.h"

struct ios_stall {
    ios_state *st;
    uint32_t server_id;
    uint64_t stall_ms;
    _Atomic uint64_t last_tick_ms;
    atomic_bool stop;
    pthread_t thr;
};

static void demote(ios_stall *w, uint64_t gap_ms)
{
    int rc = ios_state_demote_self(w->st);
    if (rc == 1)
        log_warn("server %u did not run for %llu ms (stopped or paused, bound %llu ms): "
                 "clients may have written around it; no reads until depfs-recovery rejoins "
                 "it (REBUILDING)", w->server_id, (unsigned long long)gap_ms,
                 (unsigned long long)w->stall_ms);
    else if (rc < 0)
        log_err("server %u stalled for %llu ms but cannot store REBUILDING: %s", w->server_id,
                (unsigned long long)gap_ms, strerror(-rc));
}

/* The gap since the last tick; a stall demotes and restarts the count. */
static void observe(ios_stall *w)
{
    uint64_t now_ms = clock_now_ms(), last = atomic_load(&w->last_tick_ms);
    if (now_ms > last && now_ms - last > w->stall_ms &&
        atomic_compare_exchange_strong(&w->last_tick_ms, &last, now_ms))
        demote(w, now_ms - last);
}

static void *ticker(void *arg)
{
    ios_stall *w = arg;
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)IOS_STALL_TICK_MS * 1000000L };
    while (!atomic_load(&w->stop)) {
        nanosleep(&ts, NULL);
        observe(w);
        uint64_t now_ms = clock_now_ms(), last = atomic_load(&w->last_tick_ms);
        if (now_ms > last)
            atomic_compare_exchange_strong(&w->last_tick_ms, &last, now_ms);
    }
    return NULL;
}

int ios_stall_start(ios_state *st, uint32_t server_id, uint64_t stall_ms, ios_stall **out)
{
    ios_stall *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->st = st;
    w->server_id = server_id;
    w->stall_ms = stall_ms;
    atomic_init(&w->last_tick_ms, clock_now_ms());
    atomic_init(&w->stop, false);
    int rc = pthread_create(&w->thr, NULL, ticker, w);
    if (rc) {
        free(w);
        return -rc;
    }
    *out = w;
    return 0;
}

void ios_stall_check(ios_stall *w)
{
    if (w)
        observe(w);
}

void ios_stall_stop(ios_stall *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, true);
    pthread_join(w->thr, NULL);
    free(w);
}
