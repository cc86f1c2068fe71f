/* recover.h - private to libdepfs's recovery operations (recover_*.c, the
 * public entry points are in depfs.h "recovery operations"): what they
 * share, implemented in recover_common.c. Built on the data path's request
 * fan-out (io_fanout.h) and the core (core.h); nothing else uses it. */
#ifndef DEPFS_CLIENT_RECOVER_H
#define DEPFS_CLIENT_RECOVER_H
#include <stdbool.h>
#include <stdint.h>
#include "engines.h"
#include "depfs_admin.h"

/* A file as the recovery sees it: layout, size, codec. */
typedef struct dc_target {
    uint64_t ino;
    layout lay;
    uint64_t size;            /* max(MDS size, this client's uncommitted size) */
    const codec *cd;
} dc_target;

/* Loads ino's layout and size; -EINVAL for anything but a regular file
 * with a valid layout, -ENOENT when it is gone. */
int dc_target_load(depfs_t *fs, uint64_t ino, dc_target *t);
/* The same for the file a handle of this client has open (its layout and
 * size as the open found them, or this client's own later size): no MDS
 * round trip. */
int dc_target_of_handle(depfs_t *fs, const depfs_fh_t *fh, dc_target *t);

/* Layout position of server id, or -1. */
int dc_pos_of(const layout *lay, uint32_t id);
static inline uint64_t dc_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Positions whose servers can be talked to: not failed locally and not
 * DOWN for the MDS (REBUILDING/RECONSTRUCTING servers take locks/writes). */
uint32_t dc_reachable_mask(depfs_t *fs, const layout *lay);
/* The server's state in this client's picture (DOWN when unknown). */
int dc_server_state(depfs_t *fs, uint32_t id);
/* Cluster servers other than `except` that are not failed locally or DOWN
 * for the MDS; returns how many ids were written (at most max). */
unsigned dc_live_servers(depfs_t *fs, uint32_t except, uint32_t *ids, unsigned max);


/* Longest strip file (bytes) of the file among the positions in mask. */
int dc_strip_extent(depfs_t *fs, const dc_target *t, uint32_t mask, uint64_t *max_bytes);

/* Positions whose units of ino may be stale (recovery/README.md "Trusted
 * units"): unreachable, RECONSTRUCTING, or named in a dirty record; with
 * refresh, the servers' states are read from the MDS first. */
int dc_untrusted_mask(depfs_t *fs, const layout *lay, uint64_t ino, bool refresh,
                      uint32_t *untrusted);

/* Dirty records (S, file) on every live server: action is DIRTY_CLAIM or
 * DIRTY_CLEAR (a clear refused because the file was recorded again since
 * the claim is no error), or DC_DIRTY_RECORD to record one. */
#define DC_DIRTY_RECORD (-1)
int dc_dirty_act(depfs_t *fs, uint32_t server, uint64_t file, int action);
int dc_dirty_record(depfs_t *fs, uint32_t server, uint64_t file);

/* The two steps of a state change as depfs-recovery makes it
 * (recover_common.c): MDS_SET_SERVER_STATE, giving the new epoch in *epoch,
 * then IO_SET_STATE to each running server, the epoch always and a state
 * when state >= 0. depfs_set_server_state does both. */
int dc_mds_set_state(depfs_t *fs, uint32_t server, int state, uint64_t *epoch);
int dc_push_state(depfs_t *fs, uint32_t id, uint64_t epoch, int state);


#endif
