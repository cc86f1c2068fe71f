/* core_pace.h - how fast a rebuild goes: the QoS rule between rebuilds
 * (and reconstructs) and the clients they share the servers with.
 *
 *   - Busy: some server the rebuild read or wrote began client I/O (a READ
 *     or WRITE not marked background) less than DC_PACE_BUSY_MS before it
 *     answered (IoReply.client_io_idle_ms). The rebuild then keeps to
 *     rebuild_busy_rate bytes/s of rebuilt units: it yields that far, no
 *     further, so a rebuild under constant load still ends. Busy lasts
 *     DC_PACE_HOLD_MS after the last sign of clients, so a pause between
 *     two of their requests does not let it loose.
 *   - Otherwise at most rebuild_rate (the cluster-wide limit; 0: none).
 *   - Either rate 0: that limit is off (busy_rate 0: never yields).
 * A token bucket holding DC_PACE_BURST_MS of the current rate; the caller
 * sleeps what dc_pace_take returns. When clients appear (busy begins and
 * the busy rate is the lower) the bucket is emptied: what it saved while
 * they were away, or the burst a bucket starts with after running
 * unlimited, is not spent on top of them, so the batch that revealed them
 * is already paid for at the busy rate. The clock is the caller's, so the
 * unit test drives it (tests/unit/test_rebuild_pace.c). */
#ifndef DEPFS_CORE_PACE_H
#define DEPFS_CORE_PACE_H
#include <stdbool.h>
#include <stdint.h>

#define DC_PACE_BUSY_MS 200u   /* client I/O this recent: clients are busy */
#define DC_PACE_HOLD_MS 1000u  /* busy this long after the last sign of them */
#define DC_PACE_BURST_MS 250u  /* the bucket's depth, in time at the rate */

typedef struct dc_pace {
    uint64_t idle_rate, busy_rate; /* bytes/s; 0: no limit */
    double tokens;                 /* bytes that may go now (< 0: owed) */
    uint64_t tokens_ms;            /* when tokens was last brought up to date */
    bool started;
    uint64_t busy_until_ms;
    /* what happened: rebuilt bytes taken while busy / not, time slept */
    uint64_t busy_bytes, idle_bytes, slept_ms;
} dc_pace;

void dc_pace_init(dc_pace *p, uint64_t idle_rate, uint64_t busy_rate);
/* `bytes` of units were rebuilt by now_ms; min_idle_ms is the least
 * client_io_idle_ms the servers answered with them (UINT32_MAX: none
 * said). Returns the milliseconds to sleep before the next batch. */
uint64_t dc_pace_take(dc_pace *p, uint64_t now_ms, uint64_t bytes, uint32_t min_idle_ms);
/* Whether clients counted as busy at now_ms. */
bool dc_pace_busy(const dc_pace *p, uint64_t now_ms);

#endif
