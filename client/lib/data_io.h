/* data_io.h - private to the libdepfs data path (data_*.c): one I/O request
 * per server (dc_req), the parallel fan-out that runs a set of them with
 * timeouts, one retry and failure marking, stripe-lock helpers (back-off,
 * releasing what was granted), and the write/read entry points the data
 * files share. Nothing here is used outside client/lib/data_*.c. */
#ifndef DEPFS_CLIENT_DATA_IO_H
#define DEPFS_CLIENT_DATA_IO_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "internal.h"

/* A request can name at most this many extents / memory segments. */
#define DC_REQ_MAX_EXTENTS RPC_MAX_IOV
/* Data moved per round of a large read/write/scrub (bounds client memory). */
#define DC_ROUND_BYTES_MAX (32u << 20)
/* Stripes per round: each server gets about one memory segment per stripe,
 * and a request holds at most RPC_MAX_IOV of them (a few kept for the
 * partial head/tail stripes' pre-read fragments). */
#define DC_ROUND_STRIPES_MAX (RPC_MAX_IOV - 8)
/* Lock NACK back-off: randomized, growing from min to max, bounded tries. */
#define DC_LOCK_BACKOFF_MIN_US 1000u
#define DC_LOCK_BACKOFF_MAX_US 200000u
#define DC_LOCK_ATTEMPTS_MAX 200u
/* Rounds a write/read restarts because a server failed in the middle. */
#define DC_FAILOVER_RESTARTS_MAX 8u
#define DC_DEFAULT_TIMEOUT_MS 2000u

/* Result of a request whose server is down, unreachable or timed out twice. */
#define DC_ERR_DOWN (-EHOSTDOWN)

typedef struct dc_req {
    /* what to send */
    bool active;                  /* takes part in dc_io_run */
    unsigned pos;                 /* position in the layout's servers[] */
    uint32_t server_id;
    uint16_t op;                  /* DEPFS__IO_OP__* */
    size_t n_ext;
    Depfs__Extent ext[DC_REQ_MAX_EXTENTS];
    int n_iov;
    struct iovec iov[RPC_MAX_IOV];/* WRITE: bulk sent; READ: where reply bulk lands */
    uint64_t bytes;               /* sum of extent lengths == sum of iov lengths */
    bool has_lock;
    Depfs__LockSpec lock;
    uint32_t lock_attempt;        /* with has_lock: 0 first try, n the n-th retry after a NACK */
    bool unlock, sync, ignore_locks;
    bool any_state;               /* recovery: send even when the status vector
                                   * calls the server down (REBUILDING targets) */
    bool has_local_size;
    uint64_t local_size;
    unsigned n_down;
    uint32_t down[LAYOUT_MAX_N];
    const Depfs__IoRequest *ctl;  /* control request (recovery): sent as it is
                                   * (the fields above but op, server and
                                   * any_state unused); epoch added when guarded */
    bool keep_reply;              /* keep the unpacked reply in `reply` */
    /* outcome of dc_io_run */
    int result;                   /* 0, -EAGAIN (lock NACK), DC_ERR_DOWN, -errno */
    uint64_t reply_bulk;
    Depfs__IoReply *reply;        /* with keep_reply: the last reply (or NULL);
                                   * the caller frees it (dc_req_free_reply) */
} dc_req;

/* Set req up for (op, server at layout position pos); clears everything. */
void dc_req_init(dc_req *r, const layout *lay, unsigned pos, uint16_t op);
/* A control request `msg` to server id (any state), its reply kept. */
void dc_req_init_ctl(dc_req *r, uint32_t server_id, uint16_t op, const Depfs__IoRequest *msg);
void dc_req_free_reply(dc_req *r);
/* Append `len` bytes at local offset `local_off` whose memory is `buf`
 * (merging with the previous extent/segment when contiguous). -E2BIG when
 * the request is full (callers size rounds so it never is). */
int dc_req_add(dc_req *r, uint64_t local_off, uint64_t len, void *buf);
void dc_req_set_lock(dc_req *r, uint64_t first_stripe, uint64_t count, uint64_t owner_client,
                     uint64_t owner_op);

/* At most this many requests in one dc_io_run (one per server). */
#define DC_IO_MAX_REQS CONFIG_MAX_IOSERVERS

/* Run every active request in parallel: start all, wait with the request
 * timeout, resend the ones that timed out or lost their connection once,
 * then mark those servers failed (result DC_ERR_DOWN). Requests to servers
 * already down are not sent (DC_ERR_DOWN) unless any_state. Short READ
 * replies are padded with zeros.
 * Cluster epochs (recovery/README.md): lock/write-path requests carry the
 * client's epoch. ESTALE from a server that knows a newer epoch: refresh
 * from the MDS and resend (bounded); still stale -> -EAGAIN, or -EPERM for
 * a locked WRITE (the caller redoes the round). A WRITE whose down_servers
 * names a server that is no longer down was planned on a stale picture:
 * not sent, same results. ESTALE from a server behind our epoch, or a read
 * refused by a REBUILDING/RECONSTRUCTING server: DC_ERR_DOWN (the first is
 * marked failed; the second is only treated as down from then on). */
void dc_io_run(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq);

/* Control requests (STAT, HEARTBEAT, DIRTY, SET_STATE, LOCK with take-over)
 * to several servers at once, each reply kept for the caller: rep NULL when
 * the server did not answer; rc 0, -err of the reply, or DC_ERR_DOWN. */
typedef struct dc_ctl {
    uint32_t server_id;
    uint16_t op;
    Depfs__IoRequest req;
    Depfs__IoReply *rep;
    int rc;
} dc_ctl;
void dc_ctl_init(dc_ctl *c, uint32_t server_id, uint16_t op, uint64_t file_id);
void dc_ctl_run(depfs_t *fs, dc_ctl *v, unsigned n);
void dc_ctl_free(dc_ctl *v, unsigned n);

/* Send IO_UNLOCK for every request that holds a granted lock (has_lock,
 * result 0); failures are ignored (the lease/recovery cleans up). */
void dc_io_unlock_granted(depfs_t *fs, uint64_t ino, const dc_req *reqs, unsigned nreq);

/* The servers at the positions in *down missed a change of file ino:
 * every other server of the layout stores the dirty records (server, ino)
 * (an IO_WRITE without extents naming them), so that their rejoin rebuilds
 * the file. Servers that fail now are added to *down. 0 once every
 * answering server stored them (and at least one did); else an error. */
int dc_record_down(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t *down);

/* Sleep a randomized, growing back-off for lock attempt `attempt` (0-based). */
void dc_lock_backoff(unsigned attempt);

/* Layout positions whose servers are down now (bit i = position i). */
uint32_t dc_down_mask(depfs_t *fs, const layout *lay);
unsigned dc_popcount32(uint32_t v);

/* Stripes per read/write round for this layout and the frame limits. */
uint64_t dc_round_stripes(const depfs_t *fs, const layout *lay);

/* ---- entry points shared between the data files */
/* Write [off, off+len) through the stripe-lock protocol (no write-behind,
 * no size update). */
int dc_write_range(depfs_t *fs, dc_inode *in, const uint8_t *buf, uint64_t off, uint64_t len,
                   bool sync);
/* One extent of new bytes: data[0] is file byte off. */
typedef struct dc_wext {
    uint64_t off, len;
    const uint8_t *data;
} dc_wext;
/* Write n extents (ascending, non-overlapping) through the stripe-lock
 * protocol, as few rounds as the request limits allow. */
int dc_write_extents(depfs_t *fs, dc_inode *in, const dc_wext *ext, unsigned n, bool sync);
/* Read [off, off+len) (already clamped to the size) into buf. */
int dc_read_range(depfs_t *fs, dc_inode *in, uint8_t *buf, uint64_t off, uint64_t len);
/* Write-behind: true when this handle buffers writes. */
bool dc_wb_enabled(const depfs_fh_t *fh);
/* Buffer (or write through) one write; handles flush-before rules. */
int dc_wb_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len);
/* Flush the inode's write-behind buffer if it overlaps [off, off+len). */
int dc_wb_flush_range(depfs_t *fs, dc_inode *in, uint64_t off, uint64_t len);
/* Read-ahead (data_read.c): drop the cached window and degraded stripes
 * (every write, flush, truncate and close of this client does: see
 * data_cache.c); free them (inode released). */
void dc_ra_drop(dc_inode *in);
void dc_ra_free(dc_inode *in);
/* The read engine: [off, off+len) of the handle's file (already clamped to
 * size, the file's size) into buf: read-ahead window, write-behind bytes
 * of the range flushed, then striped or degraded reads. 0 or -errno. */
int dc_read(depfs_fh_t *fh, uint8_t *buf, uint64_t off, uint64_t len, uint64_t size);
/* data_cache.c: the entry points' and engines' way to write, flush and
 * release an inode's cached bytes (write-behind and read-ahead together). */
int dc_data_write(depfs_fh_t *fh, const uint8_t *buf, uint64_t off, uint64_t len);
int dc_data_flush(depfs_t *fs, dc_inode *in);
void dc_data_release(depfs_t *fs, dc_inode *in);

#endif
