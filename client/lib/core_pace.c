/* core_pace.c - the rebuild's QoS rule (core_pace.h). */
#include "core_pace.h"

#include <string.h>

#define DC_PACE_MS_PER_S 1000.0

void dc_pace_init(dc_pace *p, uint64_t idle_rate, uint64_t busy_rate)
{
    memset(p, 0, sizeof *p);
    p->idle_rate = idle_rate;
    p->busy_rate = busy_rate;
}

bool dc_pace_busy(const dc_pace *p, uint64_t now_ms)
{
    return now_ms < p->busy_until_ms;
}

/* The limit now (0: none): the lower of the two while busy. */
static uint64_t dc_pace_rate(const dc_pace *p, uint64_t now_ms)
{
    if (!dc_pace_busy(p, now_ms) || p->busy_rate == 0)
        return p->idle_rate;
    if (p->idle_rate == 0 || p->busy_rate < p->idle_rate)
        return p->busy_rate;
    return p->idle_rate;
}

/* Brings the bucket up to now at `rate` (> 0), full at first. */
static void dc_pace_refill(dc_pace *p, uint64_t now_ms, uint64_t rate, double burst)
{
    if (!p->started) {
        p->started = true;
        p->tokens = burst;
        p->tokens_ms = now_ms;
    }
    if (now_ms > p->tokens_ms)
        p->tokens += (double)(now_ms - p->tokens_ms) * (double)rate / DC_PACE_MS_PER_S;
    p->tokens_ms = now_ms;
    if (p->tokens > burst)
        p->tokens = burst;
}

uint64_t dc_pace_take(dc_pace *p, uint64_t now_ms, uint64_t bytes, uint32_t min_idle_ms)
{
    bool was_busy = dc_pace_busy(p, now_ms);
    if (min_idle_ms < DC_PACE_BUSY_MS && now_ms + DC_PACE_HOLD_MS > p->busy_until_ms)
        p->busy_until_ms = now_ms + DC_PACE_HOLD_MS;
    bool busy = dc_pace_busy(p, now_ms);
    if (busy)
        p->busy_bytes += bytes;
    else
        p->idle_bytes += bytes;
    uint64_t rate = dc_pace_rate(p, now_ms);
    if (rate == 0) {
        p->started = false; /* unlimited: nothing owed, nothing saved up */
        return 0;
    }
    double burst = (double)rate * DC_PACE_BURST_MS / DC_PACE_MS_PER_S;
    dc_pace_refill(p, now_ms, rate, burst);
    /* clients just appeared: what was saved while they were away is not
     * spent on top of them; this batch is paid for at the busy rate */
    if (busy && !was_busy && rate != p->idle_rate && p->tokens > 0)
        p->tokens = 0;
    p->tokens -= (double)bytes;
    if (p->tokens >= 0)
        return 0;
    uint64_t sleep_ms = (uint64_t)(-p->tokens * DC_PACE_MS_PER_S / (double)rate + 0.5);
    p->slept_ms += sleep_ms;
    return sleep_ms;
}
