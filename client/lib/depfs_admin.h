/* depfs_admin.h - libdepfs operations for administrators and depfs-recovery
 * (not for applications): server states and rebuild progress at the MDS,
 * rebuilding a server's units, rejoining a returning server, repairing the
 * stripes of orphan locks, and the namespace walk of a reconstruction.
 * The protocol they follow is recovery/README.md. */
#ifndef DEPFS_ADMIN_H
#define DEPFS_ADMIN_H
#include "depfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The MDS's state of server_id (MDS_SET_SERVER_STATE; a change bumps the
 * cluster epoch), then this client's view refreshed and a new epoch pushed
 * to every server that runs, as depfs-recovery does. For tools that drive
 * a server's life cycle (`depfs reconstruct`). */
int depfs_set_server_state(depfs_t *fs, uint32_t server_id, int state); /* DEPFS_SERVER_* */
/* Publishes a rebuild's progress of server_id to the MDS, where every
 * `depfs status` sees it: bytes done of total and the current rate
 * (bytes/s, 0 = unknown). Progress only: never changes the state. */
int depfs_report_progress(depfs_t *fs, uint32_t server_id, uint64_t done_bytes,
                          uint64_t total_bytes, uint64_t rate_bps);

/* ------------------------------------------------- recovery operations */
/* Progress callback: bytes of units rebuilt so far for this call. It may
 * sleep (that is how callers throttle); a non-zero return aborts (-ECANCELED). */
typedef int (*depfs_progress_fn)(void *arg, uint64_t bytes_done);

/* Orphan lock repair (thesis 3.3.1, recovery/README.md "Orphan locks"):
 * take stripes [first_stripe, first_stripe+stripe_count) of file ino over
 * from every stale lock (the one of (owner_client, owner_op) and any other
 * owner's), make the stripes consistent again from the units no write left
 * in doubt and no server missed, and release them. Other writers stay
 * excluded meanwhile. -EIO when the stripes cannot be decided (they stay
 * locked); -ENOENT when the file is gone (its locks are released). */
int depfs_repair_orphan_lock(depfs_t *fs, uint64_t ino, uint64_t first_stripe,
                             uint64_t stripe_count, uint64_t owner_client, uint64_t owner_op);

/* Rebuild every unit that I/O server `server_id` holds for file ino (data
 * and parity, every stripe up to the file size), decoding from the other
 * servers under the stripe locks and writing to server_id even while it is
 * REBUILDING. -ENOENT when the file is gone; 0 when server_id is not in
 * its layout. Units past the file's end are truncated away; units that
 * decode to zeros past the end of server_id's strip file are not written
 * (they read as zeros already: sparse files stay sparse). */
int depfs_rebuild_file(depfs_t *fs, uint64_t ino, uint32_t server_id, depfs_progress_fn fn,
                       void *arg);

/* Rejoin of a REBUILDING (or, after a full reconstruction, RECONSTRUCTING)
 * server: the steps of recovery/README.md "Rejoin" (dirty passes, MDS state
 * UP with a new epoch pushed to every server, last pass, server UP). */
int depfs_server_rejoin(depfs_t *fs, uint32_t server_id, depfs_progress_fn fn, void *arg);

/* Every regular file whose layout includes server_id, for reconstruction:
 * calls fn(arg, ino, size) for each (hard links once); stops on non-zero. */
typedef int (*depfs_file_fn)(void *arg, uint64_t ino, uint64_t size);
int depfs_files_on_server(depfs_t *fs, uint32_t server_id, depfs_file_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
