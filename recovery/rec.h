/* rec.h - depfs-recovery's shared state and its four parts:
 *
 *   heartbeat.c  one prober thread per I/O server: IO_HEARTBEAT every t_HB
 *                with timeout t_T and one retry (so a crash is seen within
 *                t_D <= t_HB + 2*t_T whatever happens to other servers),
 *                plus a periodic scan of the server's dirty records (each
 *                answer also lists what the server's background scrub found);
 *   control.c    calls the main thread makes: MDS_CLUSTER,
 *                MDS_SET_SERVER_STATE (state or progress), IO_SET_STATE
 *                to one server or an epoch push to every reachable one;
 *   decide.c     one decision round: compares what the probers saw with
 *                what the MDS says and acts (recovery/README.md);
 *   workers.c    rejoin threads (depfs_server_rejoin, one per server at a
 *                time) and two repairers, each with its own queue: one for
 *                orphan locks, one for background-scrub findings;
 *   purge.c      the purger: drains the MDS's purge queue (the strip files
 *                of unlinked files no handle may use), bounded per pass.
 *
 * The daemon keeps no state on disk: everything is re-learnt from the
 * servers and the MDS each round. One daemon runs per cluster; a second is
 * harmless (every step is idempotent) but does the work twice.
 * Return convention: 0 or negative errno. */
#ifndef DEPFS_RECOVERY_REC_H
#define DEPFS_RECOVERY_REC_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "depfs_admin.h"
#include "rpc.h"

#define REC_HEARTBEAT_TRIES 2u       /* one retry: t_D <= t_HB + 2*t_T */
#define REC_MAX_STALE_LOCKS 1024u    /* stale lock entries kept per server */
#define REC_DIRTY_SCAN_EVERY 4u      /* dirty scan every this many heartbeats */
#define REC_DIRTY_IDS_MAX 65536u     /* file ids kept per (survivor, server) */
#define REC_ORPHAN_QUEUE_MAX 1024u   /* repairs waiting, per job kind */
#define REC_RECENT_MAX 64u          /* orphan repairs remembered */
#define REC_REJOIN_RETRY_MS 5000u    /* wait after a failed rejoin */
#define REC_REJOIN_FINISH_GRACE_MS 15000u /* MDS UP but server not yet: a rejoin finishing */
/* Our own locks are the rebuilds' and repairs' at work, or what a failed
 * repair left locked in doubt for its retry (recover_orphan.c), except
 * when one is this old; with no such job running or waiting, a lock of
 * ours is an orphan like anyone's (decide.c collect_orphans). */
#define REC_SELF_ORPHAN_AGE_MS 60000u
#define REC_MAX_DAMAGE 64u            /* background-scrub findings kept per server */
#define REC_DAMAGE_RECHECK_MS 30000u  /* a repaired finding still reported: again after this */
/* The purger: at most REC_PURGE_BATCH files a pass; the next pass after
 * REC_PURGE_BUSY_MS when a pass was full (so at most 640 files/s), else
 * after REC_PURGE_IDLE_MS (a file unlinked and closed goes within about
 * that, plus one pass). */
#define REC_PURGE_BATCH 64u
#define REC_PURGE_BUSY_MS 100u
#define REC_PURGE_IDLE_MS 1000u

/* A stripe lock older than the lease, as a heartbeat reported it. */
typedef struct rec_lock {
    uint64_t file_id, first, count, client, op, age_ms;
} rec_lock;

/* A damaged range a server's background scrub reported (length 0: the
 * strip file is lost). */
typedef struct rec_damage {
    uint64_t file_id, offset, length;
} rec_damage;

/* One survivor's dirty records for one server: ascending file ids. */
typedef struct rec_dirty {
    uint64_t *ids;
    size_t n;
    bool truncated; /* more than REC_DIRTY_IDS_MAX */
} rec_dirty;

/* What a prober last saw of its server (guarded by rec_ctx.mu). */
typedef struct rec_obs {
    uint64_t probes;       /* heartbeats done (0: no result yet) */
    bool answered;         /* the last heartbeat was answered */
    uint32_t state;        /* ServerState the server reported */
    uint64_t epoch;        /* epoch it knows */
    bool stalled;          /* it demoted itself after a stall (ioserver/stall.h) */
    uint64_t last_ok_ms;   /* monotonic time of its last answer */
    uint64_t asked_ms;     /* monotonic time that answer was asked for */
    rec_lock *stale;       /* REC_MAX_STALE_LOCKS entries */
    size_t n_stale;
    rec_damage damage[REC_MAX_DAMAGE]; /* what its background scrub found, unrepaired */
    size_t n_damage;
    rec_dirty *dirty;      /* [nservers]: its records naming each server */
    uint64_t dirty_scan_ms; /* start of the last complete scan (0: none yet) */
} rec_obs;

typedef struct rec_server {
    uint32_t id;
    unsigned index;        /* in rec_ctx.servers */
    const char *address;
    struct rec_ctx *ctx;
    /* prober thread */
    pthread_t prober;
    bool prober_started;
    rpc_conn *conn;        /* the prober's own */
    rec_obs obs;
    /* main thread */
    rpc_conn *ctl;         /* for IO_SET_STATE and fresh probes */
    uint32_t mds_state;    /* as the MDS last said (or we last set) */
    bool mds_known;
    uint64_t up_since_ms;  /* seen UP at the MDS and on the server since */
    bool seen_out_of_service; /* ever seen down/rebuilding by this daemon */
    uint64_t finishing_since_ms; /* MDS UP, server still rebuilding, since */
    uint64_t published_degraded, published_done, logged_degraded;
    bool published_valid;
    /* rejoin worker (guarded by rec_ctx.mu) */
    bool rejoin_running;
    pthread_t rejoin_th;
    bool rejoin_joinable;
    uint64_t rejoin_done_bytes;
    uint64_t rejoin_retry_after_ms;
    uint64_t rejoin_ended_ms; /* monotonic time our last rejoin of it ended (0: none) */
} rec_server;

/* A repair job: an orphan lock (REC_JOB_ORPHAN: stripes [first,
 * first+count) of client/op), or damage a background scrub found
 * (REC_JOB_DAMAGE: bytes [first, first+count) of server's strip file). */
enum { REC_JOB_ORPHAN, REC_JOB_DAMAGE, REC_JOB_KINDS };
typedef struct rec_orphan {
    unsigned kind;
    uint32_t server;
    uint64_t file_id, first, count, client, op, age_ms;
} rec_orphan;

/* The repairer of one job kind: its thread and its queue (guarded by
 * rec_ctx.mu). Each kind has its own because a damage repair waits for the
 * stripe locks it needs, and an orphan's locks are released only by the
 * orphan's repair: in one line, a damage repair of stripes an orphan holds
 * would hold up that orphan's repair, and every writer waiting on it, for
 * as long as the damage repair waits for the lock. */
typedef struct rec_repairer {
    struct rec_ctx *ctx;
    unsigned kind;
    pthread_t th;
    bool started;
    rec_orphan queue[REC_ORPHAN_QUEUE_MAX];
    size_t queue_len;
    bool busy;
    rec_orphan current; /* while busy */
} rec_repairer;

typedef struct rec_ctx {
    const depfs_config *cfg;
    frame_limits limits;
    rpc_auth_creds creds;  /* the cluster key (auth on) */
    unsigned nservers;
    rec_server *servers;
    pthread_mutex_t mu;
    pthread_cond_t cond;   /* probers -> main: a new observation */
    volatile bool stopping;
    bool wake;             /* a prober saw a change: decide now */
    bool once;             /* --once: probers do one heartbeat and exit */
    /* main thread */
    depfs_t *fs;           /* MDS and control calls, rejoin, orphan repair; mounted lazily */
    uint64_t mds_epoch;
    /* repairers, one per job kind (guarded by mu) */
    rec_repairer repairers[REC_JOB_KINDS];
    pthread_cond_t repair_cond;
    /* purger (purge.c): its own client, on its own thread */
    pthread_t purger;
    bool purger_started;
    struct rec_recent {
        rec_orphan o;
        uint64_t until_ms;
        bool retry; /* the repair failed: queue it again at until_ms */
    } recent[REC_RECENT_MAX]; /* orphans not to queue again before until_ms */
} rec_ctx;

/* A server as the MDS reports it. */
typedef struct rec_mds_server {
    uint32_t id;
    uint32_t state;
    uint64_t state_epoch; /* cluster epoch of the MDS's last change of its state */
} rec_mds_server;


/* heartbeat.c */
int rec_init(rec_ctx *c, const depfs_config *cfg, bool once);
void rec_fini(rec_ctx *c); /* stops and joins every thread first */
int rec_probers_start(rec_ctx *c);
/* Copies s's observation; the stale locks into a caller-owned copy freed
 * with rec_obs_free; dirty is left NULL (see rec_dirty_summary). */
void rec_obs_snapshot(rec_ctx *c, rec_server *s, rec_obs *out);
void rec_obs_free(rec_obs *o);
/* Over every other server's last complete dirty scan: *distinct = number of
 * distinct files recorded for server t (a lower bound when truncated);
 * *since_count = records found by scans that started at or after since_ms. */
int rec_dirty_summary(rec_ctx *c, const rec_server *t, uint64_t since_ms, uint64_t *distinct,
                      uint64_t *since_count);
/* Sleeps until the monotonic time deadline_ms or until stopping. */
void rec_wait_until(rec_ctx *c, uint64_t deadline_ms);
/* One heartbeat on the main thread's own connection (fresh state). */
int rec_probe_now(rec_ctx *c, rec_server *s, uint32_t *state, uint64_t *epoch);
rpc_conn *rec_conn(rec_ctx *c, rpc_conn **slot, const char *address);

/* control.c */
/* MDS_CLUSTER: up to max servers into out, *n, *epoch. */
int rec_mds_cluster(rec_ctx *c, rec_mds_server *out, unsigned max, unsigned *n, uint64_t *epoch);
/* MDS_SET_SERVER_STATE; *epoch gets the new epoch. */
int rec_mds_set_state(rec_ctx *c, uint32_t id, uint32_t state, uint64_t *epoch);
/* Progress-only report (no state: never undoes a concurrent state change).
 * done_bytes NULL: leave the rebuild bytes alone (a `depfs reconstruct`
 * reports those of a RECONSTRUCTING server itself). */
int rec_mds_progress(rec_ctx *c, uint32_t id, const uint64_t *done_bytes,
                     uint64_t degraded_files);
/* IO_SET_STATE to one server; state < 0: epoch only; epoch 0: none. */
int rec_io_set_state(rec_ctx *c, rec_server *s, int state, uint64_t epoch);
/* IO_SET_STATE{epoch} to every server whose last heartbeat was answered,
 * all at once; returns how many took it. */
unsigned rec_push_epoch(rec_ctx *c, uint64_t epoch);

/* purge.c: the purger thread; stop sets stopping and joins it (before
 * rec_fini). */
int rec_purger_start(rec_ctx *c);
void rec_purger_stop(rec_ctx *c);

/* decide.c */
void rec_decide_round(rec_ctx *c);

/* workers.c */
int rec_fs_ensure(rec_ctx *c);
/* Starts a rejoin thread for s unless one runs or a retry is not due. */
void rec_rejoin_start(rec_ctx *c, rec_server *s);
bool rec_rejoin_running(rec_ctx *c, rec_server *s);
/* When our last rejoin of s ended, succeeded or not (0: none yet). */
uint64_t rec_rejoin_ended_ms(rec_ctx *c, rec_server *s);
/* Whether any job that takes stripe locks as this daemon's client (a
 * rejoin or a repair) runs now. */
bool rec_jobs_running(rec_ctx *c);
/* Whether a failed orphan repair of file_id waits for its retry (which
 * takes over the stripes that repair left locked in our name). */
bool rec_retry_pending(rec_ctx *c, uint64_t file_id);
/* Queues a repair job for the repairer of its kind, unless the same one is
 * queued or running. */
void rec_orphan_queue(rec_ctx *c, const rec_orphan *o);
/* Queues again the failed repairs whose retry is due. A failed repair
 * leaves the stripes in doubt locked by this daemon, which no heartbeat
 * reports as another's orphan, so the retry is kept here. */
void rec_orphan_retry_due(rec_ctx *c);
int rec_workers_start(rec_ctx *c);
/* Waits until no rejoin or repair runs or is queued (for --once). */
void rec_workers_drain(rec_ctx *c);
void rec_workers_stop(rec_ctx *c);

#endif
