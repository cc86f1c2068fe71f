/* workers.c - the slow work of depfs-recovery, off the decision thread so
 * heartbeats and decisions go on meanwhile: one rejoin thread per server
 * being rejoined (depfs_server_rejoin, at most one per server at a time)
 * and two repairer threads, each working through its own queue: one of
 * orphan locks (depfs_repair_orphan_lock), one of damage the servers'
 * background scrubs found (depfs_repair_strip_range; why apart: rec.h
 * rec_repairer). All use the daemon's one libdepfs client, mounted with
 * ignore_locks = false (the library takes the locks it needs). */
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

int rec_fs_ensure(rec_ctx *c)
{
    static bool warned;
    if (c->fs)
        return 0;
    depfs_options o = { .config_path = c->cfg->path, .ignore_locks = false };
    int rv = depfs_mount(&o, &c->fs);
    if (rv) {
        c->fs = NULL;
        if (!warned)
            log_warn("cannot start the recovery client: %s (%s); will retry", strerror(-rv),
                     depfs_last_error());
        warned = true;
        return rv;
    }
    warned = false;
    log_info("recovery client %" PRIu64 " mounted", depfs_client_id(c->fs));
    return 0;
}

/* ----------------------------------------------------------------- rejoin */
static int rejoin_progress(void *arg, uint64_t bytes_done)
{
    rec_server *s = arg;
    pthread_mutex_lock(&s->ctx->mu);
    s->rejoin_done_bytes = bytes_done;
    pthread_mutex_unlock(&s->ctx->mu);
    return s->ctx->stopping ? 1 : 0; /* stopping: -ECANCELED */
}

static void *rejoin_main(void *arg)
{
    rec_server *s = arg;
    rec_ctx *c = s->ctx;
    uint64_t t0_ms = clock_now_ms();
    log_info("ioserver %u: rejoin started", s->id);
    int rv = depfs_server_rejoin(c->fs, s->id, rejoin_progress, s);
    uint64_t took_ms = clock_now_ms() - t0_ms;
    pthread_mutex_lock(&c->mu);
    uint64_t done = s->rejoin_done_bytes;
    if (rv)
        log_warn("ioserver %u: rejoin failed after %" PRIu64 " ms: %s (%s); retry in %u ms",
                 s->id, took_ms, strerror(-rv), depfs_last_error(), REC_REJOIN_RETRY_MS);
    else
        log_info("ioserver %u: rejoined (UP) in %" PRIu64 " ms, %" PRIu64 " bytes rebuilt",
                 s->id, took_ms, done);
    s->rejoin_retry_after_ms = rv ? clock_now_ms() + REC_REJOIN_RETRY_MS : 0;
    s->rejoin_ended_ms = clock_now_ms();
    s->rejoin_running = false;
    c->wake = true;
    pthread_cond_broadcast(&c->cond);
    pthread_cond_broadcast(&c->repair_cond); /* rec_workers_drain */
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

bool rec_rejoin_running(rec_ctx *c, rec_server *s)
{
    pthread_mutex_lock(&c->mu);
    bool r = s->rejoin_running;
    pthread_mutex_unlock(&c->mu);
    return r;
}

uint64_t rec_rejoin_ended_ms(rec_ctx *c, rec_server *s)
{
    pthread_mutex_lock(&c->mu);
    uint64_t t = s->rejoin_ended_ms;
    pthread_mutex_unlock(&c->mu);
    return t;
}

bool rec_jobs_running(rec_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    bool r = false;
    for (unsigned k = 0; k < REC_JOB_KINDS && !r; k++)
        r = c->repairers[k].busy;
    for (unsigned i = 0; i < c->nservers && !r; i++)
        r = c->servers[i].rejoin_running;
    pthread_mutex_unlock(&c->mu);
    return r;
}

bool rec_retry_pending(rec_ctx *c, uint64_t file_id)
{
    bool r = false;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < REC_RECENT_MAX && !r; i++)
        r = c->recent[i].retry && c->recent[i].o.kind == REC_JOB_ORPHAN &&
            c->recent[i].o.file_id == file_id;
    pthread_mutex_unlock(&c->mu);
    return r;
}

void rec_rejoin_start(rec_ctx *c, rec_server *s)
{
    if (c->stopping || rec_fs_ensure(c) != 0)
        return;
    pthread_mutex_lock(&c->mu);
    if (s->rejoin_running || clock_now_ms() < s->rejoin_retry_after_ms) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    pthread_mutex_unlock(&c->mu);
    if (s->rejoin_joinable) /* the previous one has finished */
        pthread_join(s->rejoin_th, NULL);
    s->rejoin_joinable = false;
    pthread_mutex_lock(&c->mu);
    s->rejoin_running = true;
    s->rejoin_done_bytes = 0;
    pthread_mutex_unlock(&c->mu);
    int rc = pthread_create(&s->rejoin_th, NULL, rejoin_main, s);
    if (rc) {
        log_warn("ioserver %u: cannot start a rejoin thread: %s", s->id, strerror(rc));
        pthread_mutex_lock(&c->mu);
        s->rejoin_running = false;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    s->rejoin_joinable = true;
}

/* ----------------------------------------------------------- orphan locks */
static bool same_orphan(const rec_orphan *a, const rec_orphan *b)
{
    if (a->kind != b->kind || a->file_id != b->file_id)
        return false;
    if (a->kind == REC_JOB_DAMAGE)
        return a->server == b->server && a->first == b->first && a->count == b->count;
    return a->client == b->client && a->op == b->op;
}

/* Caller holds mu. */
static bool recently_handled(rec_ctx *c, const rec_orphan *o, uint64_t now_ms)
{
    for (unsigned i = 0; i < REC_RECENT_MAX; i++)
        if (c->recent[i].until_ms > now_ms && same_orphan(&c->recent[i].o, o))
            return true;
    return false;
}

/* Caller holds mu. */
static void remember(rec_ctx *c, const rec_orphan *o, uint64_t until_ms, bool retry)
{
    unsigned oldest = 0;
    for (unsigned i = 0; i < REC_RECENT_MAX; i++) {
        if (same_orphan(&c->recent[i].o, o) || c->recent[i].until_ms == 0) {
            oldest = i;
            break;
        }
        if (c->recent[i].until_ms < c->recent[oldest].until_ms)
            oldest = i;
    }
    c->recent[oldest] = (struct rec_recent){ .o = *o, .until_ms = until_ms, .retry = retry };
}

/* Whether o is being repaired now. Caller holds mu. */
static bool repairing_now(rec_ctx *c, const rec_orphan *o)
{
    const rec_repairer *w = &c->repairers[o->kind];
    return w->busy && same_orphan(&w->current, o);
}

/* Caller holds mu. */
static void queue_locked(rec_ctx *c, const rec_orphan *o)
{
    rec_repairer *w = &c->repairers[o->kind];
    for (size_t i = 0; i < w->queue_len; i++)
        if (same_orphan(&w->queue[i], o))
            return;
    if (w->queue_len == REC_ORPHAN_QUEUE_MAX) {
        log_warn("%s repair queue full; file %" PRIu64 " waits for a later heartbeat",
                 o->kind == REC_JOB_ORPHAN ? "orphan lock" : "damage", o->file_id);
        return;
    }
    w->queue[w->queue_len++] = *o;
    pthread_cond_broadcast(&c->repair_cond);
}

void rec_orphan_queue(rec_ctx *c, const rec_orphan *o)
{
    assert(o->kind < REC_JOB_KINDS);
    pthread_mutex_lock(&c->mu);
    if (!repairing_now(c, o) && !recently_handled(c, o, clock_now_ms()))
        queue_locked(c, o);
    pthread_mutex_unlock(&c->mu);
}

void rec_orphan_retry_due(rec_ctx *c)
{
    uint64_t now_ms = clock_now_ms();
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < REC_RECENT_MAX; i++) {
        struct rec_recent *r = &c->recent[i];
        if (!r->retry || r->until_ms > now_ms)
            continue;
        r->retry = false;
        if (!repairing_now(c, &r->o))
            queue_locked(c, &r->o);
    }
    pthread_mutex_unlock(&c->mu);
}

/* A background scrub's finding: rebuild those stripes from the other
 * units. Done or not, the same report is not acted on again before
 * REC_DAMAGE_RECHECK_MS (the server drops it once a write covers it, or
 * when it reads fine at its next pass); a failure is retried then. */
static void repair_damage(rec_ctx *c, const rec_orphan *o)
{
    depfs_scrub_report rep;
    int rv = depfs_repair_strip_range(c->fs, o->file_id, o->server, o->first, o->count, &rep);
    if (rv == 0 || rv == -ENOENT)
        log_info("server %u's background scrub: file %" PRIu64 " bytes [%" PRIu64 ",%" PRIu64
                 ") of its strip: %" PRIu64 " stripes checked, %" PRIu64 " units rebuilt%s",
                 o->server, o->file_id, o->first, o->first + o->count, rep.stripes_checked,
                 rep.units_repaired, rv ? " (the file is gone)" : "");
    else
        log_warn("server %u's background scrub: file %" PRIu64 " bytes [%" PRIu64 ",%" PRIu64
                 "): repair failed: %s (%s); retry in %u ms", o->server, o->file_id, o->first,
                 o->first + o->count, strerror(-rv), depfs_last_error(), REC_DAMAGE_RECHECK_MS);
    pthread_mutex_lock(&c->mu);
    remember(c, o, clock_now_ms() + REC_DAMAGE_RECHECK_MS, rv != 0 && rv != -ENOENT);
    pthread_mutex_unlock(&c->mu);
}

static void repair_one(rec_ctx *c, const rec_orphan *o)
{
    if (o->kind == REC_JOB_DAMAGE) {
        repair_damage(c, o);
        return;
    }
    uint64_t t0_ms = clock_now_ms();
    int rv = depfs_repair_orphan_lock(c->fs, o->file_id, o->first, o->count, o->client, o->op);
    uint64_t took_ms = clock_now_ms() - t0_ms;
    uint64_t until_ms;
    if (rv == 0 || rv == -ENOENT) {
        log_info("orphan lock of client %" PRIu64 " op %" PRIu64 " on file %" PRIu64
                 " stripes [%" PRIu64 ",%" PRIu64 ") repaired in %" PRIu64
                 " ms (held >= %" PRIu64 " ms when reported)%s", o->client, o->op, o->file_id,
                 o->first, o->first + o->count, took_ms, o->age_ms,
                 rv ? "; the file is gone" : "");
        /* a heartbeat taken before the release may still report it */
        until_ms = clock_now_ms() + 2ull * c->cfg->heartbeat_period_ms + c->cfg->request_timeout_ms;
    } else {
        log_warn("orphan lock of client %" PRIu64 " op %" PRIu64 " on file %" PRIu64
                 " stripes [%" PRIu64 ",%" PRIu64 "): repair failed after %" PRIu64
                 " ms: %s (%s); retry in %u ms", o->client, o->op, o->file_id, o->first,
                 o->first + o->count, took_ms, strerror(-rv), depfs_last_error(),
                 REC_REJOIN_RETRY_MS);
        until_ms = clock_now_ms() + REC_REJOIN_RETRY_MS;
    }
    pthread_mutex_lock(&c->mu);
    remember(c, o, until_ms, rv != 0 && rv != -ENOENT);
    pthread_mutex_unlock(&c->mu);
}

/* One repairer: its queue's jobs in order. */
static void *repairer_main(void *arg)
{
    rec_repairer *w = arg;
    rec_ctx *c = w->ctx;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stopping && w->queue_len == 0)
            pthread_cond_wait(&c->repair_cond, &c->mu);
        if (c->stopping)
            break;
        w->current = w->queue[0];
        memmove(w->queue, w->queue + 1, --w->queue_len * sizeof(w->queue[0]));
        w->busy = true;
        pthread_mutex_unlock(&c->mu);
        repair_one(c, &w->current);
        pthread_mutex_lock(&c->mu);
        w->busy = false;
        pthread_cond_broadcast(&c->repair_cond);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int rec_workers_start(rec_ctx *c)
{
    for (unsigned k = 0; k < REC_JOB_KINDS; k++) {
        rec_repairer *w = &c->repairers[k];
        w->ctx = c;
        w->kind = k;
        int rc = pthread_create(&w->th, NULL, repairer_main, w);
        if (rc)
            return -rc; /* rec_workers_stop joins those started */
        w->started = true;
    }
    return 0;
}

/* Whether any repairer is at work or has work queued. Caller holds mu. */
static bool repairs_pending(rec_ctx *c)
{
    for (unsigned k = 0; k < REC_JOB_KINDS; k++)
        if (c->repairers[k].busy || c->repairers[k].queue_len)
            return true;
    return false;
}

void rec_workers_drain(rec_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    for (;;) {
        bool rejoining = false;
        for (unsigned i = 0; i < c->nservers; i++)
            rejoining |= c->servers[i].rejoin_running;
        if (!rejoining && !repairs_pending(c))
            break;
        struct timespec ts = clock_deadline_after_ms(CLOCK_MS_PER_S);
        pthread_cond_timedwait(&c->repair_cond, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
}

void rec_workers_stop(rec_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->repair_cond);
    pthread_mutex_unlock(&c->mu);
    for (unsigned k = 0; k < REC_JOB_KINDS; k++) {
        rec_repairer *w = &c->repairers[k];
        if (w->started)
            pthread_join(w->th, NULL);
        w->started = false;
    }
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        if (s->rejoin_joinable)
            pthread_join(s->rejoin_th, NULL);
        s->rejoin_joinable = false;
    }
}
