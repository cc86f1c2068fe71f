/* core.h - the libdepfs core (core_*.c; not installed): the mount's state,
 * the MDS connection and calls, the server table with the status vector,
 * the inode table, errors, clocks and codecs. The lowest layer of
 * client/lib: it calls nothing above it (docs/ARCHITECTURE.md); the data
 * path's state of an inode is freed through fs->inode_released.
 * Return convention: 0 or negative errno, as in depfs.h. */
#ifndef DEPFS_CLIENT_CORE_H
#define DEPFS_CLIENT_CORE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "clock.h"
#include "codec.h"
#include "config.h"
#include "depfs.h"
#include "depfs.pb-c.h"
#include "frame.h"
#include "layout.h"
#include "core_handles.h"
#include "core_names_pass.h"
#include "core_pace.h"
#include "core_statahead.h"
#include "rpc.h"
#include "wire_check.h"

/* One I/O server as this client sees it. */
typedef struct dc_server {
    uint32_t id;
    char address[CONFIG_ADDR_MAX];
    pthread_mutex_t lock;     /* guards conn (re)connects */
    rpc_conn *conn;           /* NULL until first use or after a failure */
    int state;                /* DEPFS__SERVER_STATE__* as last told by the MDS */
    _Atomic uint64_t down_until_ms; /* status vector: treated as failed until then (monotonic ms) */
    _Atomic uint64_t failed_ms;  /* when that mark was set (status.c) */
    _Atomic uint64_t noted_until_ms; /* the server itself said it is not UP
                                  * (REBUILDING, RECONSTRUCTING: it refuses
                                  * reads): read around it until then; writes
                                  * go by the MDS state and the mark only */
    _Atomic bool mark_timed_out; /* the mark came from requests timing out (a
                                  * stalled or cut-off server: it may be back
                                  * before the cluster calls it down) */
    _Atomic uint64_t fail_epoch; /* cluster epoch after the failure, from the
                                  * first MDS_CLUSTER sent after the mark
                                  * (DC_FAIL_EPOCH_UNKNOWN until then) */
} dc_server;

/* Per-inode state shared by every open handle of one file in this client. */
typedef struct dc_inode {
    uint64_t ino;
    layout lay;
    pthread_mutex_t lock;     /* guards everything below */
    uint64_t size;            /* this client's view: the MDS's latest size, raised
                               * to written_end while size_dirty */
    bool size_dirty;          /* written here, not yet told to the MDS */
    uint64_t written_end;     /* while size_dirty: the end of the furthest byte
                               * written here since the last commit, what the
                               * commit extends the file to (never the view:
                               * another client may have cut the file since) */
    uint64_t size_gen;        /* bumped on every local change of size or size_dirty:
                               * an MDS size is adopted only if none happened
                               * while the getattr was in flight */
    int64_t mtime_ns;         /* last local write time, sent with the size; 0: no
                               * write since an explicit time was set (the size
                               * commit then leaves the MDS's mtime alone) */
    unsigned refs;            /* open handles */
    struct dc_wb *wb;         /* write-behind state (eng_wb.c) */
    struct dc_ra *ra;         /* read-ahead window and degraded stripe cache (eng_read.c) */
    struct dc_inode *next;    /* hash chain in depfs.inodes */
    bool held;                /* opened: the MDS holds it for this client until
                               * its last close here gives the hold back */
    uint64_t hold_gen;        /* the newest generation of that hold an open
                               * of it here was given (0: none said) */
    bool has_writer;          /* writer is set: a handle wrote here */
    depfs_cred writer;        /* the opener of the handle that wrote last:
                               * depfs_unmount's write-back of a file still
                               * open acts for it, as that handle's flush would */
    /* What the last depfs_open_ino's MDS reply said of the file, for the
     * question the FUSE kernel asks right after that open
     * (depfs_open_attr_take); given out once. */
    bool open_attr_kept;
    struct stat open_attr;
    uint64_t open_attr_ms;    /* dc_now_ms() when kept */
    uint64_t open_dir_gen;    /* fs->dirattr_gen before the open's call */
    uint64_t open_size_gen;   /* size_gen before it */
} dc_inode;

#define DC_INODE_BUCKETS 1024u

/* An I/O capability this client holds (core_caps.c). */
typedef struct dc_cap {
    uint64_t ino;             /* the file; 0: a free slot, or none needed */
    uint32_t rights;          /* AUTH_CAP_READ | AUTH_CAP_WRITE */
    bool open_here;           /* a handle of the file is open in this client:
                               * the entry is never evicted (its hold and
                               * capability are kept until the last close) */
    bool open_for_write;      /* one of those handles was opened for writing
                               * (until the last close): hold renewals say so
                               * (a migrate waits for writers, mds/holds.h) */
    uint64_t expires_s;       /* wall clock */
    uint64_t renew_after_s;   /* a renewal failed: not tried again before */
    uint64_t hold_gen;        /* the newest generation of the MDS's hold the
                               * open and its renewals were given (0: none) */
    uint8_t bytes[AUTH_CAP_BYTES]; /* as the MDS issued it */
} dc_cap;
#define DC_CAPS_SLOTS_MIN 1024u /* the table's first size (a power of two); it
                                 * doubles when a probe window holds only
                                 * files open here, else the entry expiring
                                 * first in the window makes room */
#define DC_CAPS_SLOTS_MAX (1u << 22) /* ~300 MB of table: past it, a file open
                                      * here may lose its entry (logged) */
#define DC_CAPS_PROBE 8u

/* A hold of a file closed here, queued to go back to the MDS
 * (core_releases.c), and how long closes may gather into one batch. */
typedef struct dc_release {
    uint64_t ino;
    uint64_t hold_gen; /* the newest generation this client was given; 0: none */
} dc_release;
#define DC_RELEASE_DELAY_MS 50u

/* A directory's attributes as this client's own change left them
 * (core_dirattr.c); ino 0: an empty slot. */
typedef struct dc_dirattr {
    uint64_t ino;
    int64_t ctime_ns;   /* of the change: the later of two wins */
    uint64_t kept_ms;   /* dc_now_ms() when kept */
    struct stat st;
} dc_dirattr;
#define DC_DIRATTR_SLOTS 64u /* directories changed at once by one client */

struct depfs {
    depfs_config cfg;
    frame_limits limits;
    pthread_mutex_t mds_lock; /* guards mds (re)connects */
    rpc_conn *mds;
    uint64_t client_id;
    rpc_auth_creds mds_creds; /* the cluster key if ours to read, else MUNGE */
    pthread_mutex_t io_creds_lock;
    rpc_auth_creds io_creds;  /* the cluster key, or the MDS's ticket */
    uint64_t ticket_expires_s; /* of io_creds' ticket (0: no ticket) */
    pthread_mutex_t caps_lock;
    dc_cap *caps;             /* I/O capabilities by file (core_caps.c), */
    unsigned caps_slots;      /* in a table of this many entries */
    unsigned nservers;
    dc_server *servers;       /* nservers entries, ordered as in the config */
    unsigned default_n, default_k;
    uint32_t default_su;
    bool ignore_locks;
    _Atomic uint64_t next_op_id;  /* lock owner op ids */
    _Atomic uint64_t alloc_rounds; /* IO_EXTENTS rounds sent to measure a
                                    * file's allocation (eng_extents.c: tests) */
    pthread_mutex_t inodes_lock;
    dc_inode *inodes[DC_INODE_BUCKETS];
    pthread_mutex_t codecs_lock;
    codec *codecs[CODEC_MAX_UNITS + 1][CODEC_MAX_UNITS + 1]; /* [n][k], current version */
    /* core side (client.c) */
    bool default_from_mount;  /* default_n/k/su came from depfs_options: they
                               * beat the cluster default, not a directory's */
    _Atomic uint64_t cluster_refresh_ms; /* last MDS_CLUSTER (server states) */
    _Atomic uint64_t mark_recheck_ms; /* last status-vector recheck (status.c) */
    _Atomic uint64_t cluster_epoch; /* newest cluster epoch the MDS told us;
                                     * stored after the states it goes with */
    /* frees the data path's state of an inode when the last reference
     * goes (the MDS's hold is given back after it, core side); set by
     * depfs_mount, so the core never calls into the layers above it */
    void (*inode_released)(depfs_t *fs, dc_inode *in);
    pthread_mutex_t retired_lock;
    struct dc_retired *retired; /* failed connections, closed after a grace
                                 * period (others may still hold the pointer) */
    /* every rebuild this client runs keeps to one pace (core_pace.h) */
    pthread_mutex_t pace_lock;
    dc_pace pace;
    /* the releaser (core_releases.c): holds of files closed here, queued
     * to be given back to the MDS together */
    pthread_mutex_t releases_lock;
    pthread_cond_t releases_wake;  /* the releaser: a batch begins, is full, or stop */
    pthread_cond_t releases_sent;  /* a batch was sent (releases_in_flight down) */
    dc_release releases[WIRE_MDS_RELEASES_MAX];
    unsigned n_releases;
    unsigned releases_in_flight;   /* batches taken, not yet answered */
    _Atomic uint64_t releases_batches; /* MDS_RELEASE requests sent (tests, logs) */
    bool releases_stop, releases_running;
    pthread_t releaser;
    /* the keeper (core_keeper.c): renews the holds of files open here */
    pthread_mutex_t keeper_lock;
    pthread_cond_t keeper_wake;
    bool keeper_stop, keeper_running;
    pthread_t keeper;
    /* directories' attributes from this client's changes (core_dirattr.c) */
    pthread_mutex_t dirattr_lock;
    _Atomic uint64_t dirattr_gen; /* bumped by every other directory change */
    dc_dirattr dirattr[DC_DIRATTR_SLOTS];
    /* the inode table (core_handles.h): its handle tags kept only for a
     * user proved by MUNGE (handles_on; the cluster key's holders and auth
     * off need none), the kernel's lookups with count_lookups; set at
     * mount, as the MDS credentials are */
    bool handles_on;
    bool count_lookups;       /* depfs_options.count_lookups */
    void (*names_moved)(void *arg, uint64_t ino); /* depfs_options.names_moved */
    void *names_moved_arg;
    dc_handles handles;
    /* with count_lookups: the callers a names refusal lets go on
     * (core_names_pass.h) */
    dc_names_pass names_pass;
    /* directories' entries for lookups (core_statahead.h) */
    dc_statahead statahead;
};

struct depfs_fh {
    depfs_t *fs;
    dc_inode *inode;
    int flags;                /* open flags as given to open/create. O_APPEND is
                               * the data path's job: depfs_write appends at
                               * inode->size (under inode->lock), ignoring off. */
    depfs_cred cred;          /* who opened it: its size updates and truncates
                               * act for them, whichever thread sends them */
    uint64_t wb_err_mark;     /* write-out failures of the inode it was told
                               * of (engines.h dc_wb_flush) */
};

#define DC_NS_PER_SEC 1000000000ll
#define DC_BLOCK_BYTES 512u /* st_blocks unit */

/* ------------------------------------------------------------ core side */
/* Human-readable error for depfs_last_error() (thread-local). */
/* depfs_last_error's text, this thread's, at most DC_ERR_MAX bytes with its
 * NUL (a caller that must keep it across calls that may set another copies
 * that much). */
#define DC_ERR_MAX 512u
void dc_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline uint64_t dc_now_ms(void) { return clock_now_ms(); } /* clock.h */
/* Failed connections: closed once no call can still use them (all: now). */
void dc_retire_conn(depfs_t *fs, rpc_conn *c);
void dc_retired_reap(depfs_t *fs, bool all);

/* One MDS round trip. Returns -reply->err when the MDS refused (the reply
 * is still returned for its message), or a transport error. The caller
 * frees *reply with depfs__mds_reply__free_unpacked(*reply, NULL). Every
 * inode number the request names goes with its handle tag when known,
 * and every tag the reply gives is kept (core_handles.h). */
int dc_mds_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req, Depfs__MdsReply **reply);
/* Inode handles (core_handles.h) of a mount that keeps them: the call
 * whose reply the kernel holds a node for returned attributes a of a name
 * in directory via (its lookup counted with count_lookups, its tag, name
 * generation and names epoch kept with the count, so the clock cannot
 * take it in between); this client's rename moved a into via (its name
 * generation now); a dc_inode of ino came or went. */
void dc_handle_counted(depfs_t *fs, const Depfs__Attr *a, uint64_t via);
/* Whether a request may name directory via as MdsRequest.names_via: its
 * tag is known, or the MDS needs none from this mount. */
bool dc_names_via_ok(depfs_t *fs, uint64_t via);
/* An open of ino through a name the kernel holds (count_lookups): the name
 * generation and names epoch its lookup gave (or this caller's, after a
 * refusal: core_names_pass.h), with the directory it named the file in,
 * into r. Nothing for a mount that does not count lookups. */
void dc_names_epoch_for_open(depfs_t *fs, uint64_t ino, Depfs__MdsRequest *r);
void dc_handle_renamed(depfs_t *fs, const Depfs__Attr *a, uint64_t via);
void dc_handle_pin(depfs_t *fs, uint64_t ino);
void dc_handle_unpin(depfs_t *fs, uint64_t ino);

/* core_ticket.c: MDS_REGISTER's ticket (users proved by MUNGE) taken as
 * the I/O servers' credentials; the credentials for a new I/O server
 * connection (a ticket past half its life renewed first). */
/* Whether this client shows the I/O servers the cluster key (or auth is
 * off): admin-only request flags are open to it (ioserver/authz.c). */
bool dc_holds_cluster_key(const depfs_t *fs);
int dc_ticket_take(depfs_t *fs, const Depfs__MdsReply *rep);
void dc_io_creds(depfs_t *fs, rpc_auth_creds *out);
/* dc_mds_call for a request that may grant a capability or gives a hold
 * back (io_caps_mds_op_binds_client): a ticket holder's carries its ticket
 * (renewed first when due), whose client the MDS makes the capability out
 * to or takes the hold of. */
int dc_mds_call_ticketed(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                         Depfs__MdsReply **reply);

/* core_caps.c: the I/O capabilities of a ticket holder. take: keep the
 * one an MDS reply carries for ino (none: nothing). get: one covering
 * need (AUTH_CAP_*) for ino, renewed or asked of the MDS (MDS_OPEN, which
 * checks the caller's permission) when the one held is not fresh or
 * short of rights; out->ino 0 when this client needs none (the cluster
 * key, auth off, need 0). 0, or -errno (EACCES: the MDS refused).
 * A client that needs none still keeps the MDS's hold on the files it
 * uses (mds/holds.h): take notes the open's, get renews it at half life.
 * release: the last handle of ino here closed: the entry lets go and the
 * hold is queued to go back (dc_release_queue) with the newer of hold_gen
 * and the entry's generation (a later open of ino here, racing that close,
 * keeps the hold its reply made). take's
 * entry stays until release, however many files are open (the table
 * grows). init/destroy: the table, at mount and unmount. */
int dc_caps_init(depfs_t *fs);
void dc_caps_destroy(depfs_t *fs);
void dc_cap_take(depfs_t *fs, uint64_t ino, const Depfs__MdsReply *rep, bool for_write);
int dc_cap_get(depfs_t *fs, uint64_t ino, uint32_t need, dc_cap *out);
void dc_cap_release(depfs_t *fs, uint64_t ino, uint64_t hold_gen);

/* Connection to an I/O server, connecting on demand; NULL when the server
 * is marked failed in the status vector or cannot be reached (then it is
 * marked failed). */
dc_server *dc_server_by_id(depfs_t *fs, uint32_t id);
rpc_conn *dc_server_conn(depfs_t *fs, uint32_t id, bool reading);
/* Timeout/connection error (-errno why): drop the connection and mark the
 * server failed until now + server_down_expiry_ms. */
void dc_server_mark_failed(depfs_t *fs, uint32_t id, int why);
bool dc_server_is_down(depfs_t *fs, uint32_t id);
/* The same for writing to it: a server that only said it does not serve
 * reads (REBUILDING) takes writes, and must get them while the cluster
 * calls it UP (else they would go around it into dirty records after its
 * rejoin's last pass). */
bool dc_server_is_down_write(depfs_t *fs, uint32_t id);
/* Down only by this client's failure mark from timed-out requests while
 * the MDS, as last heard, still calls it UP: the cluster has not decided
 * about it, and it may be back already (a refused connection is a dead
 * process, which cannot serve anything). */
bool dc_server_marked_only(depfs_t *fs, uint32_t id);

/* Inode table: get creates the entry (refs+1) from the layout and size the
 * caller read from the MDS, or takes a ref on the one open here and gives
 * it the view that size makes (as dc_inode_adopt_mds_size, gen from
 * dc_inode_size_gen before the call); put drops a ref and frees at zero
 * (after fs->inode_released). */
dc_inode *dc_inode_get(depfs_t *fs, uint64_t ino, const layout *lay, uint64_t mds_size,
                       uint64_t gen);
/* An open of in (MDS_OPEN or MDS_CREATE reply rep) holds it here: its last
 * close gives the hold back, with the newest generation opens gave it. */
void dc_inode_note_hold(dc_inode *in, const Depfs__MdsReply *rep);
dc_inode *dc_inode_find(depfs_t *fs, uint64_t ino); /* no ref change; NULL if not open */
void dc_inode_put(depfs_t *fs, dc_inode *in);
/* Tell the MDS where this client's writes end (MDS_EXTEND: the file grows
 * to there, never shrinks), if dirty, with the strip files' allocation
 * measured after the writes (alloc_bytes; NULL: not measured, the MDS keeps
 * its figure); the view then takes the size the MDS answers. */
int dc_inode_commit_size(depfs_t *fs, dc_inode *in, const uint64_t *alloc_bytes);
/* Whether the inode has writes the MDS has not been told of. */
bool dc_inode_size_dirty(dc_inode *in);
/* Client view of an open file's size after an MDS answer: the MDS size is
 * authoritative (another client may have grown or truncated the file),
 * raised only to where this client's uncommitted writes end, unless a local
 * size change raced with the call (gen from dc_inode_size_gen before it).
 * No-op for inodes not open here. */
uint64_t dc_inode_size_gen(depfs_t *fs, uint64_t ino);
/* A gen no inode has (the inode was not known before the call: a create
 * that found the file open here keeps the view it had). */
#define DC_SIZE_GEN_UNKNOWN UINT64_MAX
/* An open's attributes (st, from its MDS reply; dir_gen and size_gen read
 * before the call) kept for the question after it; taken once, if at most
 * max_age_ms old and neither gen has moved since: 0, else -ENOENT. */
void dc_inode_open_attr_keep(dc_inode *in, const struct stat *st, uint64_t dir_gen,
                             uint64_t size_gen);
int dc_inode_open_attr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st);
void dc_inode_adopt_mds_size(depfs_t *fs, uint64_t ino, uint64_t gen, uint64_t mds_size);

/* core_dirattr.c: dc_dirattr_gen before an MDS call, then
 * dc_dirattr_after_call with its reply (NULL when the call failed) keeps
 * the parent's attributes a change returned, or forgets those of every
 * directory a call that may change one names. */
uint64_t dc_dirattr_gen(depfs_t *fs);
void dc_dirattr_after_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req,
                           const Depfs__MdsReply *rep, uint64_t gen_before);
/* depfs_dir_attr_take, once its arguments are checked. */
int dc_dirattr_take(depfs_t *fs, uint64_t ino, unsigned max_age_ms, struct stat *st);

/* Codec for (n,k), created once per client and shared. */
const codec *dc_codec(depfs_t *fs, unsigned n, unsigned k, unsigned version);

void dc_layout_from_pb(const Depfs__Layout *pb, layout *out);
void dc_attr_to_stat(const Depfs__Attr *a, struct stat *st);
/* Whether op changes no file, directory or attribute of the namespace. */
bool dc_mds_op_reads_only(Depfs__MdsOp op);
/* st_blocks of a file whose strip files occupy alloc_bytes under a layout
 * of (n, k): the data's share, alloc_bytes x k / n, in 512-byte blocks,
 * rounded up (README "Space accounting"). */
uint64_t dc_alloc_blocks(uint64_t alloc_bytes, unsigned n, unsigned k);
uint64_t dc_next_op_id(depfs_t *fs);

/* --- core side, used only by the core files */
/* Re-read server states and the cluster epoch from the MDS (MDS_CLUSTER). */
int dc_cluster_refresh(depfs_t *fs);
/* The same, handing the reply to the caller (free it) when rep != NULL. */
int dc_cluster_fetch(depfs_t *fs, Depfs__MdsReply **rep);
/* Refresh unless this client's epoch already reached `epoch` (ESTALE from
 * a server that knows a newer epoch). */
int dc_cluster_refresh_to(depfs_t *fs, uint64_t epoch);
/* A server said it is REBUILDING/RECONSTRUCTING: treat it so until the MDS
 * says otherwise (it refuses our reads meanwhile). */
void dc_server_note_state(depfs_t *fs, uint32_t id, int state);
/* Connection even to a server the status vector calls down (the recovery
 * writes to REBUILDING servers); NULL when it cannot be reached. */
rpc_conn *dc_server_conn_any(depfs_t *fs, uint32_t id);
#define DC_CONNECT_PARALLEL_MAX 32u /* handshakes one batch makes at once */
/* A connection a batch of requests is about to need: to server id, as
 * dc_server_conn_any (any_state) or dc_server_conn (reading) makes it. */
typedef struct dc_conn_want {
    uint32_t id;
    bool any_state;
    bool reading;
} dc_conn_want;
/* Makes the connections of want[0..n) that do not exist yet at the same
 * time, each on its own short-lived thread (at most DC_CONNECT_PARALLEL_MAX
 * at once), so a batch's first requests to many servers wait for one
 * handshake rather than one after another. A failure is marked and logged
 * as dc_server_conn does, and the request that needs it finds it so. */
void dc_servers_connect(depfs_t *fs, const dc_conn_want *want, unsigned n);
/* refs+1 on an inode open in this client; NULL when it is not open. */
dc_inode *dc_inode_hold(depfs_t *fs, uint64_t ino);
/* An explicit mtime is being set on ino: writes made here before it no
 * longer decide the file's mtime (cp -a, tar x: write, then utimens). */
void dc_inode_forget_mtime(depfs_t *fs, uint64_t ino);
/* For an inode open here with writes not yet committed: where they end and
 * their mtime (false: none, or not open here). What raises an MDS answer. */
bool dc_inode_local_size(depfs_t *fs, uint64_t ino, uint64_t *size, int64_t *mtime_ns);
/* Unmount: every inode taken out of the table, chained by `next`; each is
 * then freed with dc_inode_free. */
dc_inode *dc_inodes_detach_all(depfs_t *fs);
void dc_inode_free(depfs_t *fs, dc_inode *in);
/* The inode numbers of the files open here, a batch at a time: from the
 * table's bucket *cursor (0 to start) on, whole buckets while they fit in
 * max (the first one cut at max), into out; their count. *cursor moves
 * past them, to DC_INODE_BUCKETS when every bucket was visited. */
size_t dc_inodes_open_list(depfs_t *fs, unsigned *cursor, uint64_t *out, size_t max);
/* Keep the MDS's hold of ino, open here, whether or not a request uses it:
 * its capability or hold renewed once in its second half (core_caps.c). */
void dc_cap_keep(depfs_t *fs, uint64_t ino);
/* The keeper thread (core_keeper.c): every DC_KEEPER_PERIOD_S, dc_cap_keep
 * of every file open here, so an idle handle of a file unlinked meanwhile
 * keeps its data (mds/holds.h). Started by depfs_mount, stopped (and
 * joined) by depfs_unmount before the inode table goes. */
int dc_keeper_start(depfs_t *fs);
void dc_keeper_stop(depfs_t *fs);
/* One round of the keeper, for tests: the count of files it looked at. */
size_t dc_keeper_pass(depfs_t *fs);
/* The releaser (core_releases.c): queue gives the MDS's hold of ino back
 * (the last close here; hold_gen: the newest generation this client was
 * given for it, 0 none) within DC_RELEASE_DELAY_MS, in one MDS_RELEASE
 * with the others queued by then, and unpins ino's handle tag after it
 * (at once when the releaser is not running). Started by depfs_mount;
 * stopped by depfs_unmount after the last inode went, sending what is
 * queued. */
void dc_release_queue(depfs_t *fs, uint64_t ino, uint64_t hold_gen);
int dc_releases_start(depfs_t *fs);
void dc_releases_stop(depfs_t *fs);
/* Attr (+ layout) of a reply as a stat, with this client's uncommitted size
 * and mtime when the inode is open here. */
void dc_reply_to_stat(depfs_t *fs, const Depfs__MdsReply *rep, struct stat *st);
/* The same from an Attr and a layout (NULL: none; only n, k and
 * stripe_unit are read). */
void dc_attr_layout_to_stat(depfs_t *fs, const Depfs__Attr *a, const Depfs__Layout *lay,
                            struct stat *st);
void dc_layout_to_info(const layout *l, depfs_layout_info *out);
/* MDS_GETXATTR: the value's length, copied into value when size > 0
 * (-ERANGE when it does not fit); name not checked. */
ssize_t dc_xattr_get(depfs_t *fs, uint64_t ino, const char *name, void *value, size_t size);
/* MDS_GETATTR; caller frees *rep. */
int dc_getattr_rep(depfs_t *fs, uint64_t ino, Depfs__MdsReply **rep);
/* Who an MDS request acts for: the caller's credentials (cr NULL: this
 * thread's, dc_cred_current) into a request. dc_mds_call adds them to
 * every request that names none. */
void dc_req_cred(Depfs__MdsRequest *req, const depfs_cred *cr, uint32_t groups[DEPFS_MAX_GROUPS]);
/* This thread's credentials: those set by depfs_act_as, else the process's. */
void dc_cred_current(depfs_cred *out);
/* depfs_act_as's state of a thread, saved and restored around work done
 * for another (a handle's flush acts for whoever opened it). */
typedef struct dc_acting {
    bool set;
    depfs_cred cred;
} dc_acting;
void dc_act_set(const depfs_cred *cr); /* NULL: the process's own again */
void dc_act_push(const depfs_cred *cr, dc_acting *saved);
void dc_act_pop(const dc_acting *saved);
/* Status vector against the cluster view (status.c): a failure mark is
 * lifted as soon as the MDS declares the server UP by a state change newer
 * than the failure; a server that stays dead keeps its mark (and costs no
 * timeouts) until server_down_expiry_ms. */
#define DC_FAIL_EPOCH_UNKNOWN UINT64_MAX
/* The mark was just set (caller holds s->lock). */
void dc_status_note_failed(dc_server *s);
/* One server of an MDS_CLUSTER reply (reply epoch `epoch`) sent at sent_ms;
 * true when it lifted the mark (caller holds s->lock). */
bool dc_status_apply(depfs_t *fs, dc_server *s, const Depfs__ServerInfo *si, uint64_t epoch,
                     uint64_t sent_ms);
/* The server is marked failed: ask the MDS again (at most once per
 * DC_MARK_RECHECK_MS per client; the marks and a lifted server's state
 * only, never the client's epoch); true while it stays marked. */
bool dc_status_still_failed(depfs_t *fs, dc_server *s);
/* The same recheck now, whatever the rate limit (a read about to fail for
 * want of servers asks once whether some marked ones are back). */
void dc_status_recheck_now(depfs_t *fs);

/* ------------------------------------------------ TEST ONLY (core_test_hooks.c) */
/* Switches read once per process from the environment; see core_test_hooks.c. */
typedef enum {
    DC_PAUSE_NONE,
    DC_PAUSE_AFTER_LOCK,
    DC_PAUSE_BETWEEN_WRITES,
    DC_PAUSE_BEFORE_DIRTY,
    DC_PAUSE_DEGRADED_LOCKED,
    DC_PAUSE_REBUILD_HELD,
    DC_PAUSE_ORPHAN_WRITE,
    DC_PAUSE_BEFORE_RELEASE
} dc_pause_point;
typedef struct dc_test_hooks {
    bool no_locks;            /* DEPFS_TEST_NO_LOCKS=1: writes take no stripe locks */
    bool write_behind_off;    /* DEPFS_WRITE_BEHIND=0 */
    bool read_ahead_off;      /* DEPFS_READ_AHEAD=0 */
    dc_pause_point pause;     /* DEPFS_TEST_PAUSE=after_lock|...: core_test_hooks.c */
    uint64_t pause_ms;        /* DEPFS_TEST_PAUSE_MS (default: 600 s) */
} dc_test_hooks;
const dc_test_hooks *dc_test_hooks_get(void);
/* At point p: when DEPFS_TEST_PAUSE names it, say so on stderr and sleep. */
void dc_test_pause(dc_pause_point p);

#endif
