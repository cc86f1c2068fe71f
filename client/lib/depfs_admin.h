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

/* ------------------------------------------------------ cluster control */
/* The calls depfs-recovery makes (and only an admin should): the MDS's
 * picture, a server's state at the MDS, progress, IO_SET_STATE pushes. */
typedef struct depfs_server_state {
    uint32_t id;
    int state;                  /* DEPFS_SERVER_* as the MDS holds it */
    uint64_t state_epoch;       /* cluster epoch of the MDS's last change of it */
} depfs_server_state;
/* MDS_CLUSTER: up to max servers into out and the cluster epoch; returns
 * the number of servers the MDS knows (may exceed max), or -errno. */
int depfs_mds_cluster(depfs_t *fs, depfs_server_state *out, unsigned max, uint64_t *epoch);
/* MDS_SET_SERVER_STATE(server_id, state) alone; the new epoch in *epoch
 * (depfs_set_server_state also pushes it to every server). */
int depfs_mds_set_state(depfs_t *fs, uint32_t server_id, int state, uint64_t *epoch);
/* Progress only, never a state: degraded files of server_id and, when
 * done_bytes is not NULL, the bytes its rejoin rebuilt so far. */
int depfs_report_degraded(depfs_t *fs, uint32_t server_id, const uint64_t *done_bytes,
                          uint64_t degraded_files);
/* IO_SET_STATE to servers ids[0..n) at once: a state (< 0: unchanged) and
 * a cluster epoch (0: unchanged). out[i] says how each answered. Returns
 * how many took it, or -errno. */
typedef struct depfs_push_result {
    int rc;                     /* 0, -errno of its answer, or a transport error */
    bool answered;
    int state;                  /* its state after the push (-1: no answer) */
    uint64_t epoch;             /* the epoch it knows after the push */
} depfs_push_result;
int depfs_push_state(depfs_t *fs, const uint32_t *ids, unsigned n, int state, uint64_t epoch,
                     depfs_push_result *out);

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

/* Damage an I/O server's background scrub found in its strip file of ino,
 * bytes [local_offset, local_offset+length) (length 0: the strip file is
 * lost): every unit of the stripes there is checked under the stripe locks
 * and the bad ones are rebuilt from the good ones, as a reading client
 * does; rep says what was found and repaired. -ENOENT when the file is
 * gone, -EINVAL when server_id holds none of it. */
int depfs_repair_strip_range(depfs_t *fs, uint64_t ino, uint32_t server_id, uint64_t local_offset,
                             uint64_t length, depfs_scrub_report *rep);

/* Rebuild every unit that I/O server `server_id` holds for file ino (data
 * and parity, every stripe up to the file size), decoding from the other
 * servers under the stripe locks and writing to server_id even while it is
 * REBUILDING. -ENOENT when the file is gone; 0 when server_id is not in
 * its layout. Units past the file's end are truncated away; units that
 * decode to zeros where server_id's strip file holds no data are not
 * written (they read as zeros already: sparse files stay sparse). Several
 * batches run at once, paced by rebuild_rate and rebuild_busy_rate
 * (recovery/README.md "Rebuild pace"); fn is called from any of their
 * threads, one call at a time. */
int depfs_rebuild_file(depfs_t *fs, uint64_t ino, uint32_t server_id, depfs_progress_fn fn,
                       void *arg);

/* Rejoin of a REBUILDING (or, after a full reconstruction, RECONSTRUCTING)
 * server: the steps of recovery/README.md "Rejoin" (dirty passes, MDS state
 * UP with a new epoch pushed to every server, last pass, server UP). */
int depfs_server_rejoin(depfs_t *fs, uint32_t server_id, depfs_progress_fn fn, void *arg);

/* One pass over the MDS's purge queue (README "Removing files"): the
 * files no handle may use any more, from *cursor on, at most max_files
 * (WIRE_PURGE_LIST_MAX): each one's strip files removed on all n servers
 * (IO_REMOVE, idempotent), then the entries of those that went dropped at
 * the MDS in one commit (MDS_PURGE_DONE). A file a server could not remove
 * for (down, refused) stays queued for a later pass. *cursor moves on (0
 * again at the queue's end: rep->eof). Admin only. 0, or -errno when the
 * MDS could not list or drop. The holds of files closed here go back
 * first (depfs_release_holds), so the pass sees this client's closes. */
typedef struct depfs_purge_report {
    unsigned listed, purged, failed; /* entries listed, dropped, left queued */
    uint64_t bytes;                  /* sizes of the files whose strip files went */
    bool eof;                        /* the pass reached the queue's end */
} depfs_purge_report;
int depfs_purge_pass(depfs_t *fs, unsigned max_files, uint64_t *cursor, depfs_purge_report *rep);

/* The MDS's holds of the files closed here go back now: each last close
 * queues its file's and they otherwise go together within about 50 ms
 * (client/lib/core_releases.c). Returns once every hold queued before
 * the call has been sent and answered (or failed: it then ends with its
 * life). Done first by whatever may take a file's last link here
 * (unlink, a rename over a file, a migrate swap): the file may be one
 * closed here, and a client that died right after would otherwise leave
 * it held, its strip files kept, until the hold expires. Also done by
 * depfs_unmount and a purge pass. */
void depfs_release_holds(depfs_t *fs);

/* Every regular file whose layout includes server_id, for reconstruction:
 * calls fn(arg, ino, size) for each (hard links once); stops on non-zero. */
typedef int (*depfs_file_fn)(void *arg, uint64_t ino, uint64_t size);
int depfs_files_on_server(depfs_t *fs, uint32_t server_id, depfs_file_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
