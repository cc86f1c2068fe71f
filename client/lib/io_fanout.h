/* io_fanout.h - libdepfs's one request fan-out (io_fanout.c), the layer
 * between the engines (engines.h) and the core (core.h): one I/O request per
 * server (dc_req), the parallel fan-out that runs a set of them with
 * timeouts, one retry and failure marking, control requests whose replies
 * the caller reads (dc_ctl), stripe-lock helpers (back-off, releasing what
 * was granted) and round sizing. A ticket holder's requests on a file carry
 * the capability they need (common/io_caps.h), got once per dc_io_run from
 * the core (core_caps.c). */
#ifndef DEPFS_CLIENT_IO_FANOUT_H
#define DEPFS_CLIENT_IO_FANOUT_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "core.h"

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
/* Waits at the servers of dc_io_run_gated: the gate request waits up to
 * the request timeout / DC_LOCK_GATE_WAIT_DIV (at most
 * WIRE_LOCK_WAIT_MAX_MS), the others DC_LOCK_REST_WAIT_DIV times less. */
#define DC_LOCK_GATE_WAIT_DIV 4u
#define DC_LOCK_REST_WAIT_DIV 8u
/* Rounds a write/read restarts because a server failed in the middle. */
#define DC_FAILOVER_RESTARTS_MAX 8u
#define DC_DEFAULT_TIMEOUT_MS 2000u

/* Result of a request whose server is down, unreachable or timed out twice. */
#define DC_ERR_DOWN (-EHOSTDOWN)
/* Result of a WRITE under a lock that was not stored because its plan went
 * stale: the cluster epoch moved on (a server it names as down is back, or
 * the server knows a newer epoch than we could learn). The server never
 * looked at the lock, so it is still ours there. */
#define DC_ERR_STALE_PLAN (-ESTALE)

typedef struct dc_req {
    /* what to send */
    bool active;                  /* takes part in dc_io_run */
    unsigned pos;                 /* position in the layout's servers[] */
    uint32_t server_id;
    uint16_t op;                  /* DEPFS__IO_OP__* */
    uint32_t n, k;                /* the layout's n@k (data_only) */
    const uint32_t *layout_servers; /* the layout's servers[n] (NULL: a control request) */
    uint32_t su;                  /* the layout's stripe unit (WRITE, data_only) */
    size_t n_ext;
    Depfs__Extent ext[DC_REQ_MAX_EXTENTS];
    int n_iov;
    struct iovec iov[RPC_MAX_IOV];/* WRITE: bulk sent; READ: where reply bulk lands */
    uint64_t bytes;               /* sum of extent lengths == sum of iov lengths */
    bool has_lock;
    Depfs__LockSpec lock;
    uint32_t lock_attempt;        /* with has_lock: 0 first try, n the n-th retry after a NACK */
    bool unlock, sync, ignore_locks;
    bool unverified;              /* READ (recovery, with ignore_locks): blocks as
                                   * stored, not checked (IoRequest.unverified) */
    bool data_only;               /* READ of data units only (a fault-free read):
                                   * the server reads ahead none of its parity
                                   * units (IoRequest.data_units) */
    bool keep_down;               /* WRITE naming servers that missed a change
                                   * (their dirty records): sent even when some
                                   * are up again, unlike a plan made without
                                   * them (a torn round's finish, dc_record_down) */
    bool any_state;               /* recovery: send even when the status vector
                                   * calls the server down (REBUILDING targets) */
    bool has_local_size;
    uint64_t local_size;
    unsigned n_down;
    uint32_t down[LAYOUT_MAX_N];
    const Depfs__IoRequest *ctl;  /* control request (recovery): sent as it is
                                   * (the fields above but op, server and
                                   * any_state unused); epoch added when guarded */
    bool background;              /* recovery's bulk work (IoRequest.background) */
    bool keep_reply;              /* keep the unpacked reply in `reply` */
    /* outcome of dc_io_run */
    int result;                   /* 0, -EAGAIN (lock NACK), DC_ERR_DOWN, -errno */
    uint64_t reply_bulk;
    uint32_t client_io_idle_ms;   /* background: what the server said
                                   * (IoReply.client_io_idle_ms); else
                                   * UINT32_MAX */
    uint32_t untrusted;           /* a lock granted: layout positions whose units
                                   * of the file this server says are untrusted
                                   * (IoReply.untrusted_servers: it holds dirty
                                   * records naming them); compute nothing from
                                   * their units */
    Depfs__IoReply *reply;        /* with keep_reply: the last reply (or NULL);
                                   * the caller frees it (dc_req_free_reply) */
} dc_req;

/* The positions the granted locks of the active reqs[0..n) call untrusted
 * (the union of their dc_req.untrusted). */
uint32_t dc_reqs_untrusted(const dc_req *reqs, unsigned n);
/* Set req up for (op, server at layout position pos); clears everything. */
void dc_req_init(dc_req *r, const layout *lay, unsigned pos, uint16_t op);
/* A control request `msg` to server id (any state), its reply kept. */
void dc_req_init_ctl(dc_req *r, uint32_t server_id, uint16_t op, const Depfs__IoRequest *msg);
void dc_req_free_reply(dc_req *r);
/* Append `len` bytes at local offset `local_off` whose memory is `buf`
 * (merging with the previous extent/segment when contiguous). -E2BIG when
 * the request is full (callers size rounds so it never is). */
int dc_req_add(dc_req *r, uint64_t local_off, uint64_t len, void *buf);
/* What a lock is taken for at that server (LockSpec.read_only): to write
 * its units, or only to read them (a stale reading lock leaves nothing in
 * doubt; a write under it makes it a writing one). */
typedef enum dc_lock_mode { DC_LOCK_WRITE, DC_LOCK_READ } dc_lock_mode;
void dc_req_set_lock(dc_req *r, uint64_t first_stripe, uint64_t count, uint64_t owner_client,
                     uint64_t owner_op, dc_lock_mode mode);

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
 * a locked WRITE (the caller redoes the round). Without the capability the
 * requests need (the MDS refused it) none is sent: each fails with that
 * error (-EACCES). A WRITE whose down_servers
 * names a server that is no longer down was planned on a stale picture:
 * not sent, same results. ESTALE from a server behind our epoch, or a read
 * refused by a REBUILDING/RECONSTRUCTING server: DC_ERR_DOWN (the first is
 * marked failed; the second is only treated as down from then on). */
void dc_io_run(depfs_t *fs, uint64_t ino, dc_req *reqs, unsigned nreq);

/* dc_io_run of a round's requests (reqs[p]: layout position p) whose
 * locks were NACKed before: they wait at the servers for the stripes
 * (LockSpec.wait_ms, ioserver/lock_waits.h) instead of being NACKed at
 * once, so the stripes pass from the holder to this round the moment they
 * are released, with no back-off sleep. Waiting while holding locks could
 * deadlock (A holds server 1 and waits at 2, B the other way round), so
 * the round first locks the file's gate alone (the layout's lowest server
 * id not in `down`, a mask of positions; an IO_LOCK to read is added there
 * when the round has no request of its own), and waits there while it
 * holds nothing: every waiting round of a file passes the same gate, so
 * two that want common stripes pass it one after the other. Once it is
 * granted, the others go at once and wait a shorter while: there they
 * meet only rounds that do not wait (first tries, scrubs, recovery: they
 * give back what they hold) or the round that held the gate before,
 * finishing; a cycle between rounds whose clients disagree on the gate
 * (on which servers are down) ends with their shorter waits. A gate that
 * is not granted leaves the others unsent, with result -EAGAIN (a NACK).
 * The caller releases what was granted as ever: the gate's request is one
 * of reqs (active, with a lock). */
void dc_io_run_gated(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t down, dc_req *reqs);

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
 * result 0), without waiting for the replies: each server acts on it
 * before anything this client sends it later (one connection per server,
 * served in order), and a lost one is cleaned up by the lock lease and
 * the recovery module. Others may still see the stripes locked for a
 * moment after this returns; their lock requests back off and retry. */
void dc_io_unlock_granted(depfs_t *fs, uint64_t ino, const dc_req *reqs, unsigned nreq);

/* A READ's result that says the server's stored unit is damaged: a block
 * failed its checksum (-EBADMSG), the strip file was lost (-ENODATA), or
 * the disk failed the read (-EIO). Readers treat the unit as an erasure. */
bool dc_unit_damaged(int result);

/* A WRITE's result that says the server refused it before storing any
 * byte (no lock, an epoch mismatch, a bad request, busy): the unit there is
 * as it was. Any other error may have left it half written. */
bool dc_write_not_applied(int result);

/* The servers at the positions in *down missed a change of file ino:
 * every other server of the layout stores the dirty records (server, ino)
 * (an IO_WRITE without extents naming them), so that their rejoin rebuilds
 * the file. Servers that fail now are added to *down. 0 once every
 * answering server stored them (and at least one did); else an error. */
int dc_record_down(depfs_t *fs, uint64_t ino, const layout *lay, uint32_t *down);

/* Sleep a randomized, growing back-off for lock attempt `attempt` (0-based). */
void dc_lock_backoff(unsigned attempt);

/* The positions a write may go around (write them dirty records instead):
 * servers the cluster itself calls not UP. A server only this client
 * marked failed (two timeouts) while the MDS still calls it UP is one the
 * cluster has not decided about: if it is back already, the dirty records
 * of a write around it come after its rejoin and no rejoin reads them,
 * while other clients read its stale units. So the MDS is asked again
 * (marks and states) until it declares the server down or lifts the mark,
 * for at most DC_WRITE_AROUND_WAIT_MS; then it is written around anyway
 * (a partition between this client and that server only: depfs-recovery
 * demotes a server that is up with dirty records), and those positions go
 * to *around_up: the write is acknowledged only once they settled
 * (dc_wait_missed_settled). */
#define DC_WRITE_AROUND_WAIT_MS 10000u
#define DC_WRITE_AROUND_POLL_MS 100u
uint32_t dc_write_down_mask(depfs_t *fs, const layout *lay, uint32_t *around_up);

/* Positions of the layout named in a dirty record for ino on any server of
 * the layout that answers (IO_DIRTY DIRTY_PROBE; servers the MDS calls DOWN
 * are not asked); *silent (may be NULL): positions asked that did not
 * answer; *refusing (may be NULL): positions whose server said it serves
 * no reads (REBUILDING, RECONSTRUCTING). 0, or the first error of an
 * answering server. */
int dc_dirty_probe(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t *recorded,
                   uint32_t *silent, uint32_t *refusing);

/* A write finished after the cluster changed under it (a server it was
 * planned without came back meanwhile), or one that went around servers
 * the cluster calls UP, left the units of those servers (positions in
 * missed) stale in its stripes, with dirty records on the others; a server
 * that is UP would serve them until depfs-recovery demotes it and rebuilds
 * the file. The write is acknowledged only once
 * every such server is out of service or has no record for ino any more,
 * for at most DC_WRITE_AROUND_WAIT_MS (then -EIO: the data is stored, but
 * a reader might not see it). */
int dc_wait_missed_settled(depfs_t *fs, const layout *lay, uint64_t ino, uint32_t missed);
/* Layout positions whose servers are down now (bit i = position i). */
uint32_t dc_down_mask(depfs_t *fs, const layout *lay);
unsigned dc_popcount32(uint32_t v);

/* Stripes per read/write round for this layout and the frame limits. */
uint64_t dc_round_stripes(const depfs_t *fs, const layout *lay);

#endif
