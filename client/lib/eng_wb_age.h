/* eng_wb_age.h - when write-behind sends its scatter set before it is full
 * (pure; eng_wb.c asks it after every buffered write).
 *
 * A set of small scattered writes normally leaves the client only when
 * full (eng_wb.c: DC_WB_SCATTER_EXTENTS_MAX extents), so a random writer
 * that begins, or resumes after a pause, is invisible to the I/O servers
 * until it has made a thousand writes. A rebuild's pace (core_pace.h) only
 * knows clients by the I/O the servers see, and meanwhile runs at full
 * speed and takes the CPU that writer needs. So a set also flies once it is
 * DC_WB_FIRST_AGE_MS old when nothing of the inode's write-behind went out
 * in the last DC_WB_QUIET_MS (and no flight is in the air): the servers see
 * a writer within about DC_WB_FIRST_AGE_MS of its first write, and a slow
 * writer at least every DC_WB_QUIET_MS, inside the pace's hold. A steady
 * writer's sets still fly full, as before. */
#ifndef DEPFS_ENG_WB_AGE_H
#define DEPFS_ENG_WB_AGE_H
#include <stdbool.h>
#include <stdint.h>

#include "core_pace.h"

#define DC_WB_FIRST_AGE_MS DC_PACE_BUSY_MS                  /* a new writer shows up by then */
#define DC_WB_QUIET_MS (DC_PACE_HOLD_MS - DC_PACE_BUSY_MS) /* before the pace's hold runs out */
_Static_assert(DC_WB_QUIET_MS > DC_WB_FIRST_AGE_MS && DC_WB_QUIET_MS < DC_PACE_HOLD_MS,
               "a quiet writer is seen again before the rebuild pace's hold runs out");

/* Whether the scatter set (n_ext extents, its first buffered at
 * set_first_ms) goes out now, early; last_out_ms: when write-behind of the
 * inode last sent bytes (0: never); flying: a flight is in the air. */
bool dc_wb_fly_early(uint64_t now_ms, uint64_t set_first_ms, uint64_t last_out_ms, unsigned n_ext,
                     bool flying);

#endif
