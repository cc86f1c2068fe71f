/* heartbeat.c - failure detection (thesis 3.2.1): one prober thread per
 * I/O server sends IO_HEARTBEAT every t_HB with timeout t_T and one retry,
 * independently of the others, so many dead or hung servers never delay
 * the detection of another (t_D <= t_HB + 2*t_T). Each answer brings the
 * server's state, epoch and stale locks; every REC_DIRTY_SCAN_EVERY-th
 * also lists its dirty records for every other server. Results go to
 * rec_obs under rec_ctx.mu and wake the main thread. */
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "daemon.h"
#include "depfs.pb-c.h"
#include "log.h"

rpc_conn *rec_conn(rec_ctx *c, rpc_conn **slot, const char *address)
{
    if (*slot && rpc_conn_broken(*slot)) {
        rpc_conn_close(*slot);
        *slot = NULL;
    }
    if (!*slot && rpc_conn_open(c->cfg->transport, address, &c->limits,
                                (int)c->cfg->connect_timeout_ms, &c->creds, slot) != 0) {
        if (rpc_conn_open_error()[0])
            log_warn("%s", rpc_conn_open_error());
        *slot = NULL;
    }
    return *slot;
}

/* The damage a heartbeat reply lists, up to REC_MAX_DAMAGE. */
static size_t take_damage(const Depfs__IoReply *rep, rec_damage *out)
{
    size_t n = 0;
    for (size_t i = 0; i < rep->n_scrub_damage && n < REC_MAX_DAMAGE; i++) {
        const Depfs__ScrubDamage *d = rep->scrub_damage[i];
        out[n++] = (rec_damage){ .file_id = d->file_id, .offset = d->local_offset,
                                 .length = d->length };
    }
    return n;
}

/* One IO_HEARTBEAT with one retry. On success fills state/epoch and, when
 * locks is non-NULL, up to REC_MAX_STALE_LOCKS stale lock entries and the
 * background scrub's findings. */
static int heartbeat(rec_ctx *c, rpc_conn **slot, const char *address, uint32_t *state,
                     uint64_t *epoch, bool *stalled, rec_lock *locks, size_t *n_locks,
                     rec_damage *damage, size_t *n_damage)
{
    Depfs__IoRequest req = DEPFS__IO_REQUEST__INIT;
    int rv = -ETIMEDOUT;
    for (unsigned attempt = 0; attempt < REC_HEARTBEAT_TRIES && !c->stopping; attempt++) {
        rpc_conn *conn = rec_conn(c, slot, address);
        if (!conn) {
            rv = -ECONNREFUSED;
            continue;
        }
        Depfs__IoReply *rep = NULL;
        rv = rpc_call_msg(conn, DEPFS__IO_OP__IO_HEARTBEAT, &req.base, NULL, 0, NULL, 0,
                          (int)c->cfg->request_timeout_ms, &depfs__io_reply__descriptor,
                          (ProtobufCMessage **)&rep, NULL);
        if (rv == 0) {
            *state = rep->has_state ? rep->state : DEPFS__SERVER_STATE__SERVER_UP;
            *epoch = rep->has_cluster_epoch ? rep->cluster_epoch : 0;
            if (stalled)
                *stalled = rep->has_stalled && rep->stalled;
            size_t n = 0;
            for (size_t i = 0; locks && i < rep->n_stale_locks && n < REC_MAX_STALE_LOCKS; i++) {
                const Depfs__LockEntry *e = rep->stale_locks[i];
                if (!e->lock)
                    continue;
                locks[n++] = (rec_lock){ .file_id = e->file_id, .first = e->lock->first_stripe,
                                         .count = e->lock->stripe_count,
                                         .client = e->lock->owner_client,
                                         .op = e->lock->owner_op, .age_ms = e->age_ms };
            }
            if (n_locks)
                *n_locks = n;
            if (damage)
                *n_damage = take_damage(rep, damage);
            depfs__io_reply__free_unpacked(rep, NULL);
            return 0;
        }
        /* a timed out or broken connection: start afresh on the retry */
        rpc_conn_close(*slot);
        *slot = NULL;
    }
    return rv;
}

int rec_probe_now(rec_ctx *c, rec_server *s, uint32_t *state, uint64_t *epoch)
{
    int rv = heartbeat(c, &s->ctl, s->address, state, epoch, NULL, NULL, NULL, NULL, NULL);
    if (rv == 0) { /* newer than the prober's picture */
        pthread_mutex_lock(&c->mu);
        s->obs.state = *state;
        s->obs.epoch = *epoch;
        pthread_mutex_unlock(&c->mu);
    }
    return rv;
}

/* IO_DIRTY listings of every record naming server t, paged. */
static int list_dirty(rec_ctx *c, rec_server *s, const rec_server *t, rec_dirty *out)
{
    uint64_t cursor = 0;
    out->ids = NULL;
    out->n = 0;
    out->truncated = false;
    for (;;) {
        Depfs__IoRequest req = DEPFS__IO_REQUEST__INIT;
        Depfs__IoReply *rep = NULL;
        req.file_id = cursor;
        req.has_local_size = 1;
        req.local_size = t->id;
        rpc_conn *conn = rec_conn(c, &s->conn, s->address);
        if (!conn)
            return -ECONNREFUSED;
        int rv = rpc_call_msg(conn, DEPFS__IO_OP__IO_DIRTY, &req.base, NULL, 0, NULL, 0,
                              (int)c->cfg->request_timeout_ms, &depfs__io_reply__descriptor,
                              (ProtobufCMessage **)&rep, NULL);
        if (rv == 0 && rep->err)
            rv = -rep->err;
        if (rv) {
            if (rep)
                depfs__io_reply__free_unpacked(rep, NULL);
            return rv;
        }
        size_t room = REC_DIRTY_IDS_MAX - out->n, take = rep->n_dirty_files;
        if (take > room) {
            take = room;
            out->truncated = true;
        }
        if (take) {
            uint64_t *v = realloc(out->ids, (out->n + take) * sizeof(*v));
            if (!v) {
                depfs__io_reply__free_unpacked(rep, NULL);
                return -ENOMEM;
            }
            memcpy(v + out->n, rep->dirty_files, take * sizeof(*v));
            out->ids = v;
            out->n += take;
        }
        bool more = rep->has_local_size && rep->local_size > cursor;
        cursor = rep->has_local_size ? rep->local_size : 0;
        depfs__io_reply__free_unpacked(rep, NULL);
        if (!more || out->truncated)
            return 0;
    }
}

static void dirty_free(rec_dirty *d, unsigned n)
{
    for (unsigned i = 0; d && i < n; i++)
        free(d[i].ids);
    free(d);
}

/* s's records for every other server, or NULL when any listing failed. */
static rec_dirty *scan_dirty(rec_ctx *c, rec_server *s)
{
    rec_dirty *d = calloc(c->nservers, sizeof(*d));
    if (!d)
        return NULL;
    for (unsigned j = 0; j < c->nservers; j++) {
        if (j == s->index)
            continue;
        int rv = list_dirty(c, s, &c->servers[j], &d[j]);
        if (rv) {
            log_debug("ioserver %u: dirty listing for %u failed: %s", s->id,
                      c->servers[j].id, strerror(-rv));
            dirty_free(d, c->nservers);
            return NULL;
        }
    }
    return d;
}

static void probe_round(rec_ctx *c, rec_server *s, bool scan)
{
    uint32_t state = 0;
    uint64_t epoch = 0, scan_ms = 0;
    bool stalled = false;
    size_t n_locks = 0, n_damage = 0;
    rec_lock *locks = calloc(REC_MAX_STALE_LOCKS, sizeof(*locks));
    rec_damage damage[REC_MAX_DAMAGE];
    rec_dirty *dirty = NULL;
    uint64_t asked_ms = clock_now_ms();
    int rv = locks ? heartbeat(c, &s->conn, s->address, &state, &epoch, &stalled, locks,
                               &n_locks, damage, &n_damage)
                   : -ENOMEM;
    if (rv == 0 && scan) {
        scan_ms = clock_now_ms();
        dirty = scan_dirty(c, s);
    }
    pthread_mutex_lock(&c->mu);
    rec_obs *o = &s->obs;
    if (o->probes == 0 || o->answered != (rv == 0) || (rv == 0 && o->state != state))
        c->wake = true;
    o->probes++;
    o->answered = rv == 0;
    if (rv == 0) {
        o->state = state;
        o->epoch = epoch;
        o->stalled = stalled;
        o->last_ok_ms = clock_now_ms();
        o->asked_ms = asked_ms;
        free(o->stale);
        o->stale = locks;
        o->n_stale = n_locks;
        locks = NULL;
        memcpy(o->damage, damage, n_damage * sizeof(damage[0]));
        o->n_damage = n_damage;
    } else {
        o->n_stale = 0;
        o->n_damage = 0;
    }
    if (dirty) {
        dirty_free(o->dirty, c->nservers);
        o->dirty = dirty;
        o->dirty_scan_ms = scan_ms;
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    free(locks);
}

void rec_wait_until(rec_ctx *c, uint64_t deadline_ms)
{
    struct timespec ts = { .tv_sec = (time_t)(deadline_ms / CLOCK_MS_PER_S),
                           .tv_nsec = (long)(deadline_ms % CLOCK_MS_PER_S * CLOCK_NS_PER_MS) };
    pthread_mutex_lock(&c->mu);
    while (!c->stopping && clock_now_ms() < deadline_ms)
        if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&c->mu);
}

static void *prober_main(void *arg)
{
    rec_server *s = arg;
    rec_ctx *c = s->ctx;
    uint64_t next_ms = clock_now_ms();
    for (uint64_t n = 0; !c->stopping; n++) {
        probe_round(c, s, c->once || n % REC_DIRTY_SCAN_EVERY == 0);
        if (c->once)
            break;
        next_ms += c->cfg->heartbeat_period_ms;
        uint64_t now_ms = clock_now_ms();
        if (next_ms < now_ms)
            next_ms = now_ms; /* a slow round: go again at once */
        rec_wait_until(c, next_ms);
    }
    return NULL;
}

int rec_probers_start(rec_ctx *c)
{
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        int rc = pthread_create(&s->prober, NULL, prober_main, s);
        if (rc)
            return -rc;
        s->prober_started = true;
    }
    return 0;
}

void rec_obs_snapshot(rec_ctx *c, rec_server *s, rec_obs *out)
{
    pthread_mutex_lock(&c->mu);
    *out = s->obs;
    out->dirty = NULL;
    out->stale = NULL;
    if (s->obs.n_stale) {
        out->stale = malloc(s->obs.n_stale * sizeof(*out->stale));
        if (out->stale)
            memcpy(out->stale, s->obs.stale, s->obs.n_stale * sizeof(*out->stale));
        else
            out->n_stale = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

void rec_obs_free(rec_obs *o)
{
    free(o->stale);
    o->stale = NULL;
    o->n_stale = 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int rec_dirty_summary(rec_ctx *c, const rec_server *t, uint64_t since_ms, uint64_t *distinct,
                      uint64_t *since_count)
{
    size_t total = 0, k = 0;
    *distinct = 0;
    *since_count = 0;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < c->nservers; i++) {
        const rec_obs *o = &c->servers[i].obs;
        if (i != t->index && o->dirty) {
            total += o->dirty[t->index].n;
            if (o->dirty_scan_ms >= since_ms)
                *since_count += o->dirty[t->index].n;
        }
    }
    uint64_t *all = total ? malloc(total * sizeof(*all)) : NULL;
    for (unsigned i = 0; all && i < c->nservers; i++) {
        const rec_obs *o = &c->servers[i].obs;
        if (i == t->index || !o->dirty || o->dirty[t->index].n == 0)
            continue; /* ids may be NULL then: memcpy's arguments must not be */
        memcpy(all + k, o->dirty[t->index].ids, o->dirty[t->index].n * sizeof(*all));
        k += o->dirty[t->index].n;
    }
    pthread_mutex_unlock(&c->mu);
    if (total == 0)
        return 0; /* qsort must not get a NULL base, even for 0 elements */
    if (!all)
        return -ENOMEM;
    assert(k == total);
    qsort(all, total, sizeof(*all), cmp_u64);
    for (size_t i = 0; i < total; i++)
        *distinct += i == 0 || all[i] != all[i - 1];
    free(all);
    return 0;
}

int rec_init(rec_ctx *c, const depfs_config *cfg, bool once)
{
    memset(c, 0, sizeof(*c));
    c->cfg = cfg;
    c->once = once;
    c->limits.max_header_bytes = cfg->max_header_bytes;
    c->limits.max_bulk_bytes = cfg->max_bulk_bytes;
    int rc = daemon_peer_creds(cfg, &c->creds);
    if (rc < 0)
        return rc;
    c->nservers = cfg->n_ioservers;
    c->servers = calloc(cfg->n_ioservers ? cfg->n_ioservers : 1, sizeof(*c->servers));
    if (!c->servers)
        return -ENOMEM;
    clock_cond_init(&c->cond);
    clock_cond_init(&c->repair_cond);
    pthread_mutex_init(&c->mu, NULL);
    for (unsigned i = 0; i < cfg->n_ioservers; i++) {
        rec_server *s = &c->servers[i];
        s->id = cfg->ioservers[i].id;
        s->index = i;
        s->address = cfg->ioservers[i].address;
        s->ctx = c;
    }
    return 0;
}

void rec_fini(rec_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    for (unsigned i = 0; i < c->nservers; i++)
        if (c->servers[i].prober_started)
            pthread_join(c->servers[i].prober, NULL);
    rec_workers_stop(c);
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        if (s->conn)
            rpc_conn_close(s->conn);
        if (s->ctl)
            rpc_conn_close(s->ctl);
        free(s->obs.stale);
        dirty_free(s->obs.dirty, c->nservers);
    }
    if (c->fs)
        depfs_unmount(c->fs);
    pthread_cond_destroy(&c->cond);
    pthread_cond_destroy(&c->repair_cond);
    pthread_mutex_destroy(&c->mu);
    free(c->servers);
    memset(c, 0, sizeof(*c));
}
