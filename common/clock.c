/* clock.c - monotonic and wall-clock time, deadlines, sleeping (clock.h). */
#include "clock.h"

#include <errno.h>

static uint64_t ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t clock_now_ns(void) { return ns_of(CLOCK_MONOTONIC); }
uint64_t clock_now_ms(void) { return ns_of(CLOCK_MONOTONIC) / CLOCK_NS_PER_MS; }
int64_t clock_real_ns(void) { return (int64_t)ns_of(CLOCK_REALTIME); }

struct timespec clock_deadline_after_ms(uint64_t ms)
{
    uint64_t ns = clock_now_ns() + ms * CLOCK_NS_PER_MS;
    return (struct timespec){ .tv_sec = (time_t)(ns / CLOCK_NS_PER_S),
                              .tv_nsec = (long)(ns % CLOCK_NS_PER_S) };
}

void clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void clock_sleep_ms(uint64_t ms)
{
    struct timespec ts = { .tv_sec = (time_t)(ms / CLOCK_MS_PER_S),
                           .tv_nsec = (long)(ms % CLOCK_MS_PER_S * CLOCK_NS_PER_MS) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
