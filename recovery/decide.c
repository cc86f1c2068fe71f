/* decide.c - one decision round of depfs-recovery (recovery/README.md):
 * what the probers saw (taken first) against what the MDS says (read
 * second, so a state the MDS reports is never older than the observation
 * it is compared with):
 *
 *   no answer                       -> MDS DOWN, new epoch pushed to the
 *                                      reachable servers; detection time
 *                                      (since its last answer) logged
 *   answers UP, MDS DOWN            -> IO_SET_STATE(REBUILDING) to it first,
 *                                      then MDS REBUILDING, then rejoin
 *   answers UP, MDS UP, but the
 *   survivors' dirty records name it -> the same (a client found it
 *                                      unreachable: false suspicion)
 *   answers REBUILDING              -> MDS REBUILDING, rejoin
 *   answers RECONSTRUCTING          -> MDS RECONSTRUCTING; nothing else
 *                                      (`depfs reconstruct` finishes it)
 *   answers UP, MDS RECONSTRUCTING  -> IO_SET_STATE(RECONSTRUCTING): only a
 *                                      reconstruction may bring it up
 *   an answer asked for before a rejoin of ours of that server ended says
 *   nothing of it since (the rejoin changed its state): it waits for the
 *   next probe, whatever it says. Its epoch cannot date it: a server
 *   learns every other server's changes, so during a burst of rejoins its
 *   epoch passes that of its own UP while its answer is still older.
 *   answers REBUILDING or RECONSTRUCTING while the MDS says UP: an answer
 *   from before the epoch of that UP predates it (a rejoin that ended
 *   between the probe and the round, maybe not ours) and waits for the
 *   next probe; else a rejoin may be between its steps 2 and 4 (MDS UP
 *   before the server): left alone for REC_REJOIN_FINISH_GRACE_MS, then
 *   the state goes to it first (IO_SET_STATE) and to the MDS second, as
 *   for any server the MDS calls UP. A server whose store never saw an
 *   epoch (epoch 0: a fresh data dir) gets no grace, nor one that demoted
 *   itself after a stall (IoReply.stalled).
 *
 * Then: stale locks -> orphan repairs; servers behind the MDS epoch get it;
 * rebuild progress and degraded file counts go to the MDS. */
#include "rec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "depfs.pb-c.h"
#include "fault.h"
#include "log.h"
#include "wire.h"

enum { UP = DEPFS__SERVER_STATE__SERVER_UP,
       DOWN = DEPFS__SERVER_STATE__SERVER_DOWN,
       REBUILDING = DEPFS__SERVER_STATE__SERVER_REBUILDING,
       RECONSTRUCTING = DEPFS__SERVER_STATE__SERVER_RECONSTRUCTING };

/* MDS state change + epoch push. */
static int set_mds(rec_ctx *c, rec_server *s, uint32_t state, const char *why)
{
    uint64_t epoch = 0;
    int rv = rec_mds_set_state(c, s->id, state, &epoch);
    if (rv) {
        log_warn("ioserver %u is %s (%s) but the MDS could not be told: %s; will retry", s->id,
                 depfs_state_name(state), why, strerror(-rv));
        return rv;
    }
    log_info("ioserver %u (%s): %s -> %s (%s), cluster epoch %llu", s->id, s->address,
             s->mds_known ? depfs_state_name(s->mds_state) : "?", depfs_state_name(state), why,
             (unsigned long long)epoch);
    s->mds_state = state;
    s->mds_known = true;
    s->published_valid = false; /* the MDS zeroed its progress */
    unsigned took = rec_push_epoch(c, epoch);
    log_debug("epoch %llu taken by %u of %u servers", (unsigned long long)epoch, took,
              c->nservers);
    return 0;
}

static void mark_down(rec_ctx *c, rec_server *s, const rec_obs *o)
{
    uint64_t now_ms = clock_now_ms();
    if (set_mds(c, s, DOWN, "no answer to heartbeats") != 0)
        return;
    uint64_t bound_ms = c->cfg->heartbeat_period_ms + 2ull * c->cfg->request_timeout_ms;
    if (o->last_ok_ms)
        log_info("ioserver %u down: detected %llu ms after its last answer (bound t_HB + 2*t_T "
                 "= %llu ms)", s->id, (unsigned long long)(now_ms - o->last_ok_ms),
                 (unsigned long long)bound_ms);
    else
        log_info("ioserver %u down: no answer since depfs-recovery started", s->id);
}

/* Takes a server the MDS calls UP out of service: the server first (it
 * stops serving reads at once), then the MDS. The other order would let
 * the MDS call it REBUILDING while it still serves reads: writers that
 * learn the new state write around it, and a reader that has not learned
 * it yet reads its stale units. REBUILDING is then rejoined;
 * RECONSTRUCTING waits for `depfs reconstruct`. */
static void take_out_of_service(rec_ctx *c, rec_server *s, uint32_t state, const char *why)
{
    int rv = rec_io_set_state(c, s, (int)state, 0);
    if (rv) {
        log_warn("ioserver %u: cannot set %s (%s): %s", s->id, depfs_state_name(state), why,
                 strerror(-rv));
        return;
    }
    if (set_mds(c, s, state, why) == 0 && state == REBUILDING)
        rec_rejoin_start(c, s);
}

static void demote(rec_ctx *c, rec_server *s, const char *why)
{
    take_out_of_service(c, s, REBUILDING, why);
}

/* REBUILDING / RECONSTRUCTING reported while the MDS says UP: true while
 * that may be a rejoin finishing elsewhere. */
static bool finishing_grace(rec_server *s, const rec_obs *o, uint64_t now_ms)
{
    if (o->epoch == 0 || o->stalled)
        return false; /* a fresh store, or it demoted itself: no rejoin of ours */
    if (!s->finishing_since_ms)
        s->finishing_since_ms = now_ms;
    if (now_ms - s->finishing_since_ms < REC_REJOIN_FINISH_GRACE_MS)
        return true;
    log_warn("ioserver %u reports %s for %u ms while the MDS says UP: no rejoin is finishing",
             s->id, depfs_state_name(o->state), REC_REJOIN_FINISH_GRACE_MS);
    return false;
}

/* Dirty records naming a server that serves: it lacks writes. Only scans
 * begun after we saw it serve count (older ones may predate a rejoin's last
 * pass); a server never seen out of service has no such rejoin to wait for. */
static void check_false_suspicion(rec_ctx *c, rec_server *s, uint64_t now_ms)
{
    uint64_t distinct = 0, recent = 0;
    if (!s->up_since_ms)
        s->up_since_ms = now_ms;
    uint64_t since_ms = s->seen_out_of_service ? s->up_since_ms : 0;
    if (rec_dirty_summary(c, s, since_ms, &distinct, &recent) == 0 && recent > 0)
        demote(c, s, "dirty records name it: a client could not reach it");
}

static void decide_server(rec_ctx *c, rec_server *s, const rec_obs *o, const rec_mds_server *m)
{
    uint32_t mstate = m->state;
    uint64_t now_ms = clock_now_ms();
    if (o->probes == 0)
        return; /* no heartbeat done yet */
    if (!o->answered) {
        s->up_since_ms = s->finishing_since_ms = 0;
        s->seen_out_of_service = true;
        if (mstate != DOWN)
            mark_down(c, s, o);
        return;
    }
    if (rec_rejoin_running(c, s)) {
        s->seen_out_of_service = true;
        return; /* the rejoin owns its state changes */
    }
    if (o->asked_ms <= rec_rejoin_ended_ms(c, s)) {
        /* asked for before our rejoin of it ended (the rejoin may have
         * ended since this round's snapshot; within the same millisecond
         * counts as before): it tells nothing of the server after the
         * rejoin's changes. The next probe does. */
        log_debug("ioserver %u: its answer (%s) predates the end of our rejoin of it: "
                  "waiting for a newer one", s->id, depfs_state_name(o->state));
        return;
    }
    if (o->state == REBUILDING || o->state == RECONSTRUCTING) {
        const char *why = o->state == REBUILDING ? "it reports rebuilding"
                                                 : "it reports reconstructing";
        s->up_since_ms = 0;
        s->seen_out_of_service = true;
        if (mstate == UP && o->epoch < m->state_epoch) {
            /* the answer predates the MDS's change of it to UP (it had not
             * had that epoch yet): e.g. a rejoin of ours that ended between
             * the probe and this round. The next probe tells (an epoch it
             * missed is pushed below). */
            log_debug("ioserver %u: %s at epoch %llu, before its change to UP at %llu: "
                      "waiting for a newer answer", s->id, why, (unsigned long long)o->epoch,
                      (unsigned long long)m->state_epoch);
            return;
        }
        if (mstate == UP && finishing_grace(s, o, now_ms))
            return;
        s->finishing_since_ms = 0;
        if (mstate == UP) {
            take_out_of_service(c, s, o->state, why);
            return;
        }
        if (mstate != o->state && set_mds(c, s, o->state, why) != 0)
            return;
        if (o->state == REBUILDING)
            rec_rejoin_start(c, s);
        return;
    }
    s->finishing_since_ms = 0;
    if (mstate == UP) {
        check_false_suspicion(c, s, now_ms);
        return;
    }
    s->up_since_ms = 0;
    s->seen_out_of_service = true;
    if (mstate != DOWN) {
        /* the MDS has it out of service but it says UP: ask afresh first */
        uint32_t fresh = UP;
        uint64_t fresh_epoch = 0;
        if (rec_probe_now(c, s, &fresh, &fresh_epoch) != 0 || fresh != UP)
            return; /* the next round decides on the newer answer */
    }
    if (mstate == RECONSTRUCTING) {
        log_warn("ioserver %u serves as UP while the MDS has it RECONSTRUCTING: back to "
                 "reconstructing (run `depfs reconstruct %u`)", s->id, s->id);
        rec_io_set_state(c, s, RECONSTRUCTING, 0);
        return;
    }
    demote(c, s, mstate == DOWN ? "answers again" : "serves while the MDS has it rebuilding");
}

/* Stale locks of every answering server, one repair per (file, owner):
 * the stripes become the union range of what the servers reported. */
static void collect_orphans(rec_ctx *c, const rec_obs *obs)
{
    rec_orphan *v = calloc(REC_ORPHAN_QUEUE_MAX, sizeof(*v));
    size_t n = 0;
    uint64_t self = c->fs ? depfs_client_id(c->fs) : 0;
    /* Our own locks are held by a rejoin or repair of ours while one runs,
     * or left in doubt by a failed repair for its retry (for no longer than
     * REC_SELF_ORPHAN_AGE_MS); otherwise a lock of ours is one a server
     * kept: e.g. restored from an intent whose store reported a failure, or
     * a release lost with a server's crash. */
    bool self_busy = self && rec_jobs_running(c);
    if (!v)
        return;
    for (unsigned i = 0; i < c->nservers; i++) {
        for (size_t j = 0; obs[i].answered && j < obs[i].n_stale; j++) {
            const rec_lock *l = &obs[i].stale[j];
            if (self && l->client == self && l->age_ms < REC_SELF_ORPHAN_AGE_MS &&
                (self_busy || rec_retry_pending(c, l->file_id)))
                continue; /* our own rebuild or repair holding stripes */
            size_t k;
            for (k = 0; k < n; k++)
                if (v[k].file_id == l->file_id && v[k].client == l->client && v[k].op == l->op)
                    break;
            if (k == n) {
                if (n == REC_ORPHAN_QUEUE_MAX)
                    continue;
                v[n++] = (rec_orphan){ .kind = REC_JOB_ORPHAN, .file_id = l->file_id,
                                       .first = l->first,
                                       .count = l->count, .client = l->client, .op = l->op,
                                       .age_ms = l->age_ms };
                continue;
            }
            uint64_t end = v[k].first + v[k].count, lend = l->first + l->count;
            if (l->first < v[k].first)
                v[k].first = l->first;
            v[k].count = (lend > end ? lend : end) - v[k].first;
            if (l->age_ms > v[k].age_ms)
                v[k].age_ms = l->age_ms;
        }
    }
    if (n && rec_fs_ensure(c) == 0)
        for (size_t k = 0; k < n; k++)
            rec_orphan_queue(c, &v[k]);
    free(v);
    rec_orphan_retry_due(c);
}

/* What the servers' background scrubs found and nobody repaired yet: one
 * repair job per range, for the damage repairer (apart from the orphan
 * repairer: rec.h rec_repairer). */
static void collect_damage(rec_ctx *c, const rec_obs *obs)
{
    for (unsigned i = 0; i < c->nservers; i++) {
        for (size_t j = 0; obs[i].answered && j < obs[i].n_damage; j++) {
            const rec_damage *d = &obs[i].damage[j];
            if (rec_fs_ensure(c) != 0)
                return;
            rec_orphan_queue(c, &(rec_orphan){ .kind = REC_JOB_DAMAGE, .server = c->servers[i].id,
                                               .file_id = d->file_id, .first = d->offset,
                                               .count = d->length });
        }
    }
}

/* Degraded file counts and rebuild progress, when they changed. */
static void publish_progress(rec_ctx *c, rec_server *s)
{
    uint64_t distinct = 0, recent = 0;
    if (rec_dirty_summary(c, s, UINT64_MAX, &distinct, &recent) != 0)
        return;
    pthread_mutex_lock(&c->mu);
    uint64_t done = s->rejoin_done_bytes;
    pthread_mutex_unlock(&c->mu);
    if (s->published_valid && s->published_degraded == distinct && s->published_done == done)
        return;
    if (s->logged_degraded != distinct)
        log_info("ioserver %u: %llu degraded files (dirty records on the survivors)", s->id,
                 (unsigned long long)distinct);
    s->logged_degraded = distinct;
    /* a reconstruction's bytes are `depfs reconstruct`'s to report */
    bool ours = s->mds_state != RECONSTRUCTING;
    if (rec_mds_progress(c, s->id, ours ? &done : NULL, distinct) == 0) {
        s->published_valid = true;
        s->published_degraded = distinct;
        s->published_done = done;
    }
}

/* Servers that answer but missed an epoch get it (one call each). */
static void catch_up_epochs(rec_ctx *c, const rec_obs *obs)
{
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        if (!obs[i].answered || obs[i].epoch >= c->mds_epoch || s->mds_state == DOWN)
            continue;
        if (rec_io_set_state(c, s, -1, c->mds_epoch) == 0)
            log_debug("ioserver %u: epoch %llu -> %llu", s->id,
                      (unsigned long long)obs[i].epoch, (unsigned long long)c->mds_epoch);
    }
}

void rec_decide_round(rec_ctx *c)
{
    static bool mds_unreachable;
    rec_mds_server ms[CONFIG_MAX_IOSERVERS];
    unsigned n_ms = 0;
    uint64_t epoch = 0;
    rec_obs *obs = calloc(c->nservers ? c->nservers : 1, sizeof(*obs));
    if (!obs)
        return;
    for (unsigned i = 0; i < c->nservers; i++)
        rec_obs_snapshot(c, &c->servers[i], &obs[i]);
    if (FAULT_POINT(FAULT_DECIDE_LAG))
        clock_sleep_ms(FAULT_DECIDE_LAG_MS);
    int rv = rec_mds_cluster(c, ms, CONFIG_MAX_IOSERVERS, &n_ms, &epoch);
    if (rv) {
        if (!mds_unreachable)
            log_warn("MDS %s unreachable (%s): no state changes until it answers",
                     c->cfg->mds_address, strerror(-rv));
        mds_unreachable = true;
        goto out;
    }
    if (mds_unreachable)
        log_info("MDS %s answers again", c->cfg->mds_address);
    mds_unreachable = false;
    c->mds_epoch = epoch;
    for (unsigned i = 0; i < c->nservers; i++) {
        rec_server *s = &c->servers[i];
        unsigned j;
        for (j = 0; j < n_ms && ms[j].id != s->id; j++)
            ;
        if (j == n_ms)
            continue; /* not in the MDS's config: not ours to judge */
        s->mds_state = ms[j].state;
        s->mds_known = true;
        decide_server(c, s, &obs[i], &ms[j]);
    }
    collect_orphans(c, obs);
    collect_damage(c, obs);
    catch_up_epochs(c, obs);
    for (unsigned i = 0; i < c->nservers; i++)
        if (c->servers[i].mds_known)
            publish_progress(c, &c->servers[i]);
out:
    for (unsigned i = 0; i < c->nservers; i++)
        rec_obs_free(&obs[i]);
    free(obs);
}
