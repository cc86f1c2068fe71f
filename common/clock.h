/* clock.h - the one clock module: monotonic time for timeouts, leases and
 * rates, wall-clock time for file timestamps, deadlines for
 * pthread_cond_timedwait on CLOCK_MONOTONIC condition variables, and a sleep
 * that survives signals. Every DePFS program asks this module for the time
 * instead of calling clock_gettime itself.
 *
 * Units are in the names: _ms milliseconds, _ns nanoseconds. Monotonic
 * values only make sense as differences within one process. */
#ifndef DEPFS_CLOCK_H
#define DEPFS_CLOCK_H
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define CLOCK_MS_PER_S 1000ull
#define CLOCK_NS_PER_MS 1000000ull
#define CLOCK_NS_PER_S 1000000000ull

/* CLOCK_MONOTONIC. */
uint64_t clock_now_ns(void);
uint64_t clock_now_ms(void);
/* CLOCK_REALTIME in ns since the epoch (file times). */
int64_t clock_real_ns(void);
/* The CLOCK_MONOTONIC instant ms from now, for pthread_cond_timedwait on a
 * condition variable created with pthread_condattr_setclock(CLOCK_MONOTONIC). */
struct timespec clock_deadline_after_ms(uint64_t ms);
/* Initialises cv for such waits (CLOCK_MONOTONIC). */
void clock_cond_init(pthread_cond_t *cv);
/* Sleeps ms, resuming after signals. */
void clock_sleep_ms(uint64_t ms);

#endif
