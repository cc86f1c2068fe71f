/* core_util.c - libdepfs core: error text for depfs_last_error, clocks, the
 * small protobuf <-> struct conversions, the codec cache, and connections
 * retired after a failure. Connections that fail are not freed at once:
 * another thread may still hold the rpc_conn pointer it got from
 * dc_server_conn (the contract hands out bare pointers). They go to a
 * "retired" list and are closed once no call can still be using them
 * (longer than any call may wait), or at unmount. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core.h"
#include "label.h"
#include "wire_check.h"
#include "log.h"

/* A retired connection is closed once this many request timeouts passed
 * (every call on it has given up by then), plus a fixed margin. */
#define DC_RETIRE_GRACE_TIMEOUTS 4u
#define DC_RETIRE_GRACE_EXTRA_MS 10000u
#define DC_STAT_BLKSIZE (64u * 1024)

struct dc_retired {
    rpc_conn *conn;
    uint64_t retired_ms;
    struct dc_retired *next;
};

static __thread char dc_err[DC_ERR_MAX];

/* ------------------------------------------------------------- errors */

void dc_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dc_err, sizeof dc_err, fmt, ap);
    va_end(ap);
}

const char *depfs_last_error(void) { return dc_err; }

/* ------------------------------------------------------ conversions */

void dc_layout_from_pb(const Depfs__Layout *pb, layout *out)
{
    memset(out, 0, sizeof *out);
    if (!pb)
        return;
    out->n = pb->n;
    out->k = pb->k;
    out->su = pb->stripe_unit;
    out->version = pb->version;
    out->codec_version = pb->codec_version;
    size_t cnt = pb->n_servers < LAYOUT_MAX_N ? pb->n_servers : LAYOUT_MAX_N;
    for (size_t i = 0; i < cnt; i++)
        out->servers[i] = pb->servers[i];
}

static struct timespec ns_to_ts(int64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / DC_NS_PER_SEC);
    ts.tv_nsec = (long)(ns % DC_NS_PER_SEC);
    if (ts.tv_nsec < 0) {
        ts.tv_nsec += DC_NS_PER_SEC;
        ts.tv_sec--;
    }
    return ts;
}

void dc_attr_to_stat(const Depfs__Attr *a, struct stat *st)
{
    memset(st, 0, sizeof *st);
    if (!a)
        return;
    st->st_ino = (ino_t)a->ino;
    st->st_mode = (mode_t)a->mode;
    st->st_nlink = (nlink_t)a->nlink;
    st->st_uid = (uid_t)a->uid;
    st->st_gid = (gid_t)a->gid;
    st->st_rdev = (dev_t)a->rdev;
    st->st_size = (off_t)a->size;
    st->st_blksize = DC_STAT_BLKSIZE;
    st->st_blocks = (blkcnt_t)((a->size + DC_BLOCK_BYTES - 1) / DC_BLOCK_BYTES);
    st->st_atim = ns_to_ts(a->atime_ns);
    st->st_mtim = ns_to_ts(a->mtime_ns);
    st->st_ctim = ns_to_ts(a->ctime_ns);
}

uint64_t dc_alloc_blocks(uint64_t alloc_bytes, unsigned n, unsigned k)
{
    assert(n > 0 && k > 0 && k <= n && n <= LAYOUT_MAX_N);
    assert(alloc_bytes <= WIRE_ALLOC_BYTES_MAX); /* x k fits: common/wire.c */
    uint64_t data = alloc_bytes * k / n + (alloc_bytes * k % n != 0);
    return data / DC_BLOCK_BYTES + (data % DC_BLOCK_BYTES != 0);
}

uint64_t dc_next_op_id(depfs_t *fs) { return atomic_fetch_add(&fs->next_op_id, 1) + 1; }

const codec *dc_codec(depfs_t *fs, unsigned n, unsigned k, unsigned version)
{
    if (n == 0 || k == 0 || k > n || n > CODEC_MAX_UNITS) {
        dc_set_error("no codec for n=%u k=%u", n, k);
        return NULL;
    }
    if (version != CODEC_VERSION_CURRENT) {
        dc_set_error("unknown codec version %u (this client knows %u)", version,
                     CODEC_VERSION_CURRENT);
        return NULL;
    }
    pthread_mutex_lock(&fs->codecs_lock);
    codec *c = fs->codecs[n][k];
    if (!c) {
        int rc = codec_create(n, k, version, &c);
        if (rc < 0) {
            dc_set_error("cannot create codec %u@%u: %s", n, k, strerror(-rc));
            c = NULL;
        } else {
            fs->codecs[n][k] = c;
        }
    }
    pthread_mutex_unlock(&fs->codecs_lock);
    return c;
}

/* ---------------------------------------------------- retired conns */

static uint64_t retire_grace_ms(const depfs_t *fs)
{
    return (uint64_t)fs->cfg.request_timeout_ms * DC_RETIRE_GRACE_TIMEOUTS + DC_RETIRE_GRACE_EXTRA_MS;
}

/* Close retired connections nobody can still be using (all when `all`). */
void dc_retired_reap(depfs_t *fs, bool all)
{
    struct dc_retired *done = NULL;
    uint64_t now_ms = dc_now_ms();
    pthread_mutex_lock(&fs->retired_lock);
    struct dc_retired **pp = &fs->retired;
    while (*pp) {
        struct dc_retired *r = *pp;
        if (all || now_ms - r->retired_ms > retire_grace_ms(fs)) {
            *pp = r->next;
            r->next = done;
            done = r;
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&fs->retired_lock);
    while (done) {
        struct dc_retired *r = done;
        done = r->next;
        rpc_conn_close(r->conn);
        free(r);
    }
}

void dc_retire_conn(depfs_t *fs, rpc_conn *c)
{
    if (!c)
        return;
    struct dc_retired *r = calloc(1, sizeof *r);
    if (!r) {
        /* Out of memory: leaking the connection is safer than freeing it
         * under another thread's feet. */
        log_err("libdepfs: out of memory retiring a connection (leaked)");
        return;
    }
    r->conn = c;
    r->retired_ms = dc_now_ms();
    pthread_mutex_lock(&fs->retired_lock);
    r->next = fs->retired;
    fs->retired = r;
    pthread_mutex_unlock(&fs->retired_lock);
}


void dc_layout_to_info(const layout *l, depfs_layout_info *out)
{
    memset(out, 0, sizeof *out);
    out->n = l->n;
    out->k = l->k;
    out->stripe_unit = l->su;
    out->version = l->version;
    out->codec_version = l->codec_version;
    for (unsigned i = 0; i < l->n && i < DEPFS_MAX_SERVERS_PER_FILE && i < LAYOUT_MAX_N; i++)
        out->servers[i] = l->servers[i];
}

uint64_t depfs_client_id(const depfs_t *fs) { return fs->client_id; }

bool dc_mds_op_reads_only(Depfs__MdsOp op)
{
    switch (op) {
    case DEPFS__MDS_OP__MDS_REGISTER:
    case DEPFS__MDS_OP__MDS_LOOKUP:
    case DEPFS__MDS_OP__MDS_GETATTR:
    case DEPFS__MDS_OP__MDS_READDIR:
    case DEPFS__MDS_OP__MDS_READLINK:
    case DEPFS__MDS_OP__MDS_STATFS:
    case DEPFS__MDS_OP__MDS_GETXATTR:
    case DEPFS__MDS_OP__MDS_LISTXATTR:
    case DEPFS__MDS_OP__MDS_CLUSTER:
    case DEPFS__MDS_OP__MDS_SET_SERVER_STATE: /* servers' states, not files' */
    case DEPFS__MDS_OP__MDS_PURGE_LIST:
        return true;
    default:
        return false;
    }
}
