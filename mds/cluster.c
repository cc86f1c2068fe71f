/* cluster.c - I/O server membership, states and the cluster epoch
 * (cluster.h). States live in the store under MDS_TAG_SERVER keys and the
 * epoch under the counter MDS_COUNTER_CLUSTER_EPOCH, so a restarted MDS
 * remembers that a server was down or rebuilding and never reuses an epoch. */
#include "cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "store_keys.h"


struct mds_cluster {
    kvstore *kv;
    pthread_mutex_t lock; /* guards servers[].state/.progress and epoch */
    uint64_t epoch;
    unsigned n_servers;
    mds_server servers[CONFIG_MAX_IOSERVERS];
    unsigned default_n, default_k;
    uint32_t default_su;
};

static void load_state(mds_cluster *c, mds_server *s)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    if (kv_get(c->kv, key, mds_key_server(key, s->id), &val, &vlen) == 0 && vlen == 4) {
        uint32_t st = mds_get_u32le(val);
        if (st <= DEPFS_SERVER_STATE_MAX)
            s->state = st;
    }
    free(val);
}

static uint64_t load_epoch(kvstore *kv)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    uint64_t e = 0;
    if (kv_get(kv, key, mds_key_counter(key, MDS_COUNTER_CLUSTER_EPOCH), &val, &vlen) == 0 &&
        vlen == 8)
        e = mds_get_u64le(val);
    free(val);
    return e;
}

int mds_cluster_open(kvstore *kv, const depfs_config *cfg, mds_cluster **out)
{
    mds_cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->kv = kv;
    pthread_mutex_init(&c->lock, NULL);
    c->n_servers = cfg->n_ioservers < CONFIG_MAX_IOSERVERS ? cfg->n_ioservers : CONFIG_MAX_IOSERVERS;
    for (unsigned i = 0; i < c->n_servers; i++) {
        mds_server *s = &c->servers[i];
        s->id = cfg->ioservers[i].id;
        memcpy(s->address, cfg->ioservers[i].address, sizeof(s->address));
        s->address[sizeof(s->address) - 1] = '\0';
        s->state = DEPFS_SERVER_UP;
        load_state(c, s);
        if (s->state != DEPFS_SERVER_UP)
            log_info("ioserver %u (%s) remembered as %s", s->id, s->address,
                     depfs_state_name(s->state));
    }
    c->epoch = load_epoch(kv);
    if (c->epoch)
        log_info("cluster epoch %llu", (unsigned long long)c->epoch);
    c->default_n = cfg->default_n;
    c->default_k = cfg->default_k;
    c->default_su = cfg->default_su;
    *out = c;
    return 0;
}

void mds_cluster_close(mds_cluster *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

unsigned mds_cluster_servers(mds_cluster *c, mds_server *out, unsigned max, uint64_t *epoch)
{
    uint64_t now_ms = clock_now_ms();
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->n_servers && i < max; i++) {
        out[i] = c->servers[i];
        if (now_ms - out[i].progress.rate_ms > MDS_RATE_STALE_MS)
            out[i].progress.rebuild_rate_bps = 0;
    }
    if (epoch)
        *epoch = c->epoch;
    pthread_mutex_unlock(&c->lock);
    return c->n_servers;
}

uint64_t mds_cluster_epoch(mds_cluster *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t e = c->epoch;
    pthread_mutex_unlock(&c->lock);
    return e;
}

/* The server with that id, or NULL; caller holds the lock. */
static mds_server *find_server(mds_cluster *c, uint32_t id)
{
    for (unsigned i = 0; i < c->n_servers; i++)
        if (c->servers[i].id == id)
            return &c->servers[i];
    return NULL;
}

/* Stores state and the next epoch in one synced batch. */
static int store_change(mds_cluster *c, uint32_t id, uint32_t state, uint64_t epoch)
{
    uint8_t skey[MDS_KEY_MAX], ekey[MDS_KEY_MAX], sval[4], eval[8];
    kv_batch *b = kv_batch_new();
    if (!b)
        return -ENOMEM;
    mds_put_u32le(sval, state);
    mds_put_u64le(eval, epoch);
    kv_batch_put(b, skey, mds_key_server(skey, id), sval, sizeof(sval));
    kv_batch_put(b, ekey, mds_key_counter(ekey, MDS_COUNTER_CLUSTER_EPOCH), eval, sizeof(eval));
    int rc = kv_batch_commit(c->kv, b);
    kv_batch_free(b);
    return rc < 0 ? -EIO : 0;
}

int mds_cluster_set_state(mds_cluster *c, uint32_t id, uint32_t state, uint64_t *epoch)
{
    int rc = 0;
    if (state > DEPFS_SERVER_STATE_MAX)
        return -EINVAL;
    pthread_mutex_lock(&c->lock);
    mds_server *s = find_server(c, id);
    if (!s) {
        rc = -ENOENT;
        goto out;
    }
    if (s->state == state)
        goto out; /* no change, no new epoch */
    if ((rc = store_change(c, id, state, c->epoch + 1)))
        goto out;
    c->epoch++;
    log_info("ioserver %u (%s): %s -> %s, cluster epoch %llu", id, s->address,
             depfs_state_name(s->state), depfs_state_name(state),
             (unsigned long long)c->epoch);
    s->state = state;
    s->state_epoch = c->epoch;
    memset(&s->progress, 0, sizeof(s->progress));
out:
    if (epoch)
        *epoch = c->epoch;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int mds_cluster_set_progress(mds_cluster *c, uint32_t id, const uint64_t *done_bytes,
                             const uint64_t *total_bytes, const uint64_t *degraded_files)
{
    pthread_mutex_lock(&c->lock);
    mds_server *s = find_server(c, id);
    if (s) {
        if (done_bytes)
            s->progress.rebuild_done_bytes = *done_bytes;
        if (total_bytes)
            s->progress.rebuild_total_bytes = *total_bytes;
        if (degraded_files)
            s->progress.degraded_files = *degraded_files;
    }
    pthread_mutex_unlock(&c->lock);
    return s ? 0 : -ENOENT;
}

int mds_cluster_set_rate(mds_cluster *c, uint32_t id, uint64_t rate_bps)
{
    pthread_mutex_lock(&c->lock);
    mds_server *s = find_server(c, id);
    if (s) {
        s->progress.rebuild_rate_bps = rate_bps;
        s->progress.rate_ms = clock_now_ms();
    }
    pthread_mutex_unlock(&c->lock);
    return s ? 0 : -ENOENT;
}

void mds_cluster_default_layout(const mds_cluster *c, unsigned *n, unsigned *k, uint32_t *su)
{
    *n = c->default_n;
    *k = c->default_k;
    *su = c->default_su;
}
