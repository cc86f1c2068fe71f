/* client.c - libdepfs core: mount/unmount, the MDS connection and its
 * calls (reconnect and one retry), the cluster's server table with the
 * client's status vector (lazy I/O server connections, failure marking with
 * expiry; server states and the cluster epoch from the MDS, refreshed on
 * demand), error text for depfs_last_error, clocks, codecs and the small
 * protobuf <-> struct conversions every other file uses.
 *
 * Connections that fail are not freed at once: another thread may still
 * hold the rpc_conn pointer it got from dc_server_conn (the contract hands
 * out bare pointers). They go to a "retired" list and are closed once no
 * call can still be using them (longer than any call may wait), or at
 * unmount. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <assert.h>
#include "clock.h"
#include "internal.h"
#include "label.h"
#include "log.h"

#define DC_ERR_MAX 512u
/* MDS calls: one retry (after a timeout or a reconnect). */
#define DC_MDS_ATTEMPTS 2u
/* Reconnect attempts to a restarting MDS are spaced this far apart. */
#define DC_MDS_RECONNECT_PAUSE_MS 100u
/* A retired connection is closed once this many request timeouts passed
 * (every call on it has given up by then), plus a fixed margin. */
#define DC_RETIRE_GRACE_TIMEOUTS 4u
#define DC_RETIRE_GRACE_EXTRA_MS 10000u
#define DC_NS_PER_S 1000000000ll
#define DC_STAT_BLKSIZE (64u * 1024)
#define DC_STAT_BLOCK_BYTES 512u

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
    ts.tv_sec = (time_t)(ns / DC_NS_PER_S);
    ts.tv_nsec = (long)(ns % DC_NS_PER_S);
    if (ts.tv_nsec < 0) {
        ts.tv_nsec += DC_NS_PER_S;
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
    st->st_blocks = (blkcnt_t)((a->size + DC_STAT_BLOCK_BYTES - 1) / DC_STAT_BLOCK_BYTES);
    st->st_atim = ns_to_ts(a->atime_ns);
    st->st_mtim = ns_to_ts(a->mtime_ns);
    st->st_ctim = ns_to_ts(a->ctime_ns);
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
static void retired_reap(depfs_t *fs, bool all)
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

static void retire_conn(depfs_t *fs, rpc_conn *c)
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

/* ------------------------------------------------------- MDS calls */

static const char *mds_op_name(Depfs__MdsOp op)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&depfs__mds_op__descriptor, (int)op);
    return v ? v->name : "MDS_?";
}

/* The MDS connection, (re)connecting when there is none or when `failed`
 * (the connection the caller saw fail) is still the current one. A
 * restarting MDS is retried for up to one request timeout. */
static int mds_conn_get(depfs_t *fs, rpc_conn *failed, rpc_conn **out)
{
    int rc = 0;
    pthread_mutex_lock(&fs->mds_lock);
    if (fs->mds && (fs->mds == failed || rpc_conn_broken(fs->mds))) {
        log_warn("libdepfs: connection to the MDS %s lost, reconnecting", fs->cfg.mds_address);
        retire_conn(fs, fs->mds);
        fs->mds = NULL;
    }
    uint64_t deadline_ms = dc_now_ms() + fs->cfg.request_timeout_ms;
    while (!fs->mds) {
        rc = rpc_conn_open(fs->cfg.transport, fs->cfg.mds_address, &fs->limits,
                           (int)fs->cfg.connect_timeout_ms, &fs->mds);
        if (rc == 0)
            break;
        fs->mds = NULL;
        if (dc_now_ms() + DC_MDS_RECONNECT_PAUSE_MS >= deadline_ms)
            break;
        clock_sleep_ms(DC_MDS_RECONNECT_PAUSE_MS);
    }
    *out = fs->mds;
    pthread_mutex_unlock(&fs->mds_lock);
    if (!*out) {
        dc_set_error("cannot connect to the MDS at %s: %s", fs->cfg.mds_address, strerror(-rc));
        return rc ? rc : -ECONNREFUSED;
    }
    return 0;
}

int dc_mds_call(depfs_t *fs, Depfs__MdsOp op, const Depfs__MdsRequest *req, Depfs__MdsReply **reply)
{
    assert(fs && req && reply);
    *reply = NULL;
    Depfs__MdsRequest r = *req; /* shallow: only the client id is added */
    if (fs->client_id) {
        r.has_client_id = 1;
        r.client_id = fs->client_id;
    }
    rpc_conn *failed = NULL;
    int rc = -EIO;
    for (unsigned attempt = 0; attempt < DC_MDS_ATTEMPTS; attempt++) {
        rpc_conn *c;
        rc = mds_conn_get(fs, failed, &c);
        if (rc < 0)
            continue;
        ProtobufCMessage *m = NULL;
        rc = rpc_call_msg(c, (uint16_t)op, &r.base, NULL, 0, NULL, 0, (int)fs->cfg.request_timeout_ms,
                          &depfs__mds_reply__descriptor, &m, NULL);
        if (rc == 0) {
            *reply = (Depfs__MdsReply *)m;
            break;
        }
        /* a timeout keeps the connection: the MDS may only be slow */
        if (rpc_err_is_transport(rc) || rpc_conn_broken(c))
            failed = c;
        log_debug("libdepfs: %s attempt %u failed: %s", mds_op_name(op), attempt + 1, strerror(-rc));
    }
    if (rc < 0) {
        dc_set_error("%s: MDS %s: %s", mds_op_name(op), fs->cfg.mds_address, strerror(-rc));
        return rc;
    }
    Depfs__MdsReply *rep = *reply;
    if (rep->err != 0) {
        int err = rep->err > 0 ? rep->err : -rep->err;
        if (rep->message && rep->message[0])
            dc_set_error("%s", rep->message);
        else
            dc_set_error("%s: %s", mds_op_name(op), strerror(err));
        return -err;
    }
    return 0;
}

/* ------------------------------------------------ server table */

dc_server *dc_server_by_id(depfs_t *fs, uint32_t id)
{
    for (unsigned i = 0; i < fs->nservers; i++)
        if (fs->servers[i].id == id)
            return &fs->servers[i];
    return NULL;
}

/* Copy the MDS's view of server states into the table (servers the MDS
 * names but the table lacks are ignored: the table is fixed at mount), then
 * the epoch (never backwards). A server coming back UP loses its local
 * failure mark: the MDS has seen it rejoin (status.c: also when this
 * client never saw it leave, by the epoch of its last state change). */
static void servers_apply_states(depfs_t *fs, const Depfs__MdsReply *rep, uint64_t sent_ms)
{
    for (size_t i = 0; i < rep->n_servers; i++) {
        dc_server *s = dc_server_by_id(fs, rep->servers[i]->id);
        if (!s)
            continue;
        pthread_mutex_lock(&s->lock);
        bool back_up = s->state != DEPFS__SERVER_STATE__SERVER_UP &&
                       rep->servers[i]->state == DEPFS__SERVER_STATE__SERVER_UP;
        s->state = (int)rep->servers[i]->state;
        if (back_up)
            atomic_store(&s->down_until_ms, 0);
        dc_status_apply(fs, s, rep->servers[i],
                        rep->has_cluster_epoch ? rep->cluster_epoch : 0, sent_ms);
        pthread_mutex_unlock(&s->lock);
    }
    if (rep->has_cluster_epoch) {
        uint64_t cur = atomic_load(&fs->cluster_epoch);
        while (cur < rep->cluster_epoch &&
               !atomic_compare_exchange_weak(&fs->cluster_epoch, &cur, rep->cluster_epoch)) {
        }
    }
}

int dc_cluster_fetch(depfs_t *fs, Depfs__MdsReply **out)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    if (out)
        *out = NULL;
    uint64_t sent_ms = dc_now_ms();
    atomic_store(&fs->cluster_refresh_ms, sent_ms);
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rc == 0)
        servers_apply_states(fs, rep, sent_ms);
    if (rc == 0 && out) {
        *out = rep;
        return 0;
    }
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

int dc_cluster_refresh(depfs_t *fs) { return dc_cluster_fetch(fs, NULL); }

int dc_cluster_refresh_to(depfs_t *fs, uint64_t epoch)
{
    if (atomic_load(&fs->cluster_epoch) >= epoch)
        return 0; /* another thread already caught up */
    int rc = dc_cluster_refresh(fs);
    if (rc == 0 && atomic_load(&fs->cluster_epoch) < epoch)
        log_warn("libdepfs: an I/O server knows cluster epoch %llu, the MDS only %llu",
                 (unsigned long long)epoch, (unsigned long long)atomic_load(&fs->cluster_epoch));
    return rc;
}

void dc_server_note_state(depfs_t *fs, uint32_t id, int state)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    bool changed = s->state != state;
    s->state = state;
    pthread_mutex_unlock(&s->lock);
    if (changed)
        log_info("libdepfs: I/O server %u says it is in state %d; reading around it", id, state);
}

/* A server the MDS called down/rebuilding: ask again now and then (at most
 * once per server_down_expiry_ms, by one thread) whether it is back. */
static void maybe_refresh_states(depfs_t *fs)
{
    uint64_t now_ms = dc_now_ms();
    uint64_t last_ms = atomic_load(&fs->cluster_refresh_ms);
    if (now_ms - last_ms < fs->cfg.server_down_expiry_ms)
        return;
    if (!atomic_compare_exchange_strong(&fs->cluster_refresh_ms, &last_ms, now_ms))
        return;
    char saved[DC_ERR_MAX];
    memcpy(saved, dc_err, sizeof saved);
    dc_cluster_refresh(fs);
    memcpy(dc_err, saved, sizeof saved);
}

bool dc_server_is_down(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return true;
    uint64_t until_ms = atomic_load(&s->down_until_ms);
    if (until_ms > dc_now_ms()) {
        if (dc_status_still_failed(fs, s))
            return true;
        until_ms = 0; /* the MDS just declared it up again */
    }
    if (until_ms != 0 && atomic_compare_exchange_strong(&s->down_until_ms, &until_ms, 0)) {
        /* the local failure mark expired: ask the MDS before trying it again */
        char saved[DC_ERR_MAX];
        memcpy(saved, dc_err, sizeof saved);
        dc_cluster_refresh(fs);
        memcpy(dc_err, saved, sizeof saved);
    }
    pthread_mutex_lock(&s->lock);
    int state = s->state;
    pthread_mutex_unlock(&s->lock);
    if (state != DEPFS__SERVER_STATE__SERVER_UP) {
        maybe_refresh_states(fs);
        pthread_mutex_lock(&s->lock);
        state = s->state;
        pthread_mutex_unlock(&s->lock);
    }
    return state != DEPFS__SERVER_STATE__SERVER_UP;
}

static void server_mark_failed_locked(depfs_t *fs, dc_server *s)
{
    /* close the stream at once: what is still queued at a frozen or cut-off
     * server must be dropped there, not acted on when it wakes up */
    rpc_conn_abort(s->conn);
    retire_conn(fs, s->conn);
    s->conn = NULL;
    dc_status_note_failed(s);
    atomic_store(&s->down_until_ms, dc_now_ms() + fs->cfg.server_down_expiry_ms);
}

void dc_server_mark_failed(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    bool was_up = atomic_load(&s->down_until_ms) <= dc_now_ms();
    server_mark_failed_locked(fs, s);
    pthread_mutex_unlock(&s->lock);
    if (was_up)
        log_warn("libdepfs: I/O server %u (%s) marked failed for %u ms", id, s->address,
                 fs->cfg.server_down_expiry_ms);
}

rpc_conn *dc_server_conn(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s) {
        dc_set_error("I/O server %u is not in the cluster", id);
        return NULL;
    }
    if (dc_server_is_down(fs, id)) {
        dc_set_error("I/O server %u (%s) is down", id, s->address);
        return NULL;
    }
    return dc_server_conn_any(fs, id);
}

rpc_conn *dc_server_conn_any(depfs_t *fs, uint32_t id)
{
    dc_server *s = dc_server_by_id(fs, id);
    if (!s) {
        dc_set_error("I/O server %u is not in the cluster", id);
        return NULL;
    }
    retired_reap(fs, false);
    pthread_mutex_lock(&s->lock);
    if (s->conn && rpc_conn_broken(s->conn)) {
        retire_conn(fs, s->conn);
        s->conn = NULL;
    }
    if (!s->conn) {
        int rc = rpc_conn_open(fs->cfg.transport, s->address, &fs->limits,
                               (int)fs->cfg.connect_timeout_ms, &s->conn);
        if (rc < 0) {
            s->conn = NULL;
            server_mark_failed_locked(fs, s);
            dc_set_error("cannot connect to I/O server %u (%s): %s", id, s->address, strerror(-rc));
            log_warn("libdepfs: %s", dc_err);
        }
    }
    rpc_conn *c = s->conn;
    pthread_mutex_unlock(&s->lock);
    return c;
}

/* --------------------------------------------------------- mount */

uint64_t depfs_client_id(const depfs_t *fs) { return fs->client_id; }

static int mount_register(depfs_t *fs)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_REGISTER, &req, &rep);
    if (rc == 0 && (!rep->has_client_id || rep->client_id == 0)) {
        dc_set_error("MDS_REGISTER: the MDS returned no client id");
        rc = -EPROTO;
    }
    if (rc == 0)
        fs->client_id = rep->client_id;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

static int servers_init(depfs_t *fs, const Depfs__MdsReply *rep)
{
    size_t count = rep->n_servers;
    if (count > CONFIG_MAX_IOSERVERS) {
        dc_set_error("MDS_CLUSTER: %zu servers, more than the limit %u", count, CONFIG_MAX_IOSERVERS);
        return -EPROTO;
    }
    fs->servers = calloc(count ? count : 1, sizeof *fs->servers);
    if (!fs->servers)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const Depfs__ServerInfo *si = rep->servers[i];
        dc_server *s = &fs->servers[i];
        s->id = si->id;
        const ioserver_conf *ic = config_ioserver(&fs->cfg, si->id);
        const char *addr = (si->address && si->address[0]) ? si->address : (ic ? ic->address : "");
        snprintf(s->address, sizeof s->address, "%s", addr);
        s->state = (int)si->state;
        pthread_mutex_init(&s->lock, NULL);
        atomic_init(&s->down_until_ms, 0);
        atomic_init(&s->failed_ms, 0);
        atomic_init(&s->fail_epoch, DC_FAIL_EPOCH_UNKNOWN);
        fs->nservers = (unsigned)i + 1;
    }
    return 0;
}

/* The mount's default layout: the cluster's, overridden by the options. */
static int defaults_init(depfs_t *fs, const Depfs__MdsReply *rep, const depfs_options *opt)
{
    if (rep->default_layout) {
        fs->default_n = rep->default_layout->n;
        fs->default_k = rep->default_layout->k;
        fs->default_su = rep->default_layout->stripe_unit;
    } else {
        fs->default_n = fs->cfg.default_n;
        fs->default_k = fs->cfg.default_k;
        fs->default_su = fs->cfg.default_su;
    }
    if (!opt || (!opt->default_n && !opt->default_k && !opt->default_su))
        return 0;
    unsigned n = opt->default_n ? opt->default_n : fs->default_n;
    unsigned k = opt->default_k ? opt->default_k : fs->default_k;
    uint32_t su = opt->default_su ? opt->default_su : fs->default_su;
    char why[256];
    if (k == 0 || k > n || n > LAYOUT_MAX_N) {
        dc_set_error("bad default layout: n=%u k=%u (need 1 <= k <= n <= %u)", n, k, LAYOUT_MAX_N);
        return -EINVAL;
    }
    if (label_check_cluster(n, fs->nservers, why, sizeof why) < 0) {
        dc_set_error("bad default layout: %s", why);
        return -EINVAL;
    }
    if (su < LAYOUT_MIN_SU || su > LAYOUT_MAX_SU || su % LAYOUT_MIN_SU) {
        dc_set_error("bad default stripe unit %u (a multiple of %u up to %u)", su, LAYOUT_MIN_SU,
                     LAYOUT_MAX_SU);
        return -EINVAL;
    }
    fs->default_n = n;
    fs->default_k = k;
    fs->default_su = su;
    fs->default_from_mount = true;
    return 0;
}

static int mount_cluster(depfs_t *fs, const depfs_options *opt)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rc == 0)
        rc = servers_init(fs, rep);
    if (rc == 0)
        rc = defaults_init(fs, rep, opt);
    if (rc == 0 && rep->has_cluster_epoch)
        atomic_store(&fs->cluster_epoch, rep->cluster_epoch);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    atomic_store(&fs->cluster_refresh_ms, dc_now_ms());
    return rc;
}

static depfs_t *fs_alloc(void)
{
    depfs_t *fs = calloc(1, sizeof *fs);
    if (!fs)
        return NULL;
    pthread_mutex_init(&fs->mds_lock, NULL);
    pthread_mutex_init(&fs->inodes_lock, NULL);
    pthread_mutex_init(&fs->codecs_lock, NULL);
    pthread_mutex_init(&fs->retired_lock, NULL);
    atomic_init(&fs->next_op_id, 0);
    atomic_init(&fs->cluster_refresh_ms, 0);
    atomic_init(&fs->cluster_epoch, 0);
    atomic_init(&fs->mark_recheck_ms, 0);
    return fs;
}

static void fs_free(depfs_t *fs)
{
    if (fs->mds)
        rpc_conn_close(fs->mds);
    for (unsigned i = 0; i < fs->nservers; i++) {
        if (fs->servers[i].conn)
            rpc_conn_close(fs->servers[i].conn);
        pthread_mutex_destroy(&fs->servers[i].lock);
    }
    free(fs->servers);
    retired_reap(fs, true);
    for (unsigned n = 0; n <= CODEC_MAX_UNITS; n++)
        for (unsigned k = 0; k <= CODEC_MAX_UNITS; k++)
            if (fs->codecs[n][k])
                codec_free(fs->codecs[n][k]);
    pthread_mutex_destroy(&fs->mds_lock);
    pthread_mutex_destroy(&fs->inodes_lock);
    pthread_mutex_destroy(&fs->codecs_lock);
    pthread_mutex_destroy(&fs->retired_lock);
    free(fs);
}

int depfs_mount(const depfs_options *opt, depfs_t **out)
{
    char err[512];
    *out = NULL;
    depfs_t *fs = fs_alloc();
    if (!fs) {
        dc_set_error("out of memory");
        return -ENOMEM;
    }
    int rc = config_load(opt ? opt->config_path : NULL, &fs->cfg, err, sizeof err);
    if (rc < 0) {
        dc_set_error("config: %s", err);
        goto fail;
    }
    fs->limits.max_header_bytes = fs->cfg.max_header_bytes;
    fs->limits.max_bulk_bytes = fs->cfg.max_bulk_bytes;
    fs->ignore_locks = opt ? opt->ignore_locks : false;
    rc = mount_register(fs);
    if (rc < 0)
        goto fail;
    rc = mount_cluster(fs, opt);
    if (rc < 0)
        goto fail;
    log_info("libdepfs: mounted %s as client %llu (%u I/O servers, default %u@%u@%u)",
             fs->cfg.mds_address, (unsigned long long)fs->client_id, fs->nservers, fs->default_n,
             fs->default_k, fs->default_su);
    *out = fs;
    return 0;
fail:
    fs_free(fs);
    return rc;
}

void depfs_unmount(depfs_t *fs)
{
    if (!fs)
        return;
    dc_inodes_flush_all(fs);
    dc_data_remove_drain(fs); /* background strip removals use fs */
    fs_free(fs);
}
