/* cluster.c - I/O server membership and states (cluster.h). States live in
 * the store under MDS_TAG_SERVER keys so a restarted MDS remembers that a
 * server was down or rebuilding. */
#include "cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_keys.h"

struct mds_cluster {
    kvstore *kv;
    pthread_mutex_t lock; /* guards servers[].state */
    unsigned n_servers;
    mds_server servers[CONFIG_MAX_IOSERVERS];
    unsigned default_n, default_k;
    uint32_t default_su;
};

const char *mds_server_state_name(uint32_t state)
{
    switch (state) {
    case MDS_SERVER_UP: return "up";
    case MDS_SERVER_DOWN: return "down";
    case MDS_SERVER_REBUILDING: return "rebuilding";
    default: return "unknown";
    }
}

static void load_state(mds_cluster *c, mds_server *s)
{
    uint8_t key[MDS_KEY_MAX];
    void *val = NULL;
    size_t vlen = 0;
    if (kv_get(c->kv, key, mds_key_server(key, s->id), &val, &vlen) == 0 && vlen == 4) {
        uint32_t st = mds_get_u32le(val);
        if (st <= MDS_SERVER_STATE_MAX)
            s->state = st;
    }
    free(val);
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
        s->state = MDS_SERVER_UP;
        load_state(c, s);
        if (s->state != MDS_SERVER_UP)
            log_info("ioserver %u (%s) remembered as %s", s->id, s->address,
                     mds_server_state_name(s->state));
    }
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

unsigned mds_cluster_servers(mds_cluster *c, mds_server *out, unsigned max)
{
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->n_servers && i < max; i++)
        out[i] = c->servers[i];
    pthread_mutex_unlock(&c->lock);
    return c->n_servers;
}

int mds_cluster_set_state(mds_cluster *c, uint32_t id, uint32_t state)
{
    uint8_t key[MDS_KEY_MAX], val[4];
    int rc = -ENOENT;

    if (state > MDS_SERVER_STATE_MAX)
        return -EINVAL;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->n_servers; i++) {
        mds_server *s = &c->servers[i];
        if (s->id != id)
            continue;
        mds_put_u32le(val, state);
        rc = kv_put(c->kv, key, mds_key_server(key, id), val, sizeof(val));
        if (rc < 0) {
            rc = -EIO;
            break;
        }
        if (s->state != state)
            log_info("ioserver %u (%s): %s -> %s", id, s->address, mds_server_state_name(s->state),
                     mds_server_state_name(state));
        s->state = state;
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void mds_cluster_default_layout(const mds_cluster *c, unsigned *n, unsigned *k, uint32_t *su)
{
    *n = c->default_n;
    *k = c->default_k;
    *su = c->default_su;
}
